"""The poller's sweeper, run by every completion check: no file waits on a dead worker.

- a claim whose lease expired (its worker died or froze): if the verified object is already
  at its deterministic key (HEAD: the sink's sha256 metadata and the size match the job), the
  job is completed, conditional on that same expired claim; otherwise it is requeued
  (conditional too) and sent again;
- a job `available` and untouched for longer than the resend bound (its message was lost,
  dead-lettered, or hidden by a receive of a process that died): it is sent again, its
  StatusUpdatedAt touched so the next send waits another bound; unless the queue shows at
  least as many visible messages as there are such jobs (a backlog: they are waiting in it).
Delivery is at-least-once: a copy that meets a live claim or a finished job does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe import metrics
from dlpipe.adapters.destination import already_published, destination_key
from dlpipe.domain.clock import Clock
from dlpipe.domain.download_errors import InvalidJobError
from dlpipe.domain.errors import LeaseLostError, RequeueRefusedError
from dlpipe.domain.model import FileJob, Verified
from dlpipe.domain.rules import SweepAction, sweep_action
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.ports import JobSender, JobStore

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = get_logger(component="orchestrator")
PublishedCheck = Callable[[FileJob], "tuple[str, Verified] | None"]


def published_check(s3: S3Client, bucket: str) -> PublishedCheck:
    """(key, verified object) when a job's file is already published at its key, else None."""

    def check(job: FileJob) -> tuple[str, Verified] | None:
        try:
            key = destination_key(job)
        except InvalidJobError:
            return None
        verified = already_published(s3, bucket, key, job)
        return None if verified is None else (key, verified)

    return check


@dataclass
class Sweeper:
    """Takes back expired claims and re-sends idle jobs of one batch."""

    jobs: JobStore
    queue: JobSender
    clock: Clock
    requeue: bool
    resend_after_seconds: int
    published: PublishedCheck | None = None

    def sweep(self, batch_id: str, pending_jobs: Iterable[FileJob]) -> set[str]:
        """Act on the batch's pending jobs; the FileIDs it completed (StuckJobs, `batch.swept`)."""
        now_ms = self.clock.now_ms()
        actions = [(j, sweep_action(j, now_ms, self.resend_after_seconds)) for j in pending_jobs]
        stuck = [j for j, a in actions if a is SweepAction.TAKE_BACK]
        idle = [j for j, a in actions if a is SweepAction.RESEND]
        metrics.emit({"StuckJobs": (len(stuck), metrics.COUNT)}, BatchID=batch_id)
        if not self.requeue or not (stuck or idle):
            return set()
        backlog = self._backlog() if idle else 0
        if backlog >= len(idle):
            idle = []  # as many visible messages as idle jobs: they are waiting, not lost
        finished = {j.file_id for j in stuck if self._finish_published(j)}
        # Routed by size (the large-file queue), like every other send.
        to_send = [j for j in [*stuck, *idle] if j.file_id not in finished and self._requeue(j)]
        self.queue.send_jobs(to_send)
        log.warning(
            "batch.swept",
            batch_id=batch_id,
            stuck=len(stuck),
            idle=len(idle),
            backlog=backlog,
            completed=len(finished),
            requeued=len(to_send),
        )
        return finished

    def _finish_published(self, job: FileJob) -> bool:
        found = self.published(job) if self.published and job.lease_owner else None
        if found is None or job.lease_owner is None:
            return False
        key, verified = found
        try:
            self.jobs.complete_abandoned(
                job.file_id,
                job.lease_owner,
                byte_count=verified.byte_count,
                sha256=verified.sha256,
                destination_key=key,
            )
        except LeaseLostError:
            return False  # renewed, completed or taken over meanwhile: not ours to finish
        log.info("job.completed_by_sweeper", file_id=job.file_id, destination_key=key)
        return True

    def _backlog(self) -> int:
        try:
            return self.queue.depth()
        except (ClientError, BotoCoreError) as exc:
            log.warning("queue.depth_failed", error_type=type(exc).__name__)
            return 0  # not knowing costs only duplicate messages

    def _requeue(self, job: FileJob) -> bool:
        try:
            # Conditional: a worker that renewed or finished meanwhile keeps its job.
            self.jobs.requeue(job.file_id)
        except RequeueRefusedError:
            return False
        return True

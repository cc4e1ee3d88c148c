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

Its candidates come from StatusIndex (`stale_jobs`), never from the batch's whole pending set:
`downloading` jobs whose StatusUpdatedAt is older than one lease (a claim sets StatusUpdatedAt
and a lease that long, so a younger claim cannot have expired; a fence extends the lease
without moving StatusUpdatedAt, so each candidate's lease is checked on the job fetched), and
`available` ones older than the resend bound. A worker taking a shorter lease than the
poller's `lease_seconds` has its dead claim taken back up to the difference later.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from dlpipe import metrics
from dlpipe.domain.clock import Clock
from dlpipe.domain.errors import (
    AwsRequestError,
    LeaseLostError,
    QueueSendError,
    RequeueRefusedError,
    UnreadableHandler,
)
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.rules import SweepAction, idle_cut_ms, sweep_action
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.sweep_ports import PublishedCheck, SweepJobs, SweepQueue

log = get_logger(component="orchestrator")

# Jobs acted on at once: the sweeper holds at most this many, whatever the day's size.
SWEEP_CHUNK = 1000


def stale_jobs(
    jobs: SweepJobs,
    batch_id: str,
    now_ms: int,
    *,
    lease_seconds: int | None,
    resend_after_seconds: int,
    on_unreadable: UnreadableHandler | None = None,
) -> Iterator[FileJob]:
    """The sweeper's candidates in `batch_id`: claims older than one lease (`lease_seconds`;
    None: every claim made before now), then available jobs older than the resend bound."""
    claimed_before = now_ms - (lease_seconds or 0) * 1000
    yield from jobs.stale_of_batch(
        batch_id, JobStatus.DOWNLOADING, older_than_ms=claimed_before, on_unreadable=on_unreadable
    )
    yield from jobs.stale_of_batch(
        batch_id,
        JobStatus.AVAILABLE,
        older_than_ms=idle_cut_ms(now_ms, resend_after_seconds),
        on_unreadable=on_unreadable,
    )


@dataclass
class _Pass:
    """What one sweep saw and did."""

    stuck: int = 0
    idle: int = 0
    completed: int = 0
    requeued: int = 0
    backlog: int = 0
    idle_kept: list[FileJob] = field(default_factory=list)
    idle_overflow: bool = False


@dataclass
class Sweeper:
    """Takes back expired claims and re-sends idle jobs of one batch."""

    jobs: SweepJobs
    queue: SweepQueue
    clock: Clock
    requeue: bool
    resend_after_seconds: int
    published: PublishedCheck | None = None

    def sweep(self, batch_id: str, pending_jobs: Iterable[FileJob]) -> int:
        """Act on the batch's candidates (`stale_jobs`), read once as a stream and held
        SWEEP_CHUNK at a time; how many it completed (StuckJobs, `batch.swept`).

        Expired claims are taken back chunk by chunk as they stream by. Idle jobs are only
        counted on the way (whether to re-send them depends on how many there are against
        the queue's backlog): up to SWEEP_CHUNK are kept; beyond that, the batch's idle
        `available` jobs are read a second time, only when they must be re-sent.
        """
        now_ms = self.clock.now_ms()
        seen = _Pass()
        stuck: list[FileJob] = []
        for job in pending_jobs:
            action = sweep_action(job, now_ms, self.resend_after_seconds)
            if action is SweepAction.TAKE_BACK:
                seen.stuck += 1
                stuck.append(job)
                if len(stuck) >= SWEEP_CHUNK:
                    self._take_back(stuck, seen)
                    stuck = []
            elif action is SweepAction.RESEND:
                seen.idle += 1
                if len(seen.idle_kept) < SWEEP_CHUNK:
                    seen.idle_kept.append(job)
                else:
                    seen.idle_overflow = True
        self._take_back(stuck, seen)
        metrics.emit(
            {"StuckJobs": (seen.stuck, metrics.COUNT)},
            dimensions=metrics.batch_dimensions(batch_id),
            BatchID=batch_id,
        )
        self._resend_idle(batch_id, now_ms, seen)
        if self.requeue and (seen.stuck or seen.idle):
            log.warning(
                "batch.swept",
                batch_id=batch_id,
                stuck=seen.stuck,
                idle=seen.idle,
                backlog=seen.backlog,
                completed=seen.completed,
                requeued=seen.requeued,
            )
        return seen.completed

    def _take_back(self, stuck: list[FileJob], seen: _Pass) -> None:
        if not self.requeue or not stuck:
            return
        to_send = []
        for job in stuck:
            if self._finish_published(job):
                seen.completed += 1
            elif self._requeue(job):
                to_send.append(job)
        # Routed by size (the large-file queue), like every other send.
        self._send(to_send)
        seen.requeued += len(to_send)

    def _resend_idle(self, batch_id: str, now_ms: int, seen: _Pass) -> None:
        if not self.requeue or not seen.idle:
            return
        seen.backlog = self._backlog()
        if seen.backlog >= seen.idle:
            return  # as many visible messages as idle jobs: they are waiting, not lost
        if not seen.idle_overflow:
            self._send_again(seen.idle_kept, seen)
            return
        idle: list[FileJob] = []
        cut = idle_cut_ms(now_ms, self.resend_after_seconds)
        for job in self.jobs.stale_of_batch(batch_id, JobStatus.AVAILABLE, older_than_ms=cut):
            if sweep_action(job, now_ms, self.resend_after_seconds) is SweepAction.RESEND:
                idle.append(job)
                if len(idle) >= SWEEP_CHUNK:
                    self._send_again(idle, seen)
                    idle = []
        self._send_again(idle, seen)

    def _send_again(self, idle: list[FileJob], seen: _Pass) -> None:
        # The requeue touches StatusUpdatedAt, so the next send waits another bound.
        to_send = [j for j in idle if self._requeue(j)]
        self._send(to_send)
        seen.requeued += len(to_send)

    def _send(self, jobs: list[FileJob]) -> None:
        try:
            self.queue.send_jobs(jobs)
        except QueueSendError as exc:
            if exc.unavailable is not None:
                # SQS down for now: the check is retried within the AWS outage budget. The
                # jobs stay available and are re-sent once idle past the resend bound again.
                raise exc.unavailable from exc
            raise

    def _finish_published(self, job: FileJob) -> bool:
        found = self.published(job) if self.published and job.lease_owner else None
        if found is None or job.lease_owner is None:
            return False
        try:
            self.jobs.complete_abandoned(
                job.file_id,
                job.lease_owner,
                byte_count=found.verified.byte_count,
                sha256=found.verified.sha256,
                destination_key=found.key,
                previous_version_id=found.previous_version_id,
            )
        except LeaseLostError:
            return False  # renewed, completed or taken over meanwhile: not ours to finish
        log.info("job.completed_by_sweeper", file_id=job.file_id, destination_key=found.key)
        return True

    def _backlog(self) -> int:
        try:
            return self.queue.depth()
        except AwsRequestError as exc:
            log.warning("queue.depth_failed", error_type=type(exc).__name__)
            return 0  # not knowing costs only duplicate messages

    def _requeue(self, job: FileJob) -> bool:
        try:
            # Conditional: a worker that renewed or finished meanwhile keeps its job.
            self.jobs.requeue(job.file_id)
        except RequeueRefusedError:
            return False
        return True

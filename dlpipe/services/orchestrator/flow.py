"""The daily batch flow in plain Python: every dependency injected, every method one durable step.

A second run for a date that already has a batch (a repeated schedule, a manual run, a
backfill) never downloads a file twice, because jobs are keyed by FileID:
- a batch still running (initiated / queued) or completed: the run attaches to it and only
  watches (no new batch; a completed batch is reported as it is);
- only failed / timed-out batches, or `rerun`: a new batch adopts the date's jobs. Files
  already completed count as completed; failed, errored, never-picked-up or abandoned ones
  move to the new batch and are queued again; files the provider added since are created.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from dlpipe import metrics
from dlpipe.adapters.queue import SEND_BATCH_MAX, QueueSendError
from dlpipe.config import DEFAULT_RESEND_AFTER_SECONDS, DEFAULT_SWEEP_REQUEUE
from dlpipe.domain.clock import Clock, iso_from_ms
from dlpipe.domain.errors import BatchTransitionRefusedError, JobExistsError, RequeueRefusedError
from dlpipe.domain.listing import FileDescriptor, RejectedFile
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus, make_batch_id
from dlpipe.domain.provider_errors import ProviderRefusedError, ProviderUnavailableError
from dlpipe.domain.routing import Route
from dlpipe.domain.rules import batch_ttl_epoch_s, decide_batch_outcome
from dlpipe.domain.transitions import batch_to_attach, may_adopt
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.completion import tally
from dlpipe.services.orchestrator.fanout import (
    CHUNK_ENTRIES,
    Entry,
    FileLister,
    ListingPosition,
    in_parallel,
    open_listing,
    refusal,
)
from dlpipe.services.orchestrator.jobs_from_listing import error_job, job_from_descriptor
from dlpipe.services.orchestrator.ports import (
    BatchStore,
    CompletionCheck,
    FetchFailed,
    JobSender,
    JobStore,
    ProviderOutage,
    QueueResult,
)
from dlpipe.services.orchestrator.sweeper import PublishedCheck, Sweeper

log = get_logger(component="orchestrator")


@dataclass
class BatchFlowService:
    """The batch use cases against the job and batch stores, the queue and the provider
    (wired by dlpipe.bootstrap.orchestrator)."""

    jobs: JobStore
    batches: BatchStore
    provider: FileLister
    queue: JobSender
    clock: Clock
    new_uuid: Callable[[], str]
    sweep_requeue: bool = DEFAULT_SWEEP_REQUEUE
    resend_after_seconds: int = DEFAULT_RESEND_AFTER_SECONDS
    published: PublishedCheck | None = None  # the sweeper's HEAD of a destination key
    chunk_entries: int = CHUNK_ENTRIES  # listing entries per fetch-and-queue step
    # This invocation's open listing stream, continued by the next chunk (dlpipe/services/orchestrator/fanout.py).
    _listing: ListingPosition | None = field(default=None, init=False, repr=False)

    # ---- create-batch -----------------------------------------------------------------

    def create_batch(self, polling_date: str, rerun: bool = False) -> str:
        """Create the day's batch (initiated), or attach to the one already running / done."""
        batch = batch_to_attach(self.batches.query_by_date(polling_date), rerun=rerun)
        if batch is not None:
            log.info(
                "batch.attached",
                batch_id=batch.batch_id,
                date=polling_date,
                status=str(batch.status),
            )
            return batch.batch_id
        now_ms = self.clock.now_ms()
        batch = Batch(
            batch_id=make_batch_id(polling_date, self.new_uuid()),
            polling_date=polling_date,
            status=BatchStatus.INITIATED,
            start_time=iso_from_ms(now_ms),
            created_at=iso_from_ms(now_ms),
            updated_at=iso_from_ms(now_ms),
            ttl_epoch_s=batch_ttl_epoch_s(now_ms // 1000),
        )
        self.batches.create(batch)
        log.info("batch.created", batch_id=batch.batch_id, date=polling_date, rerun=rerun)
        return batch.batch_id

    # ---- fetch-and-queue-files --------------------------------------------------------

    def fetch_and_queue(
        self, batch_id: str, polling_date: str, resume: QueueResult | None = None
    ) -> QueueResult:
        """Write and queue the next chunk of the listing, from `resume` (the previous chunk's
        result) or the start; the chunk that ends the listing marks the batch queued.
        Replay-safe: conditional puts, and this batch's still-available jobs are sent again."""
        batch = self.batches.require(batch_id)
        if batch.is_terminal:
            return QueueResult(expected=batch.expected, sent=0, already_present=batch.expected)
        before = resume or QueueResult(expected=0, sent=0, already_present=0, done=False)
        try:
            position, chunk = self._next_chunk(batch, polling_date, before.offset)
            to_send, present = self._write_jobs(batch_id, chunk, position)
            sent = self._send(to_send)
        except BaseException:
            self._listing = None  # its place in the stream is unknown now: reopen on a retry
            raise
        result = QueueResult(
            expected=len(position.expected),
            sent=before.sent + sent,
            already_present=before.already_present + present,
            offset=position.offset,
            done=position.ended,
        )
        log.info(
            "batch.chunk_queued",
            batch_id=batch_id,
            offset=position.offset,
            entries=len(chunk),
            sent=sent,
            to_large_queue=sum(self.queue.route(j.expected_size) is Route.LARGE for j in to_send),
            already_present=present,
        )
        if position.ended:
            self._listing = None
            self._record_queued(batch_id, position)
            self._report_queued(batch_id, polling_date, position, result)
        return result

    def _next_chunk(
        self, batch: Batch, polling_date: str, offset: int
    ) -> tuple[ListingPosition, list[Entry]]:
        """The stream at `offset` (kept from the previous chunk, or reopened and skipped to)
        and its next chunk of entries."""
        try:
            position = self._listing
            if position is None or not position.at(batch.batch_id, polling_date, offset):
                position = ListingPosition(
                    batch.batch_id, polling_date, open_listing(self.provider, polling_date)
                )
                if not position.skip_to(offset):
                    raise FetchFailed(
                        f"provider_listing_changed: the listing now ends at entry "
                        f"{position.offset}, before the {offset} entries already queued"
                    )
                self._listing = position
            return position, position.take(self.chunk_entries)
        except ProviderUnavailableError as exc:
            # Down, slow or throttling: the durable shell tries again later, within a budget.
            waited_s = max(0.0, (self.clock.now_ms() - _epoch_ms(batch.start_time)) / 1000)
            raise ProviderOutage(
                exc.reason, batch_id=batch.batch_id, elapsed_seconds=waited_s
            ) from exc
        except ProviderRefusedError as exc:
            # 401/403/404, a malformed listing: asking again would get the same answer.
            raise FetchFailed(f"provider_refused: {exc}") from exc

    def _record_queued(self, batch_id: str, position: ListingPosition) -> None:
        """The one place that hands the day's files to the batch item (its cap is the batch
        table's business); a count-only mark_queued would change this line alone."""
        error_message = _summarize_refusals(position.problems, batch_id)
        self.batches.mark_queued(batch_id, position.expected, error_message=error_message)

    def _report_queued(
        self, batch_id: str, polling_date: str, position: ListingPosition, result: QueueResult
    ) -> None:
        log.info(
            "batch.queued",
            batch_id=batch_id,
            expected=result.expected,
            sent=result.sent,
            already_present=result.already_present,
        )
        metrics.emit(
            {
                "FilesExpected": (result.expected, metrics.COUNT),
                "FilesQueued": (result.sent, metrics.COUNT),
                "FilesRejected": (len(position.problems), metrics.COUNT),
            },
            BatchID=batch_id,
            PollingDate=polling_date,
        )

    def _write_jobs(
        self, batch_id: str, chunk: list[Entry], position: ListingPosition
    ) -> tuple[list[FileJob], int]:
        """Write the chunk's jobs (WRITE_WORKERS at a time); the jobs to send, and how many
        were already there with nothing to send."""
        now_ms = self.clock.now_ms()
        # Every copy of a duplicated entity is refused. The stream names the later copies; a
        # first copy in this chunk is withheld here, before anything is written or sent.
        duplicated = {e.entity for e in chunk if isinstance(e, RejectedFile) and e.duplicate}
        jobs = [
            job_from_descriptor(e, batch_id, now_ms)
            for e in chunk
            if isinstance(e, FileDescriptor) and e.entity not in duplicated
        ]
        must_send = in_parallel(self._create_or_adopt, jobs)
        position.expected.update(job.file_id for job in jobs)
        refused_entities: set[str] = set()
        for rejected in (e for e in chunk if isinstance(e, RejectedFile)):
            if rejected.duplicate and rejected.entity in refused_entities:
                continue  # a third copy: its entity's error job is written already
            refused = error_job(_all_copies(rejected), batch_id, position.date, now_ms)
            if refused is None or not self._create_error_job(refused):
                # No safe FileID, or (a duplicate whose first copy an earlier chunk queued)
                # a job that is not this refusal: the batch names it and cannot complete.
                position.problems.append(refusal(rejected))
            else:
                position.expected.add(refused.file_id)
                refused_entities.add(refused.entity)
        to_send = [job for job, send in zip(jobs, must_send, strict=True) if send]
        return to_send, len(jobs) - len(to_send)

    def _send(self, to_send: list[FileJob]) -> int:
        """Send every job (SendMessageBatch groups on WRITE_WORKERS threads); the count sent."""
        groups = [to_send[i : i + SEND_BATCH_MAX] for i in range(0, len(to_send), SEND_BATCH_MAX)]
        failed = sum(in_parallel(self._send_group, groups))
        if failed:
            # The jobs exist and stay available: a replay of this chunk sends them again.
            raise RuntimeError(f"queueing failed for {failed} file(s)")
        return len(to_send)

    def _send_group(self, jobs: list[FileJob]) -> int:
        """Send one group; how many of it could not be sent."""
        try:
            self.queue.send_jobs(jobs)  # each to the queue its size routes it to
        except QueueSendError as exc:
            return len(exc.failed)
        return 0

    def _create_or_adopt(self, job: FileJob) -> bool:
        """True if the job must be (re)sent: new, still available in this batch, or adopted."""
        try:
            self.jobs.create(job)
        except JobExistsError as exists:
            return self._resend_existing(job, exists.current)
        return True

    def _resend_existing(self, job: FileJob, current: FileJob | None) -> bool:
        if current is not None and current.batch_id == job.batch_id:
            # Replay after a crash between the put and the send: send again (at-least-once).
            return current.status is JobStatus.AVAILABLE
        if current is None or not may_adopt(current, job.batch_id, self.clock.now_ms()):
            return False  # completed, or held under a live lease: the adoption would be refused
        try:
            self.jobs.adopt(job.file_id, job.batch_id)
        except RequeueRefusedError:
            return False  # completed or held under a live lease meanwhile: nothing to send
        log.info(
            "job.adopted", file_id=job.file_id, batch_id=job.batch_id, from_batch=current.batch_id
        )
        return True

    def _create_error_job(self, job: FileJob) -> bool:
        """True when this refusal is on record: written now, or by a replay of this batch."""
        try:
            self.jobs.create(job)
        except JobExistsError as exists:
            current = exists.current
            return (
                current is not None
                and current.batch_id == job.batch_id
                and current.status is JobStatus.ERROR
            )
        return True

    # ---- check-completion -------------------------------------------------------------

    def check_completion(
        self, batch_id: str, poll_number: int, is_last_poll: bool
    ) -> CompletionCheck:
        """Count the batch's jobs through BatchIndex (dlpipe/services/orchestrator/completion.py: cost per
        poll bounded by the pending jobs), record the counts, end the batch when due."""
        batch = self.batches.require(batch_id)
        if batch.is_terminal and not (batch.status is BatchStatus.TIMEOUT and batch.pending):
            return _check(batch, str(batch.status))
        found = tally(
            self.jobs,
            self.batches,
            batch,
            lambda pending: self._sweep(batch_id, pending),
            is_last_poll=is_last_poll,
        )
        # One UpdateItem per poll, by the poller alone: workers never write the batch item,
        # so it is no hot key however many files finish at once.
        batch = self.batches.record_counts(
            batch_id,
            completed=found.counts.completed,
            failed=found.failed,
            error=found.error,
            completed_files=found.completed_files,
            failed_files=found.failed_files,
        )
        status = decide_batch_outcome(found.counts, is_last_poll=is_last_poll)
        if status is BatchStatus.COMPLETED and batch.error_message:
            status = BatchStatus.FAILED  # the provider listed entries we could not accept
        if status is None or (
            status is BatchStatus.TIMEOUT and batch.status is BatchStatus.TIMEOUT
        ):
            log.info(
                "batch.polled",
                batch_id=batch_id,
                poll=poll_number,
                pending=found.counts.pending,
                unaccounted=max(0, found.counts.expected - found.counts.accounted),
                read_capacity_units=found.read_capacity_units,
            )
            return _check(batch, None if status is None else str(status), found.counts.pending)
        return _check(self._finish(batch, status), None)

    def _sweep(self, batch_id: str, pending_jobs: Iterable[FileJob]) -> set[str]:
        """Finish or requeue jobs whose worker died, re-send idle ones; the FileIDs it completed."""
        return Sweeper(
            self.jobs,
            self.queue,
            self.clock,
            requeue=self.sweep_requeue,
            resend_after_seconds=self.resend_after_seconds,
            published=self.published,
        ).sweep(batch_id, pending_jobs)

    def _finish(self, batch: Batch, status: BatchStatus) -> Batch:
        timeout_at = iso_from_ms(self.clock.now_ms()) if status is BatchStatus.TIMEOUT else None
        try:
            finished = self.batches.finish(batch.batch_id, status, timeout_at=timeout_at)
        except BatchTransitionRefusedError as refused:
            # Another poller (or a replay) ended it first: report what it decided.
            return refused.current or batch
        _emit_finished(finished, status, self.clock.now_ms())
        log.info(
            f"batch.{status}",
            batch_id=batch.batch_id,
            completed=finished.completed,
            failed=finished.unsuccessful,
        )
        return finished

    def fail_batch(self, batch_id: str, reason: str) -> None:
        """End the batch failed with `reason` (e.g. the provider stayed down)."""
        try:
            self.batches.finish(batch_id, BatchStatus.FAILED, error_message=reason)
        except BatchTransitionRefusedError:
            log.warning("batch.fail_refused", batch_id=batch_id)
            return
        metrics.emit({"BatchFailed": (1, metrics.COUNT)}, BatchID=batch_id)
        log.error("batch.failed", batch_id=batch_id, reason=reason)


_SHOWN_REFUSALS = 5


def _all_copies(rejected: RejectedFile) -> RejectedFile:
    """A later copy's refusal, reworded for the one error job that stands for every copy."""
    if not rejected.duplicate:
        return rejected
    return RejectedFile(
        rejected.entity_or_index, f"{rejected.reason}: all copies refused", rejected.entity
    )


def _summarize_refusals(problems: list[str], batch_id: str) -> str | None:
    """Every refusal gets its own log line; the batch's ErrorMessage stays short and says so."""
    for problem in problems:
        log.warning("batch.entry_rejected", batch_id=batch_id, problem=problem)
    if not problems:
        return None
    shown = "; ".join(p[:150] for p in problems[:_SHOWN_REFUSALS])
    more = len(problems) - _SHOWN_REFUSALS
    tail = f"; and {more} more (each logged as batch.entry_rejected)" if more > 0 else ""
    return f"{len(problems)} provider entries rejected: {shown}{tail}"


def _epoch_ms(iso_time: str) -> int:
    return int(datetime.fromisoformat(iso_time).timestamp() * 1000)


def _emit_finished(batch: Batch, status: BatchStatus, now_ms: int) -> None:
    started_ms = _epoch_ms(batch.start_time)
    metrics.emit(
        {
            f"Batch{_METRIC_SUFFIX[status]}": (1, metrics.COUNT),
            "FilesCompleted": (batch.completed, metrics.COUNT),
            "FilesFailed": (batch.unsuccessful, metrics.COUNT),
            "BatchDurationSeconds": (max(0, now_ms - started_ms) / 1000, metrics.SECONDS),
        },
        BatchID=batch.batch_id,
        PollingDate=batch.polling_date,
    )


_METRIC_SUFFIX = {
    BatchStatus.COMPLETED: "Completed",
    BatchStatus.FAILED: "Failed",
    BatchStatus.TIMEOUT: "TimedOut",
}


def _check(batch: Batch, status: str | None, pending: int | None = None) -> CompletionCheck:
    final = status if status is not None else (str(batch.status) if batch.is_terminal else None)
    return CompletionCheck(
        status=final,
        completed=batch.completed,
        failed=batch.unsuccessful,
        pending=max(batch.pending, pending or 0),
    )

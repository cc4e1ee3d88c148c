"""The daily batch flow in plain Python: every dependency injected, every method one durable step.

A second run for a date that already has a batch (a repeated schedule, a manual run, a
backfill) never downloads a file twice, because jobs are keyed by FileID:
- a batch still running (initiated / queued) or completed: the run attaches to it (no new
  batch; a completed batch is reported as it is). It only watches once the batch is queued;
  while it is initiated the first run may have died mid-listing, so the attached run fans
  out too (conditional puts make the two runs' writes one);
- only failed / timed-out batches, or `rerun`: a new batch adopts the date's jobs. Files
  already completed count as completed; failed, errored, never-picked-up or abandoned ones
  move to the new batch and are queued again; files the provider added since are created.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from dlpipe import metrics
from dlpipe.config import DEFAULT_RESEND_AFTER_SECONDS, DEFAULT_SWEEP_REQUEUE
from dlpipe.domain.clock import Clock, iso_from_ms, ms_from_iso
from dlpipe.domain.errors import (
    BatchTransitionRefusedError,
    JobExistsError,
    ListedTwiceError,
    NotFoundError,
    QueueSendError,
    RequeueRefusedError,
)
from dlpipe.domain.listing import FileDescriptor, RejectedFile
from dlpipe.domain.model import (
    Batch,
    BatchStatus,
    FileJob,
    JobStatus,
    listed_index,
    make_batch_id,
)
from dlpipe.domain.provider_errors import ProviderRefusedError, ProviderUnavailableError
from dlpipe.domain.routing import Route
from dlpipe.domain.rules import batch_ttl_epoch_s, decide_batch_outcome
from dlpipe.domain.text import one_line
from dlpipe.domain.transitions import batch_to_attach, may_adopt
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.completion import tally
from dlpipe.services.orchestrator.fanout import (
    CHUNK_ENTRIES,
    Entry,
    ExpectedFiles,
    FileLister,
    ListingPosition,
    Refusals,
    in_parallel,
    open_listing,
    refusal,
)
from dlpipe.services.orchestrator.jobs_from_listing import error_job, job_from_descriptor
from dlpipe.services.orchestrator.outcome import (
    final_cause,
    summarize_failure,
    summarize_outcome,
)
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
# Jobs per send_jobs call on one thread: one SendMessageBatch, SQS's limit of 10 entries.
SEND_GROUP = 10


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
    # Earlier batches this invocation already marked AdoptedBy (_mark_adopted).
    _adopted_from: set[str] = field(default_factory=set, init=False, repr=False)
    _adopted_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

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
        if batch.is_terminal or batch.status is BatchStatus.QUEUED:
            # Queued is marked after the last chunk's sends succeeded: a run attached to it
            # (a repeated schedule) only watches, instead of re-reading the whole listing and
            # paying a refused put for every job; a message lost since is the sweeper's.
            return QueueResult(expected=batch.expected, sent=0, already_present=batch.expected)
        before = resume or QueueResult(expected=0, sent=0, already_present=0, done=False)
        try:
            position, start, chunk = self._next_chunk(batch, polling_date, before)
            to_send, present = self._write_jobs(batch_id, chunk, start, position)
            sent = self._send(to_send)
        except BaseException:
            self._listing = None  # its place in the stream is unknown now: reopen on a retry
            raise
        result = QueueResult(
            expected=position.expected.count,
            sent=before.sent + sent,
            already_present=before.already_present + present,
            offset=position.offset,
            done=position.ended,
            refused=position.refusals.count,
            refusals_shown=tuple(position.refusals.shown),
            ended_at_ms=self.clock.now_ms(),
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
            self._record_queued(batch_id, position, result)
            self._report_queued(batch_id, polling_date, position, result)
        return result

    def _next_chunk(
        self, batch: Batch, polling_date: str, before: QueueResult
    ) -> tuple[ListingPosition, int, list[Entry]]:
        """The stream at the checkpoint's offset (kept from the previous chunk, or reopened,
        skipped to and given the checkpoint's tallies), the offset of its next chunk, and the
        chunk."""
        offset = before.offset
        try:
            position = self._listing
            if position is None or not position.at(batch.batch_id, polling_date, offset):
                position = ListingPosition(
                    batch.batch_id,
                    polling_date,
                    open_listing(self.provider, polling_date),
                    expected=ExpectedFiles.resumed(before.expected),
                    refusals=Refusals(before.refused, list(before.refusals_shown)),
                )
                if not position.skip_to(offset):
                    raise FetchFailed(
                        f"provider_listing_changed: the listing now ends at entry "
                        f"{position.offset}, before the {offset} entries already queued"
                    )
                self._listing = position
            return position, offset, position.take(self.chunk_entries)
        except ProviderUnavailableError as exc:
            # Down, slow or throttling: the durable shell tries again later, within a budget.
            # The outage began after the previous chunk ended (the batch's start for the first).
            since_ms = max(_epoch_ms(batch.start_time), before.ended_at_ms)
            waited_s = max(0.0, (self.clock.now_ms() - since_ms) / 1000)
            raise ProviderOutage(
                exc.reason, batch_id=batch.batch_id, elapsed_seconds=waited_s
            ) from exc
        except ProviderRefusedError as exc:
            # 401/403/404, a malformed listing: asking again would get the same answer.
            raise FetchFailed(f"provider_refused: {exc}") from exc

    def _record_queued(self, batch_id: str, position: ListingPosition, result: QueueResult) -> None:
        """The one place that hands the day's files to the batch item (its cap is the batch
        table's business); a count-only mark_queued would change this line alone. QueuedCount
        is what this batch sent: a replayed chunk's sends count once (its checkpoint is the
        previous chunk's), files carried from an earlier batch and error jobs not at all."""
        self.batches.mark_queued(
            batch_id,
            position.expected.ids or (),
            error_message=position.refusals.summary(),
            expected_count=position.expected.count,
            queued_count=result.sent,
        )

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
                "FilesRejected": (position.refusals.count, metrics.COUNT),
            },
            BatchID=batch_id,
            PollingDate=polling_date,
        )

    def _write_jobs(
        self, batch_id: str, chunk: list[Entry], start: int, position: ListingPosition
    ) -> tuple[list[FileJob], int]:
        """Write the chunk's jobs (WRITE_WORKERS at a time; entry i of the chunk is entry
        start + i of the day); the jobs to send, and how many were there with nothing to send."""
        now_ms = self.clock.now_ms()
        # Every copy of an entity listed twice is refused. Copies within this chunk are found
        # here, before anything is written or sent; a copy of an entity an earlier chunk wrote
        # is found by its put (fanout.py, "Duplicates").
        places: dict[str, list[int]] = {}  # entity -> its entries in this chunk
        for index, entry in enumerate(chunk, start):
            if entry.entity is not None:
                places.setdefault(entry.entity, []).append(index)
        duplicated = {entity: found for entity, found in places.items() if len(found) > 1}
        jobs = [
            job_from_descriptor(entry, batch_id, now_ms, index)
            for index, entry in enumerate(chunk, start)
            if isinstance(entry, FileDescriptor) and entry.entity not in duplicated
        ]
        placed = in_parallel(self._place_job, jobs)
        to_send: list[FileJob] = []
        present = 0
        for job, outcome in zip(jobs, placed, strict=True):
            if outcome.duplicate_of is not None and job.listing_index is not None:
                line = _later_copy(job.entity, [outcome.duplicate_of, job.listing_index])
                self._refuse(batch_id, position, line)
                continue
            position.expected.add(job.file_id)
            if outcome.send:
                to_send.append(job)
            else:
                present += 1
        refused: list[tuple[int, RejectedFile]] = [
            (found[0], _all_copies_refused(entity, found)) for entity, found in duplicated.items()
        ]
        refused += [
            (index, entry)
            for index, entry in enumerate(chunk, start)
            if isinstance(entry, RejectedFile) and entry.entity not in duplicated
        ]
        for index, rejected in sorted(refused, key=lambda item: item[0]):
            self._record_refusal(batch_id, position, rejected, index, now_ms)
        return to_send, present

    def _refuse(self, batch_id: str, position: ListingPosition, line: str) -> None:
        log.warning("batch.entry_rejected", batch_id=batch_id, problem=line)
        position.refusals.add(line)

    def _record_refusal(
        self,
        batch_id: str,
        position: ListingPosition,
        rejected: RejectedFile,
        index: int,
        now_ms: int,
    ) -> None:
        """An error job for a refused entry (counted as expected), or a line on the batch when
        it has no safe FileID or its FileID belongs to another job."""
        job = error_job(rejected, batch_id, position.date, now_ms, index)
        if job is None:
            self._refuse(batch_id, position, refusal(rejected))
            return
        try:
            self.jobs.create(job)
        except JobExistsError as exists:
            current = exists.current
            if current is None or current.batch_id != batch_id:
                # Another batch's job: this refusal is not on record; the batch names it.
                self._refuse(batch_id, position, refusal(rejected))
                return
            if current.listing_index is not None and current.listing_index != index:
                if current.status is not JobStatus.ERROR:
                    line = _later_copy(job.entity, [current.listing_index, index])
                    self._refuse(batch_id, position, line)
                return  # (or a later copy of an entity refused already: its error job stands)
            if current.status is not JobStatus.ERROR:
                self._refuse(batch_id, position, refusal(rejected))
                return
        position.expected.add(job.file_id)  # written now, or by a replay of this entry

    def _send(self, to_send: list[FileJob]) -> int:
        """Send every job (SendMessageBatch groups on WRITE_WORKERS threads); the count sent."""
        groups = [to_send[i : i + SEND_GROUP] for i in range(0, len(to_send), SEND_GROUP)]
        refused = [exc for exc in in_parallel(self._send_group, groups) if exc is not None]
        if refused:
            # The jobs exist and stay available: a replay of this chunk sends them again.
            failed = sum(len(exc.failed) for exc in refused)
            outages = [exc.unavailable for exc in refused if exc.unavailable is not None]
            if len(outages) == len(refused):
                # SQS is down for now: the durable shell waits it out within its budget.
                log.warning("batch.queue_unavailable", files=failed, cause=str(outages[0]))
                raise outages[0]
            reason = one_line(str(refused[0]))  # SQS's codes: what an operator must fix
            log.error("batch.queueing_failed", files=failed, groups=len(refused), reason=reason)
            raise RuntimeError(f"queueing failed for {failed} file(s): {reason}")
        return len(to_send)

    def _send_group(self, jobs: list[FileJob]) -> QueueSendError | None:
        """Send one group; what the queue refused of it, if anything."""
        try:
            self.queue.send_jobs(jobs)  # each to the queue its size routes it to
        except QueueSendError as exc:
            return exc
        return None

    def _place_job(self, job: FileJob) -> _Placed:
        """Write the job, or find why its FileID is taken: a replay of this entry (send it
        again while available), another batch's job (adopt it), or a duplicate entry."""
        try:
            self.jobs.create(job)
        except JobExistsError as exists:
            current = exists.current
            if current is not None and current.batch_id == job.batch_id:
                if current.listing_index not in (None, job.listing_index):
                    return _Placed(send=False, duplicate_of=current.listing_index)
                # Replay after a crash between the put and the send: send again (at-least-once).
                return _Placed(send=current.status is JobStatus.AVAILABLE)
            if self._adopt(job, current):
                return _Placed(send=True)
            return self._listed_again(job)
        return _Placed(send=True)

    def _listed_again(self, job: FileJob) -> _Placed:
        """Another batch's job this rerun could not adopt (completed, or held) is marked as
        named by this entry, so that a later copy of the entity is refused as on a fresh day."""
        if job.listing_index is None:
            return _Placed(send=False)
        try:
            self.jobs.mark_listed(job.file_id, job.batch_id, job.listing_index)
        except ListedTwiceError as exc:
            marked = exc.current.listed_by if isinstance(exc.current, FileJob) else None
            earlier = listed_index(marked, job.batch_id)
            if earlier is not None:
                return _Placed(send=False, duplicate_of=earlier)
        return _Placed(send=False)  # (a job gone meanwhile is nothing to send either)

    def _adopt(self, job: FileJob, current: FileJob | None) -> bool:
        """True if another batch's unfinished job moved into this batch (and must be sent)."""
        if current is None or not may_adopt(current, job.batch_id, self.clock.now_ms()):
            return False  # completed, or held under a live lease: the adoption would be refused
        try:
            self.jobs.adopt(job.file_id, job.batch_id, job.listing_index)
        except RequeueRefusedError:
            return False  # completed or held under a live lease meanwhile: nothing to send
        log.info(
            "job.adopted", file_id=job.file_id, batch_id=job.batch_id, from_batch=current.batch_id
        )
        self._mark_adopted(current.batch_id, job.batch_id)
        return True

    def _mark_adopted(self, earlier: str, rerun: str) -> None:
        """Tell the earlier batch where its files went: one write per earlier batch and
        invocation (a replay writes the same value again), not one per file."""
        with self._adopted_lock:  # jobs are placed on several threads
            if earlier in self._adopted_from:
                return
            self._adopted_from.add(earlier)
        try:
            self.batches.mark_adopted(earlier, rerun)
        except (BatchTransitionRefusedError, NotFoundError):
            log.warning("batch.adopted_mark_refused", batch_id=earlier, adopted_by=rerun)

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
        try:
            batch = self.batches.record_counts(
                batch_id,
                completed=found.counts.completed,
                failed=found.failed,
                error=found.error,
                completed_files=found.completed_files,
                failed_files=found.failed_files,
            )
        except BatchTransitionRefusedError as refused:
            if refused.current is None:
                raise
            # Another poller of this batch (a repeated run attached to it) finished it while
            # this one counted: its counts stand, and this poll reports them.
            log.info("batch.record_refused", batch_id=batch_id, status=str(refused.current.status))
            return _check(refused.current, str(refused.current.status))
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
        return _check(self._finish(batch, status, found.counts.pending), None)

    def _sweep(self, batch_id: str, pending_jobs: Iterable[FileJob]) -> int:
        """Finish or requeue jobs whose worker died, re-send idle ones; how many it completed."""
        return Sweeper(
            self.jobs,
            self.queue,
            self.clock,
            requeue=self.sweep_requeue,
            resend_after_seconds=self.resend_after_seconds,
            published=self.published,
        ).sweep(batch_id, pending_jobs)

    def _finish(self, batch: Batch, status: BatchStatus, pending: int) -> Batch:
        timeout_at = iso_from_ms(self.clock.now_ms()) if status is BatchStatus.TIMEOUT else None
        cause = final_cause(batch, status, pending)
        outcome = summarize_outcome(self.jobs, batch.batch_id, cause)
        try:
            finished = self.batches.finish(
                batch.batch_id, status, timeout_at=timeout_at, outcome=outcome
            )
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
        outcome = summarize_failure(self.jobs, batch_id, reason)
        try:
            self.batches.finish(batch_id, BatchStatus.FAILED, error_message=reason, outcome=outcome)
        except BatchTransitionRefusedError:
            log.warning("batch.fail_refused", batch_id=batch_id)
            return
        metrics.emit(
            {metrics.BATCH_FINISHED[BatchStatus.FAILED]: (1, metrics.COUNT)}, BatchID=batch_id
        )
        log.error("batch.failed", batch_id=batch_id, reason=reason)


class _Placed(NamedTuple):
    """What writing one job found: send it or not, or the entry whose job took its FileID."""

    send: bool
    duplicate_of: int | None = None


def _duplicate(entity: str, found: list[int]) -> str:
    """Why an entity listed at the entries `found` is refused."""
    where = ", ".join(f"files[{i}]" for i in found)
    return f"duplicate entity {entity!r} in the listing ({where})"


def _all_copies_refused(entity: str, found: list[int]) -> RejectedFile:
    """The one refusal that stands for every copy of an entity listed twice in a chunk."""
    return RejectedFile(entity, f"{_duplicate(entity, found)}: all copies refused", entity)


def _later_copy(entity: str, found: list[int]) -> str:
    """The batch's line for a copy of an entity whose job an earlier entry wrote."""
    return refusal(RejectedFile(entity, _duplicate(entity, found), entity))


def _epoch_ms(iso_time: str) -> int:
    return ms_from_iso(iso_time)


def _emit_finished(batch: Batch, status: BatchStatus, now_ms: int) -> None:
    started_ms = _epoch_ms(batch.start_time)
    metrics.emit(
        {
            metrics.BATCH_FINISHED[status]: (1, metrics.COUNT),
            "FilesCompleted": (batch.completed, metrics.COUNT),
            "FilesFailed": (batch.unsuccessful, metrics.COUNT),
            "BatchDurationSeconds": (max(0, now_ms - started_ms) / 1000, metrics.SECONDS),
        },
        BatchID=batch.batch_id,
        PollingDate=batch.polling_date,
    )


def _check(batch: Batch, status: str | None, pending: int | None = None) -> CompletionCheck:
    final = status if status is not None else (str(batch.status) if batch.is_terminal else None)
    # `failed` and `error` as the jobs table says them (an item from before the counts has
    # only FailedFiles, which held both).
    legacy = batch.failed_count is None and batch.error_count is None
    outcome = batch.outcome if final is not None and batch.is_terminal else None
    return CompletionCheck(
        status=final,
        completed=batch.completed,
        failed=batch.unsuccessful if legacy else batch.failed_count or 0,
        pending=max(batch.pending, pending or 0),
        error=0 if legacy else batch.error_count or 0,
        outcome=None if outcome is None else outcome.to_dict(),
    )

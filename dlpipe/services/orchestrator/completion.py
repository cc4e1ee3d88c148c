"""One completion check's reads: what is pending, what finished, at a cost bounded by the day.

Per poll (BatchIndex, eventually consistent, 0.5 RCU per 4 KB of index items a page):
- `available` and `downloading` jobs are read whole (the sweeper needs them), as a stream:
  the check holds a page and the sweeper's chunk, never the pending jobs of the day; a COUNT
  would cost the same, since a Query is billed on the bytes it reads, not on what it returns;
- `failed` and `error` are counted (Select=COUNT): they are few;
- `completed` is counted only once nothing is pending (or on the last poll): until then
  completed = expected - pending - failed - error is progress, never a decision.
So a poll costs 0.5 x (ceil(A x s / 4 KB) + ceil(D x s / 4 KB) + ceil(F x s / 4 KB)
+ ceil(E x s / 4 KB)) RCU for A available, D downloading, F failed and E error jobs of s bytes:
four queries, and each page of each (1 MB or QUERY_PAGE_ITEMS items) rounds up on its own;
plus whatever AWS bills a query that reads nothing (DynamoDB Local reports 0; not verified on
AWS). The end of the day adds 0.5 x ceil(C x s / 4 KB) once for C completed (per page too).
A large day's rerun whose own batch has nothing pending also counts the earlier batches of
the date's available, downloading, failed and error partitions (the files they still hold:
few), and counts the completed ones, there and here, only when nothing is pending anywhere.
Nothing per poll grows with the files already done. tests/integration/test_batch_counts.py
checks this against ConsumedCapacity.

Eventual consistency: a job may show an older status for a moment. A stale `downloading`
only adds a poll. A job written but not yet in the index is seen nowhere: the day is done
only when nothing is pending AND completed + failed + error >= ExpectedCount.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from dlpipe.domain.model import Batch, FileJob, JobStatus
from dlpipe.domain.rules import BatchCounts
from dlpipe.domain.statuses import PENDING_JOB_STATUSES, UNSUCCESSFUL_JOB_STATUSES
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.store_ports import BatchStore, JobStore

log = get_logger(component="orchestrator")
Sweep = Callable[[Iterable[FileJob]], int]  # how many pending jobs it completed


@dataclass
class Tally:
    """What one check found; the outcome sets only when the day is small and fully resolved."""

    counts: BatchCounts
    failed: int
    error: int
    completed_files: set[str] | None = None
    failed_files: set[str] | None = None
    read_capacity_units: float = 0.0
    unreadable: set[str] = field(default_factory=set)


def tally(
    jobs: JobStore,
    batches: BatchStore,
    batch: Batch,
    sweep: Sweep,
    *,
    is_last_poll: bool,
) -> Tally:
    """Count the batch's jobs by status (sweeping the pending ones on the way)."""
    rcu_before = jobs.meter.read_capacity_units
    unreadable: set[str] = set()
    streamed = [0]

    def pending_jobs() -> Iterator[FileJob]:
        for status in PENDING_JOB_STATUSES:
            for job in jobs.query_by_batch(
                batch.batch_id, status, on_unreadable=lambda exc: unreadable.add(exc.key)
            ):
                streamed[0] += 1
                yield job

    stream = pending_jobs()
    swept = sweep(stream)
    for _ in stream:  # a sweep that stopped early (or never looked) still leaves the count
        pass
    pending = streamed[0] - swept
    failed = jobs.count_by_batch(batch.batch_id, JobStatus.FAILED)
    # A pending job that cannot be read can never complete: it counts failed, by name.
    error = jobs.count_by_batch(batch.batch_id, JobStatus.ERROR) + len(unreadable)
    for file_id in sorted(unreadable):
        log.error("job.unreadable", batch_id=batch.batch_id, file_id=file_id)
    if pending and not is_last_poll:
        # Progress only: swept completions are not counted twice, just not yet seen.
        completed = max(0, batch.expected - pending - failed - error)
        result = Tally(
            BatchCounts(batch.expected, completed, failed + error, pending), failed, error
        )
    elif batch.has_sets:
        result = _resolve_by_name(jobs, batch, pending, unreadable)
    else:
        result = _resolve_by_counts(
            jobs, batches, batch, pending, failed=failed, error=error, is_last_poll=is_last_poll
        )
    result.read_capacity_units = jobs.meter.read_capacity_units - rcu_before
    result.unreadable = unreadable
    return result


def _resolve_by_name(jobs: JobStore, batch: Batch, pending: int, unreadable: set[str]) -> Tally:
    """A small day at its end: every expected FileID accounted for by name.

    Files not in this batch's index partition are read by key (consistent): completed in an
    earlier batch of the date (a rerun) counts completed; written but not yet indexed counts
    pending; gone or unreadable counts failed, loudly, so the day still ends and names it.
    """
    statuses = jobs.batch_file_ids(batch.batch_id)
    done = {f for f, s in statuses.items() if s is JobStatus.COMPLETED}
    failed = {f for f, s in statuses.items() if s is JobStatus.FAILED}
    errors = {f for f, s in statuses.items() if s is JobStatus.ERROR or s is None} | unreadable
    gap = batch.expected_files - set(statuses)
    gone_bad: set[str] = set()
    found = jobs.batch_get(gap, consistent=True, on_unreadable=lambda e: gone_bad.add(e.key))
    for file_id in sorted(gap):
        job = found.get(file_id)
        if job is None:
            log.error(
                "job.unreadable" if file_id in gone_bad else "job.missing",
                batch_id=batch.batch_id,
                file_id=file_id,
            )
            failed.add(file_id)
        elif job.status is JobStatus.COMPLETED:
            done.add(file_id)
        elif job.status in UNSUCCESSFUL_JOB_STATUSES:
            failed.add(file_id)
        else:
            pending += 1
    counts = BatchCounts(batch.expected, len(done), len(failed) + len(errors), pending)
    return Tally(counts, len(failed), len(errors), done, failed | errors)


def _resolve_by_counts(
    jobs: JobStore,
    batches: BatchStore,
    batch: Batch,
    pending: int,
    *,
    failed: int,
    error: int,
    is_last_poll: bool,
) -> Tally:
    """A large day with nothing pending in this batch (or its last poll): decide by counts.

    A rerun's files may still sit in an earlier batch of the date: completed ones are never
    adopted, and one held under a live lease cannot be. Those batches' pending, failed and
    error partitions are counted first (cheap: few jobs); only when nothing is pending
    anywhere (or on the last poll) are the completed jobs counted, here and there. The
    earlier batches' counts are capped by the files this batch does not hold, so no file
    counts twice.
    """
    earlier = _earlier(batches, batch)
    gap = batch.expected - pending - failed - error  # files not pending/unsuccessful here
    held = _count(jobs, earlier, *PENDING_JOB_STATUSES, cap=gap)
    other_failed = _count(jobs, earlier, JobStatus.FAILED, cap=gap - held)
    other_error = _count(jobs, earlier, JobStatus.ERROR, cap=gap - held - other_failed)
    failed, error, pending = failed + other_failed, error + other_error, pending + held
    if pending and not is_last_poll:
        # Another batch of the date still holds a file: progress only, no completed count.
        completed = max(0, batch.expected - pending - failed - error)
        return Tally(BatchCounts(batch.expected, completed, failed + error, pending), failed, error)
    completed = jobs.count_by_batch(batch.batch_id, JobStatus.COMPLETED)
    missing = batch.expected - completed - failed - error - pending
    carried = _count(jobs, earlier, JobStatus.COMPLETED, cap=missing)
    if carried < missing:
        log.warning("batch.unaccounted", batch_id=batch.batch_id, missing=missing - carried)
    counts = BatchCounts(batch.expected, completed + carried, failed + error, pending)
    return Tally(counts, failed, error)


def _earlier(batches: BatchStore, batch: Batch) -> list[Batch]:
    """The date's other batches (a rerun's predecessors), whose partitions may hold its files."""
    same_feed = (b for b in batches.query_by_date(batch.polling_date) if b.feed == batch.feed)
    return [b for b in same_feed if b.batch_id != batch.batch_id]


def _count(jobs: JobStore, earlier: list[Batch], *statuses: JobStatus, cap: int) -> int:
    """The jobs of the `earlier` batches in `statuses`, at most `cap` (none read if cap <= 0)."""
    if cap <= 0 or not earlier:
        return 0
    found = sum(jobs.count_by_batch(b.batch_id, s) for b in earlier for s in statuses)
    return min(found, cap)

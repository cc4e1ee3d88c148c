"""One completion check's reads: what is pending, what finished, at a cost bounded by the day.

Per poll (BatchIndex, eventually consistent, 0.5 RCU per 4 KB of index items a page):
- `available` and `downloading` jobs are read whole (the sweeper needs them), as a stream:
  the check holds a page and the sweeper's chunk, never the pending jobs of the day; a COUNT
  would cost the same, since a Query is billed on the bytes it reads, not on what it returns;
- `failed` and `error` are counted (Select=COUNT): they are few;
- `completed` is counted only once nothing is pending (or on the last poll): until then
  completed = expected - pending - failed - error is progress, never a decision.
So a poll costs 0.5 x (ceil(P x s / 4 KB) + ceil(F x s / 4 KB)) RCU for P pending and F
failed/error jobs of s bytes (each page, 1 MB or QUERY_PAGE_ITEMS items, rounds up on its
own), plus whatever AWS bills a
query that reads nothing (DynamoDB Local reports 0; not verified on AWS); the end of the day
adds 0.5 x ceil(C x s / 4 KB) once for C completed. Nothing per poll grows with the files
already done. tests/integration/test_batch_counts.py checks this against ConsumedCapacity.

Eventual consistency: a job may show an older status for a moment. A stale `downloading`
only adds a poll. A job written but not yet in the index is seen nowhere: the day is done
only when nothing is pending AND completed + failed + error >= ExpectedCount.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from dlpipe.domain.model import Batch, FileJob, JobStatus
from dlpipe.domain.rules import BatchCounts
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.ports import BatchStore, JobStore

log = get_logger(component="orchestrator")
Sweep = Callable[[Iterable[FileJob]], int]  # how many pending jobs it completed
_UNSUCCESSFUL = (JobStatus.FAILED, JobStatus.ERROR)


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
        for status in (JobStatus.AVAILABLE, JobStatus.DOWNLOADING):
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
        completed = jobs.count_by_batch(batch.batch_id, JobStatus.COMPLETED)
        counts = BatchCounts(batch.expected, completed, failed + error, pending)
        completed += _carried(jobs, batches, batch, counts)
        result = Tally(
            BatchCounts(batch.expected, completed, failed + error, pending), failed, error
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
        elif job.status in _UNSUCCESSFUL:
            failed.add(file_id)
        else:
            pending += 1
    counts = BatchCounts(batch.expected, len(done), len(failed) + len(errors), pending)
    return Tally(counts, len(failed), len(errors), done, failed | errors)


def _carried(jobs: JobStore, batches: BatchStore, batch: Batch, counts: BatchCounts) -> int:
    """A large day's rerun: files completed under an earlier batch of the date stay there
    (they are not adopted), so they are counted from those batches' BatchIndex partitions.

    Also on a last poll with files still pending (a timeout): the carry is capped by the gap
    (files this batch's partition does not hold), so no file is counted twice."""
    gap = counts.expected - counts.accounted
    if gap <= 0:
        return 0
    earlier = [b for b in batches.query_by_date(batch.polling_date) if b.batch_id != batch.batch_id]
    carried = sum(jobs.count_by_batch(b.batch_id, JobStatus.COMPLETED) for b in earlier)
    if carried < gap:
        log.warning("batch.unaccounted", batch_id=batch.batch_id, missing=gap - carried)
    return min(carried, gap)

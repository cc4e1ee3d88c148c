"""One completion check's reads: what is pending, what finished, at a cost bounded by the day.

Per poll, BatchIndex is counted, never read job by job (a pending job's index item is its
keys, TTL and Entity, ~150 B: ~27 to the 0.5 RCU an eventually consistent 4 KB costs): each
of its 16 shards is queried for `available` (Select=COUNT) and for the `downloading`..`failed`
run of the sort key (`error` and `failed` sit next to it: one Query counts all three by the
Status it returns). `completed`
is counted only once nothing is pending (or on the last poll): until then
completed = expected - pending - failed - error is progress, never a decision. The sweeper's
candidates come from StatusIndex (sweeper.py's `stale_jobs`: claims older than one lease,
available jobs past the resend bound, filtered to the batch by the BatchID that index carries)
and only those are fetched by key. So a poll costs, for A available, D downloading, F failed
and E error jobs of the batch and S stale pending index items of the deployment:
  sum over the 16 shards of 0.5 x (ceil(A_k x 150 B / 4 KB) + ceil((D_k + F_k + E_k) x 150 B
  / 4 KB)) + sum over StatusIndex's 2 x 8 shard Queries of 0.5 x ceil(S_k x 150 B / 4 KB)
  + 0.5 per candidate of the batch fetched
RCU, each page (QUERY_PAGE_ITEMS items) rounding up on its own; plus whatever AWS bills a
Query that reads nothing (DynamoDB Local reports 0; AWS bills at least 0.5: up to 24 RCU a poll
for the 48 Queries). The end of the day adds 0.5 x ceil(C_k x 150 B / 4 KB) per shard once for
C completed. A large day's rerun whose own batch has nothing pending also counts the earlier
batches of the date's pending and unsuccessful jobs (few), and their completed ones only when
nothing is pending anywhere. Nothing per poll grows with the files already done.
tests/integration/test_batch_counts.py checks this against ConsumedCapacity.

A pending job the index names but that cannot be read is found when it becomes a candidate
(its StatusUpdatedAt ages past the bound): it can never complete, and counts `error`, by name.

Eventual consistency: a job may show an older status for a moment. A stale `downloading`
only adds a poll. A job written but not yet in the index is seen nowhere: the day is done
only when nothing is pending AND completed + failed + error >= ExpectedCount.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dlpipe.domain.errors import UnreadableHandler
from dlpipe.domain.model import Batch, JobStatus
from dlpipe.domain.rules import BatchCounts
from dlpipe.domain.statuses import (
    ERROR_JOB_STATUSES,
    FAILED_JOB_STATUSES,
    PENDING_JOB_STATUSES,
    UNSUCCESSFUL_JOB_STATUSES,
    count_of,
)
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.feed_day import feed_batches
from dlpipe.services.orchestrator.store_ports import BatchStore, JobStore

log = get_logger(component="orchestrator")
# Sweeps the batch's candidates, reporting those it cannot read; how many it completed.
Sweep = Callable[[UnreadableHandler], int]
_COUNTED = (*PENDING_JOB_STATUSES, *UNSUCCESSFUL_JOB_STATUSES)


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
    """Count the batch's jobs by status, then sweep its stale pending ones."""
    rcu_before = jobs.meter.read_capacity_units
    unreadable: set[str] = set()
    counted = jobs.counts_by_batch(batch.batch_id, _COUNTED)
    # Counted first: a job the sweep completes is taken off pending, not counted twice.
    swept = sweep(lambda exc: unreadable.add(exc.key))
    pending = max(0, sum(counted[s] for s in PENDING_JOB_STATUSES) - swept - len(unreadable))
    failed = count_of(counted, FAILED_JOB_STATUSES)
    # A pending job that cannot be read can never complete: it counts error, by name.
    error = count_of(counted, ERROR_JOB_STATUSES) + len(unreadable)
    for file_id in sorted(unreadable):
        log.error("job.unreadable", batch_id=batch.batch_id, file_id=file_id)
    if pending and not is_last_poll:
        # Progress only: swept completions are not counted twice, just not yet seen.
        completed = max(0, batch.expected - pending - failed - error)
        result = Tally(
            BatchCounts(batch.expected, completed, failed + error, pending), failed, error
        )
    elif batch.has_sets:
        result = _resolve_by_name(jobs, batch, unreadable)
    else:
        result = _resolve_by_counts(
            jobs, batches, batch, pending, failed=failed, error=error, is_last_poll=is_last_poll
        )
    result.read_capacity_units = jobs.meter.read_capacity_units - rcu_before
    result.unreadable = unreadable
    return result


def _resolve_by_name(jobs: JobStore, batch: Batch, unreadable: set[str]) -> Tally:
    """A small day with nothing pending (or at its last poll): every expected FileID
    accounted for by name.

    Files not in this batch's index partition, and those it names pending, are read by key
    (consistent): completed in an earlier batch of the date (a rerun) counts completed; still
    pending, or written but not yet indexed, counts pending; gone or unreadable counts failed,
    loudly, so the day still ends and names it (a pending job nobody can read never completes).
    """
    statuses = jobs.batch_file_ids(batch.batch_id)
    done = {f for f, s in statuses.items() if s is JobStatus.COMPLETED}
    failed = {f for f, s in statuses.items() if s in FAILED_JOB_STATUSES}
    errors = {f for f, s in statuses.items() if s in ERROR_JOB_STATUSES or s is None} | unreadable
    named_pending = {f for f, s in statuses.items() if s in PENDING_JOB_STATUSES}
    to_read = (batch.expected_files - set(statuses)) | (named_pending - unreadable)
    gone_bad: set[str] = set()
    found = jobs.batch_get(to_read, consistent=True, on_unreadable=lambda e: gone_bad.add(e.key))
    pending = 0
    for file_id in sorted(to_read):
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
    other_failed = _count(jobs, earlier, *FAILED_JOB_STATUSES, cap=gap - held)
    other_error = _count(jobs, earlier, *ERROR_JOB_STATUSES, cap=gap - held - other_failed)
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
    same_feed = feed_batches(batches, batch.polling_date, batch.feed)
    return [b for b in same_feed if b.batch_id != batch.batch_id]


def _count(jobs: JobStore, earlier: list[Batch], *statuses: JobStatus, cap: int) -> int:
    """The jobs of the `earlier` batches in `statuses`, at most `cap` (none read if cap <= 0)."""
    if cap <= 0 or not earlier:
        return 0
    found = sum(sum(jobs.counts_by_batch(b.batch_id, statuses).values()) for b in earlier)
    return min(found, cap)

"""A batch's errors grouped by code for its day page and `dlpipe status`, at any size: a finished batch's outcome
summary (written once when it ended), or for a running one a bounded read of its failed and
error partitions (at most LIVE_ERRORS_LIMIT jobs; beyond that, 'n/a' until it ends)."""

from __future__ import annotations

from dataclasses import dataclass

from dlpipe.domain.outcome import OutcomeSummary, OutcomeTally
from dlpipe.domain.statuses import (
    ERROR_JOB_STATUSES,
    FAILED_JOB_STATUSES,
    UNSUCCESSFUL_JOB_STATUSES,
    count_of,
)
from dlpipe.services.ops.ports import OpsJobs
from dlpipe.services.ops.queries import BatchSummary

LIVE_ERRORS_LIMIT = 1000


@dataclass(frozen=True)
class ErrorsByCode:
    """The summary shown, where it came from ('summary', 'live' or 'n/a'), and how many
    failed and error jobs the batch has now."""

    summary: OutcomeSummary | None
    source: str
    failed: int
    error: int


def errors_by_code(jobs: OpsJobs, selected: BatchSummary) -> ErrorsByCode:
    """The selected batch's cause and errors by code."""
    batch = selected.batch
    failed = count_of(selected.counts, FAILED_JOB_STATUSES)
    error = count_of(selected.counts, ERROR_JOB_STATUSES)
    if batch.is_terminal and batch.outcome is not None:
        return ErrorsByCode(batch.outcome, "summary", failed, error)
    if failed + error > LIVE_ERRORS_LIMIT:
        return ErrorsByCode(None, "n/a", failed, error)
    tally = OutcomeTally()
    for status in UNSUCCESSFUL_JOB_STATUSES:
        found = jobs.query_by_batch(batch.batch_id, status, limit=LIVE_ERRORS_LIMIT)
        tally.add_jobs((job.error_message, job.file_id) for job in found)
    return ErrorsByCode(tally.summary(batch.error_message), "live", failed, error)

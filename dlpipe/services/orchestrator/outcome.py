"""The outcome summary a batch carries once final (dlpipe/domain/outcome.py holds its budget).

Computed once per batch end, by the step that writes the final status, from the batch's
`failed` and `error` BatchIndex partitions only: 2 statuses x 16 shards, 32 Queries of index
items (~150 B each: 0.5 x ceil(n x 150 B / 4 KB) RCU a shard page), then a fetch by key of
each of the F failed and E error jobs (0.5 RCU each, eventually consistent): nothing but the
Queries for a clean day, and ~51,800 RCU once for a day whose 100,000 files all failed. The pages
are streamed: memory holds a page and at most MAX_CODES x FILES_PER_CODE FileIDs.
The reads are BatchIndex's (eventually consistent), like the counts the decision rests on: a
job that changed in the last moment may be missing from the codes while counted in ErrorCount.
Idempotent: the summary lands in the same conditional UpdateItem as the final status, and the
smallest FileIDs of each code are kept, so any replay computes and writes the same summary.
"""

from __future__ import annotations

from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.domain.model import Batch, BatchStatus
from dlpipe.domain.outcome import OutcomeSummary, OutcomeTally
from dlpipe.domain.statuses import UNSUCCESSFUL_JOB_STATUSES
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.store_ports import JobStore

log = get_logger(component="orchestrator")

UNREADABLE = "unreadable_job"  # an index item that is not a valid job: named, never hidden


def summarize_outcome(jobs: JobStore, batch_id: str, cause: str | None) -> OutcomeSummary:
    """Counts by error code over the batch's failed and error jobs, with `cause`."""
    tally = OutcomeTally()
    for status in UNSUCCESSFUL_JOB_STATUSES:
        found = jobs.query_by_batch(
            batch_id, status, on_unreadable=lambda exc: tally.add(UNREADABLE, exc.key)
        )
        tally.add_jobs((job.error_message, job.file_id) for job in found)
    return tally.summary(cause)


def summarize_failure(jobs: JobStore, batch_id: str, cause: str) -> OutcomeSummary:
    """The summary of a batch failed as a whole: its cause always, its errors by code when the
    jobs table can be read. A day failed because DynamoDB stayed down must still end failed."""
    try:
        return summarize_outcome(jobs, batch_id, cause)
    except DependencyUnavailableError as exc:
        log.warning("batch.outcome_unreadable", batch_id=batch_id, error=str(exc))
        return OutcomeTally().summary(cause)


def final_cause(batch: Batch, status: BatchStatus, pending: int) -> str | None:
    """Why the batch as a whole ends `status`: the refusals on its item, or the timeout."""
    if status is BatchStatus.TIMEOUT:
        return f"timeout: {pending} file(s) still pending at the last check"
    if status is BatchStatus.FAILED:
        return batch.error_message
    return None

"""The job and batch status machines, and the guard of every conditional write, in Python.

Each `may_*` / `holds_*` function is the rule one ConditionExpression of the table modules
(dlpipe/adapters/jobs_writes.py, batches_table.py) mirrors; the property test in
tests/property/ writes generated states to DynamoDB Local and checks that DynamoDB accepts
exactly the states the rule accepts. The functions read only the attributes a condition
reads, and take None for an item or attribute that is absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from dlpipe.domain.model import Batch, BatchStatus, JobStatus, listed_by
from dlpipe.domain.statuses import (
    BATCH_OPEN,
    BATCH_STATUSES,
    JOB_STATUSES,
    LEASED_JOB_STATUSES,
    SUCCESSFUL_BATCH_STATUSES,
)

# The machines' edges, read off the status table (dlpipe/domain/statuses.py).
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {s: r.to for s, r in JOB_STATUSES.items()}
BATCH_TRANSITIONS: dict[BatchStatus, frozenset[BatchStatus]] = {
    s: r.to for s, r in BATCH_STATUSES.items()
}


class JobState(Protocol):
    """What the job rules read of a job item (a FileJob is one); None where it is absent."""

    @property
    def status(self) -> JobStatus | None: ...  # pragma: no cover - a protocol
    @property
    def batch_id(self) -> str | None: ...  # pragma: no cover
    @property
    def lease_owner(self) -> str | None: ...  # pragma: no cover
    @property
    def lease_expires_at_ms(self) -> int | None: ...  # pragma: no cover


class BatchState(Protocol):
    """What the batch rules read of a batch item (a Batch is one)."""

    @property
    def status(self) -> BatchStatus | None: ...  # pragma: no cover - a protocol


class LateState(Protocol):
    """What the Day Late claim reads of a batch item: the event that holds it."""

    @property
    def late_event_id(self) -> str | None: ...  # pragma: no cover - a protocol


def job_sources(new: JobStatus) -> frozenset[JobStatus]:
    """Every job status from which `new` may be reached."""
    return frozenset(old for old, targets in JOB_TRANSITIONS.items() if new in targets)


def batch_sources(new: BatchStatus) -> frozenset[BatchStatus]:
    """Every batch status from which `new` may be reached."""
    return frozenset(old for old, targets in BATCH_TRANSITIONS.items() if new in targets)


# ---- leases ---------------------------------------------------------------------------------


def lease_expired(job: JobState, now_ms: int) -> bool:
    """A `downloading` claim its holder can no longer count on: the lease ran out strictly
    before `now_ms`, or the claim carries no expiry at all (nobody could ever take it over)."""
    if job.status not in LEASED_JOB_STATUSES:
        return False
    return job.lease_expires_at_ms is None or job.lease_expires_at_ms < now_ms


def lease_live(job: JobState, now_ms: int) -> bool:
    """A `downloading` claim whose lease still runs at `now_ms` (its expiry instant included)."""
    return job.status in LEASED_JOB_STATUSES and not lease_expired(job, now_ms)


def is_stuck(job: JobState, now_ms: int) -> bool:
    """A pending job nobody holds: available, or downloading under an expired lease."""
    return job.status is JobStatus.AVAILABLE or lease_expired(job, now_ms)


# ---- job writes (jobs_writes.py) -----------------------------------------------------------


def may_create(current: object | None) -> bool:
    """A FileID or BatchID is written once: a put lands only where no item is."""
    return current is None


def may_claim(job: JobState | None, now_ms: int) -> bool:
    """claim: an available job, or a takeover of a claim whose lease expired."""
    if job is None or job.status not in job_sources(JobStatus.DOWNLOADING):
        return False
    return job.status not in LEASED_JOB_STATUSES or lease_expired(job, now_ms)


def holds_claim(job: JobState | None, owner: str) -> bool:
    """Renew, refresh the URL, complete, fail or release: only the current claim's owner,
    so a worker whose claim was taken over cannot overwrite the new holder's result."""
    return job is not None and job.status in LEASED_JOB_STATUSES and job.lease_owner == owner


def may_complete_abandoned(job: JobState | None, owner: str, now_ms: int) -> bool:
    """The sweeper completes `owner`'s published file only while that claim is still expired."""
    return holds_claim(job, owner) and job is not None and lease_expired(job, now_ms)


def may_requeue(job: JobState | None, now_ms: int, *, force: bool = False) -> bool:
    """Back to available: any job not completed that nobody holds; `force` takes a live claim."""
    if job is None or job.status not in job_sources(JobStatus.AVAILABLE):
        return False
    return force or job.status not in LEASED_JOB_STATUSES or lease_expired(job, now_ms)


def may_adopt(job: JobState | None, batch_id: str, now_ms: int) -> bool:
    """A rerun's batch takes over a requeuable job of another batch."""
    return job is not None and job.batch_id != batch_id and may_requeue(job, now_ms)


class ListedState(Protocol):
    """What may_mark_listed reads of a job item."""

    @property
    def listed_by(self) -> str | None: ...  # pragma: no cover - a protocol


def may_mark_listed(job: ListedState | None, batch_id: str, listing_index: int) -> bool:
    """A rerun marks a job it could not adopt as named by entry `listing_index` of its listing,
    unless another entry of the same listing named it first (then that one is a duplicate)."""
    if job is None:
        return False
    marked = job.listed_by
    return (
        marked is None
        or not marked.startswith(listed_by(batch_id, 0)[:-1])
        or marked == listed_by(batch_id, listing_index)
    )


# ---- a refusal that is our own write, retried -----------------------------------------------
# botocore re-sends a write whose response was lost (a dropped connection, a timeout). When
# the first send landed, the retry is refused by the change it made itself; the refused
# write's stored item (ALL_OLD) then shows that change, and the write has succeeded.


class FinishedState(JobState, Protocol):
    """What is_own_job_write reads of a job item."""

    @property
    def finished_by(self) -> str | None: ...  # pragma: no cover - a protocol


def is_own_job_write(job: FinishedState | None, owner: str, target: JobStatus) -> bool:
    """A refused claim, completion, failure or release by `owner` that already landed: the job
    is in `target`, held by `owner` (a claim) or ended by `owner` (FinishedBy). An owner id
    is made afresh for every claim, so no other claim, of this process or another, matches."""
    if job is None or job.status is not target:
        return False
    mark = job.lease_owner if target in LEASED_JOB_STATUSES else job.finished_by
    return mark == owner


class BatchWriteState(BatchState, Protocol):
    """What is_own_batch_write reads of a batch item."""

    @property
    def updated_at(self) -> str: ...  # pragma: no cover - a protocol


def is_own_batch_write(batch: BatchWriteState | None, target: BatchStatus, updated_at: str) -> bool:
    """A refused status write of a batch that already landed: the batch is in `target` with
    the UpdatedAt this write sets (a retry re-sends the same values, to the millisecond)."""
    return batch is not None and batch.status is target and batch.updated_at == updated_at


def is_own_batch_create(stored: Batch | None, ours: Batch) -> bool:
    """A refused create-batch that already landed: the stored batch is ours, field for field."""
    return stored == ours


# ---- batch writes (batches_table.py) -------------------------------------------------------


def may_mark_queued(batch: BatchState | None) -> bool:
    """initiated -> queued, and queued again on a replay of the step; nothing finished."""
    return batch is not None and batch.status in mark_queued_sources()


def mark_queued_sources() -> frozenset[BatchStatus]:
    """Where mark_queued lands: the sources of queued, and queued itself (a replay)."""
    return batch_sources(BatchStatus.QUEUED) | {BatchStatus.QUEUED}


def may_finish(batch: BatchState | None, new: BatchStatus) -> bool:
    """Only a transition the batch machine allows from where the batch is now lands."""
    return batch is not None and batch.status in batch_sources(new)


def may_record(batch: BatchState | None) -> bool:
    """Outcome sets are recorded on an existing batch only (never create one)."""
    return batch is not None


def may_record_handoff(batch: Batch | None, status: str, detail_type: str) -> bool:
    """The outcome event of `status` is recorded while the batch still is in that status and
    no event of its detail-type is recorded yet: the first one sent stays the batch's, and a
    late retry for a status the batch left (timeout, repaired) records nothing."""
    return batch is not None and str(batch.status) == status and batch.handoff_type != detail_type


def may_claim_late(batch: LateState | None) -> bool:
    """Day Late is claimed once per batch, by the first run past the deadline: another run
    (an attach) or a retried step finds it claimed and sends nothing."""
    return batch is not None and batch.late_event_id is None


def may_release_late(batch: LateState | None, event_id: str) -> bool:
    """A claim is given back (its send failed) only by the event that holds it."""
    return batch is not None and batch.late_event_id == event_id


def may_record_counts(batch: BatchState | None) -> bool:
    """A poll's counts land only on a batch that is not final: a second poller attached to
    the same batch never overwrites what the poller that completed or failed it recorded."""
    return batch is not None and batch.status in BATCH_OPEN


def batch_to_attach(batches: Sequence[Batch], *, rerun: bool) -> Batch | None:
    """The batch a run for a date joins instead of starting one (oldest first in `batches`):
    the latest still running, else, unless `rerun`, the latest completed."""
    running = [b for b in batches if not b.is_terminal]
    if running:
        return running[-1]
    completed = [b for b in batches if b.status in SUCCESSFUL_BATCH_STATUSES]
    return completed[-1] if completed and not rerun else None


def rerun_starts_anew(batches: Sequence[Batch]) -> bool:
    """A rerun makes a new batch over a completed day only while the day's hand-off is
    withheld (its latest completed batch records a HandoffProblem): the repair is a new batch,
    manifest and event. Otherwise the rerun attaches, and an unchanged day writes nothing."""
    completed = [b for b in batches if b.status in SUCCESSFUL_BATCH_STATUSES]
    return bool(completed) and completed[-1].handoff_problem is not None

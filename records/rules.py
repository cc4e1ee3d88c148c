"""The pipeline's rules in plain Python: status machines, leases, TTLs and batch outcomes."""

from __future__ import annotations

from collections.abc import Set
from enum import StrEnum

from records.errors import IllegalTransitionError
from records.model import BatchStatus, FileJob, JobStatus
from records.schema import BATCH_TTL_DAYS, JOB_TTL_DAYS

_J = JobStatus
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    _J.AVAILABLE: frozenset({_J.DOWNLOADING}),
    # downloading -> downloading is a takeover of an expired lease; -> available is a release
    # (clean shutdown) or an operator's requeue of an expired claim.
    _J.DOWNLOADING: frozenset({_J.DOWNLOADING, _J.COMPLETED, _J.FAILED, _J.ERROR, _J.AVAILABLE}),
    _J.COMPLETED: frozenset(),
    # An operator may requeue a failed or errored file once the cause is fixed.
    _J.FAILED: frozenset({_J.AVAILABLE}),
    _J.ERROR: frozenset({_J.AVAILABLE}),
}

_B = BatchStatus
BATCH_TRANSITIONS: dict[BatchStatus, frozenset[BatchStatus]] = {
    _B.INITIATED: frozenset({_B.QUEUED, _B.FAILED}),
    _B.QUEUED: frozenset({_B.COMPLETED, _B.FAILED, _B.TIMEOUT}),
    _B.COMPLETED: frozenset(),
    _B.FAILED: frozenset(),
    # A timed-out batch may still finish when its files are repaired and re-checked.
    _B.TIMEOUT: frozenset({_B.COMPLETED, _B.FAILED}),
}


def check_job_transition(old: JobStatus, new: JobStatus) -> None:
    """Raise IllegalTransitionError unless the job status machine allows old -> new."""
    if new not in JOB_TRANSITIONS[old]:
        raise IllegalTransitionError(f"job status {old} -> {new} is not allowed")


def check_batch_transition(old: BatchStatus, new: BatchStatus) -> None:
    """Raise IllegalTransitionError unless the batch status machine allows old -> new."""
    if new not in BATCH_TRANSITIONS[old]:
        raise IllegalTransitionError(f"batch status {old} -> {new} is not allowed")


def batch_sources(new: BatchStatus) -> frozenset[BatchStatus]:
    """Every batch status from which `new` may be reached."""
    return frozenset(old for old, targets in BATCH_TRANSITIONS.items() if new in targets)


class ClaimDecision(StrEnum):
    """What a worker may do with a job it was asked to process."""

    CLAIM = "claim"  # available: claim it
    TAKE_OVER = "take_over"  # downloading, lease expired: its worker is presumed dead
    BUSY = "busy"  # downloading under a live lease: leave the message for later
    DONE = "done"  # terminal: acknowledge and skip


def claim_decision(job: FileJob, now_ms: int) -> ClaimDecision:
    """Decide from a job's current record whether a worker may claim it now."""
    if job.is_terminal:
        return ClaimDecision.DONE
    if job.status is JobStatus.AVAILABLE:
        return ClaimDecision.CLAIM
    return ClaimDecision.BUSY if job.lease_live(now_ms) else ClaimDecision.TAKE_OVER


def lease_expiry_ms(now_ms: int, lease_seconds: int) -> int:
    """When a lease taken (or extended) at `now_ms` runs out."""
    if lease_seconds <= 0:
        raise ValueError("lease_seconds must be positive")
    return now_ms + lease_seconds * 1000


def job_ttl_epoch_s(now_s: int) -> int:
    """TTL of a job written at `now_s`: 30 days, in epoch seconds as DynamoDB TTL requires."""
    return now_s + JOB_TTL_DAYS * 86_400


def batch_ttl_epoch_s(now_s: int) -> int:
    """TTL of a batch written at `now_s`: 90 days, in epoch seconds."""
    return now_s + BATCH_TTL_DAYS * 86_400


def ttl_expired(ttl_epoch_s: int | None, now_s: int) -> bool:
    """DynamoDB deletes expired items lazily (moto never): reads must treat them as absent."""
    return ttl_epoch_s is not None and ttl_epoch_s < now_s


def decide_batch_status(
    expected: Set[str], completed: Set[str], failed: Set[str], *, is_last_poll: bool
) -> BatchStatus | None:
    """The batch's final status, or None while files are pending and polls remain.

    completed: every expected file completed (an empty day completes at once);
    failed: every file terminal and at least one failed or error;
    timeout: files still pending when the last poll has run.
    """
    pending = expected - completed - failed
    if not pending:
        return BatchStatus.FAILED if expected & failed else BatchStatus.COMPLETED
    return BatchStatus.TIMEOUT if is_last_poll else None

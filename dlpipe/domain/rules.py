"""The pipeline's rules in plain Python: claims, sweeps, TTLs, batch outcomes, recovery bounds.

The status machines and the guards of the conditional writes are in transitions.py.
"""

from __future__ import annotations

import math
from collections.abc import Set
from dataclasses import dataclass
from enum import StrEnum

from dlpipe.domain.model import BatchStatus, FileJob, JobStatus
from dlpipe.domain.schema import BATCH_TTL_DAYS, JOB_TTL_DAYS
from dlpipe.domain.transitions import lease_expired, may_claim


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
    if not may_claim(job, now_ms):
        return ClaimDecision.BUSY
    return ClaimDecision.CLAIM if job.status is JobStatus.AVAILABLE else ClaimDecision.TAKE_OVER


def lease_expiry_ms(now_ms: int, lease_seconds: int) -> int:
    """When a lease taken (or extended) at `now_ms` runs out."""
    if lease_seconds <= 0:
        raise ValueError("lease_seconds must be positive")
    return now_ms + lease_seconds * 1000


def visibility_margin_seconds(lease_seconds: int) -> int:
    """How long a message stays hidden past its claim's lease: a tenth of it, at least 1 s."""
    return max(1, math.ceil(lease_seconds / 10))


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


@dataclass(frozen=True)
class BatchCounts:
    """What one completion check counted: the listing's total and the jobs by outcome."""

    expected: int
    completed: int
    unsuccessful: int  # failed + error + listed files whose job is gone or unreadable
    pending: int  # available + downloading, as the index shows them

    @property
    def accounted(self) -> int:
        """Files seen in any status; below `expected` while the index lags or a job is gone."""
        return self.completed + self.unsuccessful + self.pending


def decide_batch_outcome(counts: BatchCounts, *, is_last_poll: bool) -> BatchStatus | None:
    """decide_batch_status on counts: done only when nothing is pending AND every expected
    file is seen finished, so a job not yet visible in an eventually consistent index can
    never let a batch end early (it only costs one more poll)."""
    finished = counts.completed + counts.unsuccessful
    if counts.pending == 0 and finished >= counts.expected:
        return BatchStatus.FAILED if counts.unsuccessful else BatchStatus.COMPLETED
    return BatchStatus.TIMEOUT if is_last_poll else None


def recovery_bound_seconds(
    lease_seconds: int, margin_seconds: int, poll_interval_seconds: int, resend_after_seconds: int
) -> int:
    """How long a file whose worker died waits, at most, before another worker runs it.

    A message a dead worker received, or whose claim it held, is visible again lease + margin
    after its last heartbeat (or its receive); the sweeper requeues an expired claim by the
    first check after lease, and re-sends a job idle in `available` past the resend bound by
    the next check (RELIABILITY.md, "Recovery bounds").
    """
    return max(
        lease_seconds + margin_seconds,
        lease_seconds + poll_interval_seconds,
        resend_after_seconds + poll_interval_seconds,
    )


class RecoveryBudgetError(ValueError):
    """The polling window is shorter than the time a crashed worker's file may wait."""


def assert_recovery_fits(
    max_polls: int,
    poll_interval_seconds: int,
    lease_seconds: int,
    margin_seconds: int,
    resend_after_seconds: int,
) -> None:
    """Raise RecoveryBudgetError unless the polls outlast the recovery bound plus one lease
    (time for the file to be run again), so a crash never alone turns a day into a timeout."""
    bound = recovery_bound_seconds(
        lease_seconds, margin_seconds, poll_interval_seconds, resend_after_seconds
    )
    window = max_polls * poll_interval_seconds
    if window < bound + lease_seconds:
        raise RecoveryBudgetError(
            f"{max_polls} polls x {poll_interval_seconds}s = {window}s is shorter than the "
            f"recovery bound {bound}s + one lease {lease_seconds}s: raise DLPIPE_MAX_POLLS or "
            "lower DLPIPE_RESEND_AFTER_SECONDS / DLPIPE_LEASE_SECONDS"
        )


class SweepAction(StrEnum):
    """What the poller's sweeper does with a pending job."""

    TAKE_BACK = "take_back"  # downloading under an expired lease: finish or requeue it
    RESEND = "resend"  # available and untouched past the resend bound: send it again


def idle_cut_ms(now_ms: int, resend_after_seconds: int) -> int:
    """An available job last changed before this instant is idle: past the resend bound."""
    return now_ms - resend_after_seconds * 1000


def sweep_action(job: FileJob, now_ms: int, resend_after_seconds: int) -> SweepAction | None:
    """The sweeper's decision for one pending job, or None to leave it alone."""
    if lease_expired(job, now_ms):
        return SweepAction.TAKE_BACK
    idle = job.status_updated_at_ms < idle_cut_ms(now_ms, resend_after_seconds)
    if job.status is JobStatus.AVAILABLE and idle:
        return SweepAction.RESEND
    return None

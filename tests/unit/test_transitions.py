"""The rules the conditional writes mirror: leases, stuck jobs, requeue, adoption, attachment.

tests/property/test_conditions.py checks each rule against its ConditionExpression on
DynamoDB Local; these say what the rules are, in milliseconds.
"""

from __future__ import annotations

import pytest

from dlpipe.domain.model import BatchStatus, FileJob, JobStatus
from dlpipe.domain.transitions import (
    batch_to_attach,
    is_stuck,
    lease_expired,
    lease_live,
    may_adopt,
    may_record_counts,
    may_requeue,
    rerun_starts_anew,
)
from tests.support import BASE_MS, make_batch, make_job

J, B = JobStatus, BatchStatus


def _claim(lease_at_ms: int | None, **changes: object) -> FileJob:
    return make_job(
        "acct", status=J.DOWNLOADING, lease_owner="w", lease_expires_at_ms=lease_at_ms, **changes
    )


@pytest.mark.parametrize(
    ("lease_at_ms", "expired"),
    [(BASE_MS - 1, True), (BASE_MS, False), (BASE_MS + 1, False), (None, True)],
)
def test_a_lease_expires_strictly_after_its_instant_and_a_claim_without_one_is_expired(
    lease_at_ms: int | None, expired: bool
) -> None:
    """Live through its expiry instant (`LeaseExpiresAt < :now` is the condition); no expiry
    at all means nobody could ever take the claim over, so it counts as expired."""
    job = _claim(lease_at_ms)
    assert lease_expired(job, BASE_MS) is expired
    assert lease_live(job, BASE_MS) is not expired


@pytest.mark.parametrize("status", [J.AVAILABLE, J.COMPLETED, J.FAILED, J.ERROR])
def test_only_a_downloading_job_has_a_lease(status: JobStatus) -> None:
    """Another status is neither held nor expired, whatever lease attributes linger."""
    job = make_job("acct", status=status, lease_expires_at_ms=BASE_MS - 1)
    assert not lease_expired(job, BASE_MS)
    assert not lease_live(job, BASE_MS)


def test_stuck_means_pending_and_held_by_nobody() -> None:
    """available and expired claims are stuck; a live claim and finished jobs are not."""
    assert is_stuck(make_job("acct"), BASE_MS)
    assert is_stuck(_claim(BASE_MS - 1), BASE_MS)
    assert not is_stuck(_claim(BASE_MS), BASE_MS)
    for status in (J.COMPLETED, J.FAILED, J.ERROR):
        assert not is_stuck(make_job("acct", status=status), BASE_MS)


def test_requeue_takes_everything_but_completed_and_live_claims_unless_forced() -> None:
    """failed, error, available and expired claims go back; force adds live claims only."""
    for status in (J.AVAILABLE, J.FAILED, J.ERROR):
        assert may_requeue(make_job("acct", status=status), BASE_MS)
    live = _claim(BASE_MS + 1)
    assert not may_requeue(live, BASE_MS)
    assert may_requeue(live, BASE_MS, force=True)
    assert not may_requeue(make_job("acct", status=J.COMPLETED), BASE_MS, force=True)
    assert not may_requeue(None, BASE_MS, force=True)


def test_adoption_is_a_requeue_into_another_batch() -> None:
    """A rerun adopts a requeuable job of another batch, never one of its own."""
    job = make_job("acct", status=J.FAILED, batch_id="batch-a")
    assert may_adopt(job, "batch-b", BASE_MS)
    assert not may_adopt(job, "batch-a", BASE_MS)


@pytest.mark.parametrize(
    ("statuses", "rerun", "attached"),
    [
        ([], False, None),
        ([B.FAILED, B.TIMEOUT], False, None),
        ([B.COMPLETED, B.FAILED], False, 0),  # the completed one, though a later one failed
        ([B.COMPLETED, B.FAILED], True, None),
        ([B.COMPLETED, B.QUEUED], True, 1),  # a running batch is joined even on a rerun
        ([B.INITIATED, B.QUEUED], False, 1),  # the latest running one
    ],
)
def test_a_run_attaches_to_the_latest_running_batch_else_to_the_completed_one(
    statuses: list[BatchStatus], rerun: bool, attached: int | None
) -> None:
    """Running batches are joined; a completed one is joined unless rerun; else a new batch."""
    batches = [make_batch(status=s) for s in statuses]
    expected = None if attached is None else batches[attached]
    assert batch_to_attach(batches, rerun=rerun) is expected


def test_counts_are_recorded_on_a_batch_that_may_still_change_never_on_a_final_one() -> None:
    """A poll's counts land on an initiated, queued or timed-out batch, not a completed or failed one."""
    assert may_record_counts(None) is False
    for status in BatchStatus:
        expected = status not in (B.COMPLETED, B.FAILED)
        assert may_record_counts(make_batch(status=status)) is expected, status


def test_the_status_table_derives_the_sets_the_machines_name() -> None:
    """What docs/ARCHITECTURE.md's "Status machines" says, read off the table's rows: a row
    changed by mistake (a status no longer ended, open or leased) fails here."""
    from dlpipe.domain import statuses

    assert statuses.TERMINAL_JOB_STATUSES == (J.COMPLETED, J.FAILED, J.ERROR)
    assert statuses.PENDING_JOB_STATUSES == (J.AVAILABLE, J.DOWNLOADING)
    assert statuses.UNSUCCESSFUL_JOB_STATUSES == (J.FAILED, J.ERROR)
    assert statuses.LEASED_JOB_STATUSES == (J.DOWNLOADING,)
    assert statuses.FAILED_JOB_STATUSES == (J.FAILED,)
    assert statuses.ERROR_JOB_STATUSES == (J.ERROR,)
    assert statuses.JOB_STATUSES_BY_PROGRESS == (
        J.COMPLETED,
        J.FAILED,
        J.ERROR,
        J.DOWNLOADING,
        J.AVAILABLE,
    )
    assert statuses.TERMINAL_BATCH_STATUSES == (B.COMPLETED, B.FAILED, B.TIMEOUT)
    assert statuses.SUCCESSFUL_BATCH_STATUSES == (B.COMPLETED,)
    assert statuses.BATCH_OPEN == (B.INITIATED, B.QUEUED, B.TIMEOUT)
    assert dict(statuses.FINISHED_BATCH_METRIC) == {
        B.COMPLETED: "BatchCompleted",
        B.FAILED: "BatchFailed",
        B.TIMEOUT: "BatchTimedOut",
    }
    assert dict(statuses.FINISHED_BATCH_EVENT) == {
        B.COMPLETED: "Day Completed",
        B.FAILED: "Day Failed",
        B.TIMEOUT: "Day Timed Out",
    }
    # The stored strings never change.
    assert [str(s) for s in J] == ["available", "downloading", "completed", "failed", "error"]
    assert [str(s) for s in B] == ["initiated", "queued", "completed", "timeout", "failed"]


@pytest.mark.parametrize(
    ("statuses", "problem", "anew"),
    [
        ([B.COMPLETED], None, False),  # an unchanged completed day: the rerun attaches
        ([B.COMPLETED], "manifest_tampered: x", True),  # its hand-off withheld: the repair
        ([B.FAILED], None, False),  # no completed batch: a new one anyway (batch_to_attach)
    ],
)
def test_a_rerun_starts_a_completed_day_anew_only_while_its_hand_off_is_withheld(
    statuses: list[BatchStatus], problem: str | None, anew: bool
) -> None:
    """rerun_starts_anew: the latest completed batch's HandoffProblem decides."""
    batches = [make_batch(status=s, handoff_problem=problem) for s in statuses]
    assert rerun_starts_anew(batches) is anew

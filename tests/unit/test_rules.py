"""Claim decisions, lease and TTL arithmetic and the batch outcome, as pure Python."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.rules import (
    BatchCounts,
    ClaimDecision,
    batch_ttl_epoch_s,
    claim_decision,
    decide_batch_outcome,
    decide_batch_status,
    job_ttl_epoch_s,
    lease_expiry_ms,
    ttl_expired,
)
from dlpipe.domain.transitions import batch_sources
from tests.support import BASE_MS, make_job

J, B = JobStatus, BatchStatus


def test_batch_sources_lists_every_status_that_leads_to_completed() -> None:
    """completed is reachable from queued and from timeout only."""
    assert batch_sources(B.COMPLETED) == {B.QUEUED, B.TIMEOUT}
    assert batch_sources(B.INITIATED) == frozenset()


def test_available_job_may_be_claimed() -> None:
    """An available job is claimable."""
    assert claim_decision(make_job("a"), BASE_MS) is ClaimDecision.CLAIM


def test_job_under_live_lease_is_busy_and_expired_lease_is_taken_over() -> None:
    """A downloading job is busy until its lease expiry (that instant included, as the claim's
    ConditionExpression `LeaseExpiresAt < :now` has it), then may be taken over."""
    job = replace(
        make_job("a"), status=J.DOWNLOADING, lease_owner="w1", lease_expires_at_ms=BASE_MS + 1000
    )
    assert claim_decision(job, BASE_MS + 1000) is ClaimDecision.BUSY
    assert claim_decision(job, BASE_MS + 1001) is ClaimDecision.TAKE_OVER


@pytest.mark.parametrize("status", [J.COMPLETED, J.FAILED, J.ERROR])
def test_terminal_job_is_done(status: J) -> None:
    """A stale message for a finished job is acknowledged, never reprocessed."""
    assert claim_decision(replace(make_job("a"), status=status), BASE_MS) is ClaimDecision.DONE


def test_lease_expiry_is_seconds_after_now_in_milliseconds() -> None:
    """A 300 s lease ends 300,000 ms later, and a non-positive lease is refused."""
    assert lease_expiry_ms(1_000, 300) == 301_000
    with pytest.raises(ValueError, match="positive"):
        lease_expiry_ms(1_000, 0)


def test_ttls_are_epoch_seconds_30_and_90_days_ahead() -> None:
    """Job TTL is now+30 d and batch TTL now+90 d, in seconds (not milliseconds)."""
    now_s = BASE_MS // 1000
    assert job_ttl_epoch_s(now_s) - now_s == 30 * 86_400
    assert batch_ttl_epoch_s(now_s) - now_s == 90 * 86_400
    assert job_ttl_epoch_s(now_s) < 10**10  # milliseconds would be 10**12


def test_expired_ttl_means_absent_and_missing_ttl_never_expires() -> None:
    """An item whose TTL lies in the past is treated as gone; no TTL never expires."""
    assert ttl_expired(99, 100)
    assert not ttl_expired(100, 100)
    assert not ttl_expired(None, 100)


def test_batch_completes_when_every_file_completed() -> None:
    """All expected files completed -> completed."""
    assert decide_batch_status({"a", "b"}, {"a", "b"}, set(), is_last_poll=False) is B.COMPLETED


def test_batch_fails_when_all_terminal_and_one_failed() -> None:
    """All files terminal, one failed -> failed."""
    assert decide_batch_status({"a", "b"}, {"a"}, {"b"}, is_last_poll=False) is B.FAILED


def test_batch_keeps_running_while_files_pending_and_polls_remain() -> None:
    """A pending file before the last poll -> no decision yet."""
    assert decide_batch_status({"a", "b"}, {"a"}, set(), is_last_poll=False) is None


def test_batch_times_out_when_files_pending_at_last_poll() -> None:
    """A pending file at the last poll -> timeout."""
    assert decide_batch_status({"a", "b"}, {"a"}, set(), is_last_poll=True) is B.TIMEOUT


def test_empty_day_completes_at_once() -> None:
    """A day with no files is a completed batch, not a timeout."""
    assert decide_batch_status(set(), set(), set(), is_last_poll=False) is B.COMPLETED


def test_counts_complete_a_day_only_when_every_expected_file_is_seen_finished() -> None:
    """Nothing pending but fewer finished than ExpectedCount (index lag) -> no decision yet."""
    lagging = BatchCounts(expected=3, completed=2, unsuccessful=0, pending=0)
    assert decide_batch_outcome(lagging, is_last_poll=False) is None
    assert decide_batch_outcome(lagging, is_last_poll=True) is B.TIMEOUT
    done = BatchCounts(expected=3, completed=3, unsuccessful=0, pending=0)
    assert decide_batch_outcome(done, is_last_poll=False) is B.COMPLETED


def test_counts_fail_a_day_whose_files_all_finished_and_one_did_not_complete() -> None:
    """All seen finished, one failed or error -> failed; one still pending -> no decision."""
    failed = BatchCounts(expected=2, completed=1, unsuccessful=1, pending=0)
    assert decide_batch_outcome(failed, is_last_poll=False) is B.FAILED
    pending = BatchCounts(expected=2, completed=1, unsuccessful=0, pending=1)
    assert decide_batch_outcome(pending, is_last_poll=False) is None

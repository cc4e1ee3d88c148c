"""The rules that tell a write refused by its own earlier send (a retry after a lost response)
from one refused by someone else's change: decided on the stored item alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.transitions import is_own_batch_create, is_own_batch_write, is_own_job_write
from tests.support import BASE_MS, make_batch, make_job

J, B = JobStatus, BatchStatus
MINE, MY_NEXT, THEIRS = "h:1:aaaa", "h:1:bbbb", "g:2:cccc"


def test_a_claim_is_ours_when_the_job_is_downloading_under_our_owner_id() -> None:
    """Our claim landed; another claim, even of this process (a new owner id), is not ours."""
    held = make_job("acct", status=J.DOWNLOADING, lease_owner=MINE, lease_expires_at_ms=BASE_MS)
    assert is_own_job_write(held, MINE, J.DOWNLOADING)
    assert not is_own_job_write(held, MY_NEXT, J.DOWNLOADING)
    assert not is_own_job_write(replace(held, lease_owner=THEIRS), MINE, J.DOWNLOADING)


@pytest.mark.parametrize("target", [J.COMPLETED, J.FAILED, J.ERROR, J.AVAILABLE])
def test_an_ending_write_is_ours_when_the_job_is_in_its_status_and_finished_by_us(
    target: JobStatus,
) -> None:
    """complete, fail, error, release: the status this write sets, and FinishedBy our claim."""
    ended = make_job("acct", status=target, finished_by=MINE)
    assert is_own_job_write(ended, MINE, target)
    assert not is_own_job_write(replace(ended, finished_by=THEIRS), MINE, target)
    assert not is_own_job_write(replace(ended, finished_by=None), MINE, target)
    other = J.FAILED if target is not J.FAILED else J.ERROR
    assert not is_own_job_write(ended, MINE, other)


def test_no_stored_job_is_nobodys_write() -> None:
    """A refusal without an item (deleted, past its TTL) proves nothing."""
    assert not is_own_job_write(None, MINE, J.COMPLETED)


def test_a_final_batch_status_is_ours_when_it_carries_the_updated_at_we_sent() -> None:
    """A retry re-sends the same UpdatedAt; a poller's write a moment later differs."""
    now = iso_from_ms(BASE_MS)
    done = make_batch(status=B.COMPLETED, updated_at=now)
    assert is_own_batch_write(done, B.COMPLETED, now)
    assert not is_own_batch_write(done, B.FAILED, now)
    assert not is_own_batch_write(done, B.COMPLETED, iso_from_ms(BASE_MS + 1))
    assert not is_own_batch_write(None, B.COMPLETED, now)


def test_a_created_batch_is_ours_only_field_for_field() -> None:
    """The same record is our create retried; any difference is another create."""
    ours = make_batch()
    assert is_own_batch_create(ours, ours)
    assert not is_own_batch_create(replace(ours, start_time=iso_from_ms(BASE_MS + 1)), ours)
    assert not is_own_batch_create(None, ours)

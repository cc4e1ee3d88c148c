"""The downloader's small rules: destination keys, retry classification and waits, margins."""

from __future__ import annotations

import threading
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from tenacity import RetryCallState, Retrying

from dlpipe.domain.clock import SystemClock
from dlpipe.domain.destination_key import destination_key
from dlpipe.domain.download_errors import (
    ChecksumMismatchError,
    DestinationUnavailableError,
    InvalidJobError,
    SourceUnavailableError,
    UrlExpiredError,
    UrlRefusedError,
)
from dlpipe.domain.errors import StoreUnavailableError
from dlpipe.services.download.filerun import FileRun, _retryable
from dlpipe.services.download.service import Outcome, ProcessResult
from dlpipe.services.download.transfer import TransferTuning
from tests.support import make_job


def test_the_destination_key_is_entity_date_file_id() -> None:
    """{entity}/{YYYY-MM-DD}/{FileID}."""
    assert destination_key(make_job("accounts")) == "accounts/2026-02-28/accounts-2026-02-28"


@pytest.mark.parametrize(
    "changes",
    [
        {"entity": "../../etc"},
        {"entity": "accounts\n", "file_id": "accounts\n-2026-02-28"},
        {"download_date": "2026-02-30"},
        {"entity": "positions"},  # does not match the FileID
    ],
)
def test_a_job_that_would_shape_an_unsafe_or_wrong_key_is_refused(changes: dict[str, str]) -> None:
    """Stored entity and date are re-validated and must rebuild the FileID exactly."""
    with pytest.raises(InvalidJobError):
        destination_key(replace(make_job("accounts"), **changes))


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (SourceUnavailableError("HTTP 503"), True),
        (DestinationUnavailableError("SlowDown"), True),
        (StoreUnavailableError("DynamoDB down"), True),
        (UrlExpiredError(), False),  # refreshed once already: retrying the same URL cannot help
        (UrlRefusedError(), False),
        (ChecksumMismatchError("a" * 64, "b" * 64), False),
        (ValueError("a bug"), False),
    ],
)
def test_only_transient_faults_are_retried(error: Exception, retryable: bool) -> None:
    """Transient types (and DynamoDB outages) retry; permanent faults and bugs never do."""
    assert _retryable(error) is retryable


def wait_after(error: Exception, tuning: TransferTuning) -> float:
    deps: Any = SimpleNamespace(
        jobs=None,
        lease_seconds=30,
        tuning=tuning,
        stop=threading.Event(),
        provider=None,
        clock=SystemClock(),
    )
    run = FileRun(deps, make_job("accounts"), "me", reclaimed=False, on_heartbeat=None)
    state = RetryCallState(Retrying(), fn=None, args=(), kwargs={})
    state.set_exception((type(error), error, None))
    return run._wait(state)


def test_retry_after_is_honored_up_to_its_cap() -> None:
    """A 503's Retry-After lengthens the backoff; a huge one is capped."""
    tuning = TransferTuning(retry_wait_s=0.01, retry_wait_max_s=0.05, retry_after_max_s=10)
    assert wait_after(SourceUnavailableError("503", retry_after_s=7), tuning) == 7
    assert wait_after(SourceUnavailableError("503", retry_after_s=3600), tuning) == 10
    assert wait_after(SourceUnavailableError("503"), tuning) <= 0.05


def test_the_visibility_margin_is_a_tenth_of_the_lease_unless_set() -> None:
    """Default margin: lease/10 rounded up, at least 1 s; an explicit margin wins."""
    assert TransferTuning().margin_s(300) == 30
    assert TransferTuning().margin_s(3) == 1
    assert TransferTuning(visibility_margin_s=5).margin_s(300) == 5


def test_only_finished_outcomes_acknowledge() -> None:
    """BUSY, RELEASED, NO_TIME, FEED_UNKNOWN, SLOW and UNAVAILABLE keep the message; every
    other outcome deletes it."""
    kept = {o for o in Outcome if not ProcessResult(o).acknowledge}
    assert kept == {
        Outcome.BUSY,
        Outcome.RELEASED,
        Outcome.NO_TIME,
        Outcome.FEED_UNKNOWN,
        Outcome.SLOW,
        Outcome.UNAVAILABLE,
    }


def test_part_size_grows_so_no_file_needs_more_than_10000_parts() -> None:
    """8 MiB parts up to 78 GiB; beyond, whole-MiB parts that keep the count within S3's 10,000."""
    from dlpipe.services.download.transfer import MAX_PARTS, MIB, TransferTuning

    tuning = TransferTuning()
    assert tuning.part_bytes_for(None) == 8 * MIB
    assert tuning.part_bytes_for(MAX_PARTS * 8 * MIB) == 8 * MIB
    for size in (MAX_PARTS * 8 * MIB + 1, 100 * 1024**3, 5 * 1024**4):
        part = tuning.part_bytes_for(size)
        assert part % MIB == 0
        assert -(-size // part) <= MAX_PARTS, size

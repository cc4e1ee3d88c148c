"""DynamoDB unavailable to a downloader past the client's retries (StoreUnavailableError): an
outcome with a short, growing backoff, never an exception that leaves the message hidden for
a lease + margin; a claim already held is settled (completed or released) once the store
answers again, not left to run out."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from structlog.testing import capture_logs

from dlpipe.domain.download_errors import SourceUnavailableError
from dlpipe.domain.errors import StoreUnavailableError
from dlpipe.domain.model import JobStatus
from dlpipe.domain.outage import WORKER_RETRY_MAX_S, worker_retry_s
from dlpipe.services.download import claim as claim_module
from dlpipe.services.download.service import Outcome
from tests.fakes.download import FakeSource
from tests.unit.services.test_download_service import URL, keypair, make_rig

__all__ = ["keypair"]  # the module-scoped fixture, shared


def unavailable(rig: Any, method: str, times: int) -> list[str]:
    """Make the fake table's `method` raise StoreUnavailableError `times` times; returns the
    list of calls made (one entry per call)."""
    real = getattr(rig.jobs, method)
    calls: list[str] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(method)
        if len(calls) <= times:
            raise StoreUnavailableError(f"DynamoDB UpdateItem: ThrottlingException ({method})")
        return real(*args, **kwargs)

    setattr(rig.jobs, method, flaky)
    return calls


def test_the_retry_grows_from_one_second_to_thirty() -> None:
    assert [worker_retry_s(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 30, 30, 30]
    assert worker_retry_s(10_000) == WORKER_RETRY_MAX_S


def test_a_claim_that_finds_dynamodb_unavailable_is_an_outcome_with_a_growing_backoff(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """No exception and no traceback: UNAVAILABLE after 1 s, doubling with each result but
    never longer than the outage so far; the job untouched; the first result that reaches
    the store resets the backoff."""
    rig = make_rig(keypair)
    unavailable(rig, "claim", times=3)
    with capture_logs() as logs:
        first = rig.service.process(rig.job.file_id)
        at_once = rig.service.process(rig.job.file_id)
        rig.clock.advance(5)
        second = rig.service.process(rig.job.file_id)
    assert (first.outcome, first.retry_after_s, first.dependency) == (
        Outcome.UNAVAILABLE,
        1,
        "DynamoDB",
    )
    # At once: capped by the outage so far; 5 s later: the schedule's third delay.
    assert (at_once.outcome, at_once.retry_after_s) == (Outcome.UNAVAILABLE, 1)
    assert (second.outcome, second.retry_after_s) == (Outcome.UNAVAILABLE, 4)
    assert not first.acknowledge
    assert (rig.stored().status, rig.stored().attempts) == (JobStatus.AVAILABLE, 0)
    assert [e["log_level"] for e in logs if "exc_info" in e] == []
    assert rig.service.process(rig.job.file_id).outcome is Outcome.COMPLETED


def test_a_completion_that_finds_dynamodb_unavailable_is_tried_again_under_the_claim(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """The file is published; its completion is throttled once: tried again 1 s later (the
    message kept hidden meanwhile), and the job completes, without a traceback."""
    rig = make_rig(keypair)
    calls = unavailable(rig, "complete", times=1)
    hidden: list[int] = []
    with capture_logs() as logs:
        result = rig.service.process(rig.job.file_id, on_heartbeat=hidden.append)
    assert result.outcome is Outcome.COMPLETED
    assert calls == ["complete", "complete"]
    assert rig.stored().status is JobStatus.COMPLETED
    assert 1 + rig.service.deps.tuning.margin_s(rig.service.deps.lease_seconds) in hidden
    assert [e["event"] for e in logs if e["event"].startswith("job.store")] == [
        "job.store_unavailable"
    ]
    assert not [e for e in logs if "exc_info" in e]


def test_a_completion_given_up_after_the_budget_releases_the_claim_once_dynamodb_answers(
    keypair: tuple[RSAPrivateKey, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The completion stays throttled past the dependency budget (3 s here); its release is
    throttled once, then goes through: the job is available again (not held for a lease)
    and the result is UNAVAILABLE, not an exception."""
    rig = make_rig(keypair)
    monkeypatch.setattr(claim_module, "DEFAULT_DEPENDENCY_BUDGET_SECONDS", 3)
    unavailable(rig, "complete", times=10**6)
    releases = unavailable(rig, "release", times=1)
    waits: list[float] = []

    def wait(seconds: float | None = None) -> bool:
        waits.append(seconds or 0)
        return False

    monkeypatch.setattr(rig.service.deps.stop, "wait", wait)
    with capture_logs() as logs:
        result = rig.service.process(rig.job.file_id)
    assert (result.outcome, result.retry_after_s) == (Outcome.UNAVAILABLE, 1)
    assert waits == [1, 2, 1]
    assert releases == ["release", "release"]
    assert (rig.stored().status, rig.stored().lease_owner) == (JobStatus.AVAILABLE, None)
    assert not [e for e in logs if "exc_info" in e]


def test_a_failed_files_outcome_that_finds_dynamodb_unavailable_is_written_once_it_answers(
    keypair: tuple[RSAPrivateKey, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source stays down (the job must end `failed`), and writing that is throttled
    once: written 1 s later under the same claim, not left to run out a lease."""
    source = FakeSource({URL: SourceUnavailableError("HTTP 503 from 127.0.0.1")})
    rig = make_rig(keypair, source=source)
    calls = unavailable(rig, "finish_unsuccessfully", times=1)
    monkeypatch.setattr(rig.service.deps.stop, "wait", lambda seconds=None: False)
    assert rig.service.process(rig.job.file_id).outcome is Outcome.FAILED
    assert calls == ["finish_unsuccessfully", "finish_unsuccessfully"]
    assert rig.stored().status is JobStatus.FAILED

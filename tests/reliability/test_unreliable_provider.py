"""Scenario 4: the provider answers 5xx, 429 with Retry-After, stalls past the client's
timeout, refuses connections, or refuses our token. A flaky provider only slows the day down;
one down for the first part of the day only delays it (the durable execution retries the
listing after suspended backoffs, in virtual time here); one down for longer than the outage
budget, or one that refuses us, ends it `failed`, saying why."""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.executor import Executor

from dlpipe import metrics
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.listing import ListingResult
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.outage import OutageBackoff
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.step_names import STEP_CREATE_BATCH, STEP_FETCH_AND_QUEUE
from tests.e2e.test_worker_kit import wait_until
from tests.provider_support import StubFactory, fast_client
from tests.reliability.rig import (
    CrashOnce,
    LogTap,
    Rig,
    Stopwatch,
    day_queued,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
LEASE_S = 10
READ_TIMEOUT_S = 0.5
FLAKY = {"error_rate": 0.3, "throttle_rate": 0.1, "stall_rate": 0.05, "stall_seconds": 2.0}
# With this seed the stub's first seven answers hold a 429, a 5xx and a stall (see the
# fault draw in dlpipe/local/stub/faults.py); the day needs at least seven answers.
FLAKY_SEED = 16


def client(stub: StubProvider, max_attempts: int) -> ProviderClient:
    """A provider client with a small read timeout that honours Retry-After (up to 1 s)."""
    return fast_client(
        stub, timeout=(1.0, READ_TIMEOUT_S), max_attempts=max_attempts, max_wait_s=1.0
    )


def fault_kinds(tap: LogTap) -> Counter[str]:
    """The provider faults the clients retried, by kind (5xx, 429, timeout)."""
    kinds: Counter[str] = Counter()
    for event in tap.events():
        if event["event"] == "provider.retry":
            reason = str(event.get("reason", ""))
            kinds["429" if "429" in reason else "5xx" if "HTTP 5" in reason else "timeout"] += 1
    return kinds


def down_client(stub_factory: StubFactory, down: str) -> ProviderClient:
    """A client of a provider that is down: a stub answering 5xx or 429, or a closed port."""
    if down == "refused":
        with socket.socket() as probe:  # bound, then closed: nothing listens there any more
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        return ProviderClient(
            f"http://127.0.0.1:{port}",
            "any-token",
            max_attempts=2,
            initial_wait_s=0.01,
            allow_http=True,
            allow_private=True,
        )
    faults = Faults(error_rate=1.0) if down == "5xx" else Faults(throttle_rate=1.0)
    return fast_client(stub_factory([], faults=faults), max_attempts=2)


@dataclass
class DownForAttempts:
    """A FileLister whose first `attempts` listings go to a provider that is down."""

    down: ProviderClient
    up: ProviderClient
    attempts: int
    calls: int = 0

    def list_files(self, date: str) -> ListingResult:
        """List through `down` until it has been asked `attempts` times, then through `up`."""
        self.calls += 1
        return (self.down if self.calls <= self.attempts else self.up).list_files(date)


class ChecksAfterWork:
    """The real flow; each completion check first lets the workers finish (real time, bounded):
    virtual time skips the poll interval they would otherwise have had."""

    def __init__(self, flow: BatchFlowService, jobs: JobsTable) -> None:
        self._flow, self._jobs = flow, jobs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._flow, name)

    def check_completion(self, batch_id: str, poll_number: int, is_last_poll: bool) -> Any:
        """Wait until no job of the batch is available or downloading, then check."""
        wait_until(lambda: not self._unfinished(batch_id), 60, "the workers to finish the day")
        return self._flow.check_completion(batch_id, poll_number, is_last_poll)

    def _unfinished(self, batch_id: str) -> bool:
        busy = (JobStatus.AVAILABLE, JobStatus.DOWNLOADING)
        return any(next(iter(self._jobs.query_by_batch(batch_id, s)), None) for s in busy)


@contextmanager
def emitted_metrics() -> Iterator[list[str]]:
    """The EMF lines emitted while the block runs."""
    lines: list[str] = []
    metrics.set_sink(lines.append)
    try:
        yield lines
    finally:
        metrics.set_sink(metrics.stdout_line)


def test_a_flaky_provider_slows_the_day_but_every_file_completes(
    rig: Rig, stub_factory: StubFactory, figures: Any
) -> None:
    """30% 5xx, 10% 429, 5% stalls on listing and re-signing: the batch completes, invariant holds."""
    entity = unique_entity()
    files = [
        StubFileSpec(f"{entity}{i}", 3000 + i, CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(8)
    ]
    expired = {f"{entity}{i}" for i in range(0, 8, 2)}  # their workers must re-sign via the API
    stub = stub_factory(
        files, faults=Faults(expired_url_entities=expired, **FLAKY), seed=FLAKY_SEED
    )
    day, tap, clock = unique_day(), LogTap("INFO"), Stopwatch()
    services = [
        rig.service(None, lease_seconds=LEASE_S, provider=lambda: client(stub, 8)) for _ in range(2)
    ]
    with tap.tapping(), rig.thread_workers(services, concurrency=2):
        result = rig.run_day(rig.flow(stub, provider=client(stub, 8)), day)
    facts = rig.check_day(
        day,
        result["batch_id"],
        stub.expected(day),
    )
    kinds = fault_kinds(tap)
    refreshed = sum(1 for e in tap.events() if e["event"] == "job.url_refreshed")
    figures(
        provider_calls=stub.request_count,
        retried=dict(kinds),
        urls_refreshed=refreshed,
        seconds=clock.seconds,
    )
    assert result["status"] == "completed"
    assert facts.by_status(JobStatus.COMPLETED) == set(stub.expected(day))
    assert refreshed >= len(expired)
    assert set(kinds) == {"5xx", "429", "timeout"}


@pytest.mark.parametrize("down", ["5xx", "429", "refused"])
def test_a_provider_down_for_the_first_minutes_of_the_day_still_completes_it(
    rig: Rig, stub_factory: StubFactory, figures: Any, down: str
) -> None:
    """Five listings fail (5xx / 429 / connection refused): the sixth, minutes later, lists the day."""
    entity, day, tap = unique_entity(), unique_day(), LogTap("INFO")
    stub = stub_factory([StubFileSpec(f"{entity}{i}", 2000 + i, CIPHER_GCM) for i in range(3)])
    lister = DownForAttempts(down_client(stub_factory, down), client(stub, 3), attempts=5)
    flow = ChecksAfterWork(rig.flow(stub, provider=lister), rig.jobs())
    with tap.tapping(), rig.thread_workers([rig.service(None, lease_seconds=LEASE_S)]):
        run = rig.run_day_virtual(flow, day)
    facts = rig.check_day(
        day,
        run.result["batch_id"],
        stub.expected(day),
    )
    delays = [OutageBackoff().delay_seconds(attempt, run.arn) for attempt in range(1, 6)]
    noted = [e for e in tap.events() if e["event"] == "batch.provider_unavailable"]
    figures(
        listings=lister.calls,
        backoff_s=delays,
        virtual_fetch_s=run.virtual_seconds(STEP_FETCH_AND_QUEUE),
        causes=sorted({str(e["cause"]) for e in noted}),
    )
    assert (run.result["status"], facts.batch.status) == ("completed", BatchStatus.COMPLETED)
    assert facts.by_status(JobStatus.COMPLETED) == set(stub.expected(day))
    assert (run.attempts(STEP_FETCH_AND_QUEUE), lister.calls) == (6, 6)
    assert run.virtual_seconds(STEP_FETCH_AND_QUEUE) >= sum(delays) >= 7 * 60
    assert [(e["attempt"], e["batch_id"]) for e in noted] == [
        (n, run.result["batch_id"]) for n in range(1, 6)
    ]
    assert run.outcome.get_step(STEP_CREATE_BATCH).attempt == 1


@pytest.mark.parametrize(
    ("outage", "cause"),
    [
        pytest.param({"error_rate": 1.0}, "HTTP 50", id="always-5xx"),
        pytest.param({"throttle_rate": 1.0}, "HTTP 429", id="always-429"),
        pytest.param({"stall_rate": 1.0, "stall_seconds": 3.0}, "ReadTimeout", id="always-stalls"),
    ],
)
def test_a_provider_down_for_longer_than_the_budget_ends_the_day_failed_saying_so(
    rig: Rig, stub_factory: StubFactory, figures: Any, outage: dict[str, float], cause: str
) -> None:
    """Down past a 30-min budget: every attempt that fit was made, then `failed`, the
    ErrorMessage `provider_unavailable: <cause> after N attempts over M min`, BatchFailed."""
    stub = stub_factory([StubFileSpec(unique_entity(), 100, CIPHER_GCM)], faults=Faults(**outage))
    day, clock, backoff = unique_day(), Stopwatch(), OutageBackoff(budget_seconds=1800)
    with emitted_metrics() as lines:
        run = rig.run_day_virtual(rig.flow(stub, provider=client(stub, 2)), day, outage=backoff)
    facts = rig.check_day(
        day,
        run.result["batch_id"],
        {},  # the provider never listed anything
    )
    delays = backoff.delays_while_down(run.arn)
    attempts = len(delays) + 1
    message = facts.batch.error_message or ""
    figures(
        provider_calls=stub.request_count,
        attempts=attempts,
        virtual_fetch_s=run.virtual_seconds(STEP_FETCH_AND_QUEUE),
        error_message=message,
        seconds=clock.seconds,
    )
    assert (run.result["status"], facts.batch.status) == ("failed", BatchStatus.FAILED)
    assert message.startswith(f"provider_unavailable: GET /v1/files: {cause}")
    assert message.endswith(f" after {attempts} attempts over {round(sum(delays) / 60)} min")
    assert run.attempts(STEP_FETCH_AND_QUEUE) == attempts
    assert stub.request_count == 2 * attempts
    assert run.virtual_seconds(STEP_FETCH_AND_QUEUE) >= sum(delays) > 1800 - 600
    assert facts.jobs == {}
    assert any('"BatchFailed":[1.0]' in line for line in lines)


def test_a_provider_refusing_our_token_fails_the_day_at_once_saying_so(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """A 401 is permanent: one request, no backoff, `failed` with `provider_refused: ...`."""
    stub = stub_factory([StubFileSpec(unique_entity(), 100, CIPHER_GCM)])
    day = unique_day()
    flow = rig.flow(stub, provider=fast_client(stub, token="not-the-provider-token-1234"))
    with emitted_metrics() as lines:
        run = rig.run_day_virtual(flow, day)
    batch = rig.batches().require(run.result["batch_id"])
    assert (run.result["status"], batch.status) == ("failed", BatchStatus.FAILED)
    assert (batch.error_message or "").startswith("provider_refused: ")
    assert "HTTP 401" in (batch.error_message or "")
    assert (stub.request_count, run.attempts(STEP_FETCH_AND_QUEUE)) == (1, 1)
    assert run.virtual_seconds(STEP_FETCH_AND_QUEUE) < 5
    assert any('"BatchFailed":[1.0]' in line for line in lines)


def test_a_crash_after_failing_the_batch_replays_to_the_same_failed_batch(
    rig: Rig, stub_factory: StubFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Provider down, then the invocation dies right after fail-batch: one batch, failed, saying why."""
    monkeypatch.setattr(Executor, "RETRY_BACKOFF_SECONDS", 0)
    stub = stub_factory(
        [StubFileSpec(unique_entity(), 100, CIPHER_GCM)], faults=Faults(error_rate=1.0)
    )
    day = unique_day()
    flow = rig.flow(stub, provider=client(stub, 2))
    crash = CrashOnce(flow, "fail_batch", after=True)
    # Budget 0: the first outage fails the day (real time here; no durable backoff to sit out).
    result = rig.run_day(flow, day, outage=OutageBackoff(budget_seconds=0))
    facts = rig.check_day(
        day,
        result["batch_id"],
        {},
    )
    assert crash.crashed
    assert (result["status"], facts.batch.status) == ("failed", BatchStatus.FAILED)
    assert (facts.batch.error_message or "").startswith("provider_unavailable: GET /v1/files: ")


def test_an_expired_url_while_the_provider_is_down_ends_failed_not_lost(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """The listing works, then the provider dies: the file needing a fresh URL ends `failed`."""
    entity, day = unique_entity(), unique_day()
    stale, fine = f"{entity}stale", f"{entity}fine"
    stub = stub_factory(
        [StubFileSpec(stale, 1000, CIPHER_GCM), StubFileSpec(fine, 1000, CIPHER_CBC)],
        faults=Faults(expired_url_entities={stale}),
    )
    batches = rig.batches()
    with ThreadPoolExecutor(1) as poller:
        running = poller.submit(rig.run_day, rig.flow(stub, provider=client(stub, 3)), day)
        wait_until(lambda: day_queued(batches, day), 30, "the poller to queue the day")
        stub.faults.set(error_rate=1.0)  # down before any worker asks for a fresh URL
        services = [rig.service(None, lease_seconds=LEASE_S, provider=lambda: client(stub, 3))]
        with rig.thread_workers(services):
            result = running.result(timeout=150)
    facts = rig.check_day(
        day,
        result["batch_id"],
        stub.expected(day),
    )
    job = facts.jobs[f"{stale}-{day}"]
    assert (result["status"], job.status) == ("failed", JobStatus.FAILED)
    assert (job.error_message or "").startswith("provider_unavailable: ")
    assert facts.by_status(JobStatus.COMPLETED) == {f"{fine}-{day}"}

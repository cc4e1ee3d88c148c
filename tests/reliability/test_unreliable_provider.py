"""Scenario 4: the provider answers 5xx, 429 with Retry-After, or stalls past the client's
timeout. A flaky provider only slows the day down; a dead one ends it `failed`, saying why."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.executor import Executor

from provider.client import ProviderClient
from provider.crypto import CIPHER_CBC, CIPHER_GCM
from provider.stub import StubProvider
from provider.stub_faults import Faults
from provider.stub_publish import StubFileSpec
from records.model import BatchStatus, JobStatus
from tests.e2e.test_worker_kit import wait_until
from tests.provider_support import StubFactory, fast_client
from tests.reliability.invariant import check_day
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
# fault draw in provider/stub_faults.py); the day needs at least seven answers.
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
    facts = check_day(
        rig.clients,
        jobs_table=rig.provisioned.jobs_table,
        batches_table=rig.provisioned.batches_table,
        bucket=rig.bucket,
        dlq_url=rig.queues.dlq_url,
        date=day,
        batch_id=result["batch_id"],
        expected=stub.expected(day),
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


@pytest.mark.parametrize(
    "outage",
    [
        pytest.param({"error_rate": 1.0}, id="always-5xx"),
        pytest.param({"throttle_rate": 1.0}, id="always-429"),
        pytest.param({"stall_rate": 1.0, "stall_seconds": 3.0}, id="always-stalls"),
    ],
)
def test_a_provider_that_never_answers_ends_the_batch_failed_saying_so(
    rig: Rig, stub_factory: StubFactory, figures: Any, outage: dict[str, float]
) -> None:
    """100% failure: the run returns `failed`, the batch is failed with a provider ErrorMessage."""
    stub = stub_factory([StubFileSpec(unique_entity(), 100, CIPHER_GCM)], faults=Faults(**outage))
    day, clock = unique_day(), Stopwatch()
    result = rig.run_day(rig.flow(stub, provider=client(stub, 3)), day)
    facts = check_day(
        rig.clients,
        jobs_table=rig.provisioned.jobs_table,
        batches_table=rig.provisioned.batches_table,
        bucket=rig.bucket,
        dlq_url=rig.queues.dlq_url,
        date=day,
        batch_id=result["batch_id"],
        expected={},  # the provider never listed anything
    )
    message = facts.batch.error_message or ""
    figures(provider_calls=stub.request_count, error_message=message, seconds=clock.seconds)
    assert (result["status"], facts.batch.status) == ("failed", BatchStatus.FAILED)
    assert message.startswith("provider: provider unavailable for /v1/files")
    assert "after 3 attempts" in message
    assert facts.jobs == {}
    assert stub.request_count == 3


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
    result = rig.run_day(flow, day)
    facts = check_day(
        rig.clients,
        jobs_table=rig.provisioned.jobs_table,
        batches_table=rig.provisioned.batches_table,
        bucket=rig.bucket,
        dlq_url=rig.queues.dlq_url,
        date=day,
        batch_id=result["batch_id"],
        expected={},
    )
    assert crash.crashed
    assert (result["status"], facts.batch.status) == ("failed", BatchStatus.FAILED)
    assert "provider unavailable" in (facts.batch.error_message or "")


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
    facts = check_day(
        rig.clients,
        jobs_table=rig.provisioned.jobs_table,
        batches_table=rig.provisioned.batches_table,
        bucket=rig.bucket,
        dlq_url=rig.queues.dlq_url,
        date=day,
        batch_id=result["batch_id"],
        expected=stub.expected(day),
    )
    job = facts.jobs[f"{stale}-{day}"]
    assert (result["status"], job.status) == ("failed", JobStatus.FAILED)
    assert (job.error_message or "").startswith("provider_unavailable: ")
    assert facts.by_status(JobStatus.COMPLETED) == {f"{fine}-{day}"}

"""Scenario 2: every message the poller sends arrives three times and competing workers take
the copies at once; each file is still published once and completed once."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from dlpipe.adapters.sink import MIN_PART_BYTES
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_worker_kit import wait_until
from tests.e2e.test_worker_signals import point_at
from tests.integration.test_downloader_kit import Relay
from tests.provider_support import StubFactory
from tests.reliability.invariant import destination_key
from tests.reliability.rig import (
    CallCounter,
    LogTap,
    RecordingQueue,
    Stopwatch,
    counted_clients,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
COPIES = 3
_DEFERRED = "message.deferred"  # a BUSY copy replaced by one delayed until the claim ends
LEASE_S = 4
MIB = 1024 * 1024
# Small files go out as one PutObject, larger ones by multipart upload: both publish paths.
SIZES = (0, 1000, 70_000, MIN_PART_BYTES + 4097)


def specs(entity: str, n: int) -> list[StubFileSpec]:
    """n files cycling through SIZES, CBC and GCM alternating."""
    return [
        StubFileSpec(f"{entity}{i}", SIZES[i % len(SIZES)], CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(n)
    ]


def run_duplicates(
    make_rig: Any, stub_factory: StubFactory, figures: Any, *, files: int, workers: int
) -> None:
    """Triple every send, let `workers` Worker instances (2 threads each) compete, then check."""
    rig = make_rig(visibility_s=10, max_receive=4)
    day, stub = unique_day(), stub_factory(specs(unique_entity(), files))
    expected = stub.expected(day)
    queue = RecordingQueue(rig.clients.sqs, rig.queues.url, copies=COPIES)
    counters = [CallCounter() for _ in range(workers)]
    services = [
        rig.service(stub, lease_seconds=LEASE_S, clients=counted_clients(c)) for c in counters
    ]
    clock, tap = Stopwatch(), LogTap("INFO")
    with tap.tapping(), rig.thread_workers(services, concurrency=2):
        result = rig.run_day(rig.flow(stub, queue=queue), day)
        # Copies that met a live claim come back once it ends: wait until all are consumed.
        rig.wait_queue_empty(timeout_s=90)
    facts = rig.check_day(
        day,
        result["batch_id"],
        expected,
    )
    published = sum((c.published for c in counters), Counter[str]())
    events = tap.events()
    per_file = {
        name: Counter(e.get("file_id") for e in events if e["event"] == name)
        for name in ("job.published", "job.completed", "job.already_done", "job.busy", _DEFERRED)
    }
    figures(
        files=files,
        copies_sent=sum(queue.sent.values()),
        worker_threads=2 * workers,
        publishes=sum(published.values()),
        already_done=sum(per_file["job.already_done"].values()),
        busy=sum(per_file["job.busy"].values()),
        deferred=sum(per_file[_DEFERRED].values()),
        dead_letters=len(facts.dead_letters),
        seconds=clock.seconds,
    )
    assert result["status"] == "completed"
    assert queue.sent == dict.fromkeys(expected, COPIES)
    assert published == {destination_key(j): 1 for j in facts.jobs.values()}
    assert per_file["job.published"] == dict.fromkeys(expected, 1)
    assert per_file["job.completed"] == dict.fromkeys(expected, 1)
    assert {f: j.attempts for f, j in facts.jobs.items()} == dict.fromkeys(expected, 1)
    assert facts.by_status(JobStatus.COMPLETED) == set(expected)
    assert facts.dead_letters == []


def test_each_message_three_times_to_competing_workers_publishes_each_file_once(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """8 files x 3 copies, 3 workers x 2 threads: one publish, one completion, one claim per file."""
    run_duplicates(make_rig, stub_factory, figures, files=8, workers=3)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_triple_delivery_of_a_larger_day_publishes_each_file_once(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """60 files x 3 copies, 4 workers x 2 threads: exactly one publish per file."""
    run_duplicates(make_rig, stub_factory, figures, files=60, workers=4)


def test_a_duplicate_of_a_long_healthy_download_stays_out_of_the_dlq(
    make_rig: Any, stub_factory: StubFactory
) -> None:
    """Two copies, a 12 s download, 2 s lease, maxReceiveCount 2: the file completes, DLQ empty."""
    rig = make_rig(visibility_s=5, max_receive=2)
    entity, day = unique_entity(), unique_day()
    stub = stub_factory([StubFileSpec(entity, 12 * MIB, CIPHER_CBC)])
    file_id, jobs = f"{entity}-{day}", rig.jobs()
    queue = RecordingQueue(rig.clients.sqs, rig.queues.url, copies=2)
    with ThreadPoolExecutor(1) as poller:
        running = poller.submit(rig.run_day, rig.flow(stub, queue=queue), day, polls=120)
        wait_until(lambda: jobs.get(file_id) is not None, 30, "the poller to write the job")
        relay = Relay(jobs.require(file_id).presigned_url, bytes_per_s=MIB, slow_requests=1)
        with relay.running():
            point_at(jobs, file_id, relay.url)
            services = [rig.service(stub, lease_seconds=2) for _ in range(2)]
            with rig.thread_workers(services):
                result = running.result(timeout=150)
    facts = rig.check_day(
        day,
        result["batch_id"],
        stub.expected(day),
    )
    assert (result["status"], facts.jobs[file_id].status) == ("completed", JobStatus.COMPLETED)
    assert facts.dead_letters == []

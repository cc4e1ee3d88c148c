"""Scenario 1b: a worker frozen (SIGSTOP) mid-upload past its lease, taken over, then thawed
(SIGCONT): the late worker publishes nothing and overwrites nothing; one verified object."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from dlpipe.domain.cipher_format import CIPHER_CBC
from dlpipe.domain.model import JobStatus
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_worker_kit import wait_until
from tests.e2e.test_worker_signals import point_at
from tests.integration.test_downloader_kit import Relay, uploads_in_progress
from tests.provider_support import StubFactory
from tests.reliability.rig import stopping_all, takeover_only, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
MIB = 1024 * 1024
LEASE_S = 3
FILE_SIZE = 12 * MIB  # two parts of the worker's 8 MiB part size
TRICKLE = 2 * MIB  # bytes per second through the relay for the frozen worker's download


def test_a_frozen_worker_thawed_after_a_takeover_publishes_nothing(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """SIGSTOP mid-upload, successor completes, SIGCONT: the thawed worker only logs lease_lost."""
    rig = make_rig(visibility_s=5)
    entity, day = unique_entity(), unique_day()
    stub = stub_factory([StubFileSpec(entity, FILE_SIZE, CIPHER_CBC)])
    file_id, key = f"{entity}-{day}", f"{entity}/{day}/{entity}-{day}"
    jobs, pool = rig.jobs(), []
    with ThreadPoolExecutor(1) as poller, stopping_all(pool):
        running = poller.submit(rig.run_day, takeover_only(rig.flow(stub)), day, polls=120)
        wait_until(lambda: jobs.get(file_id) is not None, 30, "the poller to write the job")
        relay = Relay(jobs.require(file_id).presigned_url, bytes_per_s=TRICKLE, slow_requests=1)
        with relay.running():
            point_at(jobs, file_id, relay.url)
            frozen = rig.worker_process(stub, "frozen", lease_seconds=LEASE_S)
            pool.append(frozen)
            wait_until(
                lambda: uploads_in_progress(rig.clients, rig.bucket, key), 30, "a part upload"
            )
            os.kill(frozen.pid, signal.SIGSTOP)
            try:
                successor = rig.worker_process(stub, "successor", lease_seconds=LEASE_S)
                pool.append(successor)
                wait_until(lambda: jobs.require(file_id).is_terminal, 60, "the takeover to finish")
            finally:
                os.kill(frozen.pid, signal.SIGCONT)
            wait_until(lambda: "job.lease_lost" in frozen.event_names(), 30, "the thawed worker")
            result = running.result(timeout=150)
    facts = rig.check_day(
        day,
        result["batch_id"],
        stub.expected(day),
    )
    thawed, took_over = frozen.events(), successor.events()
    figures(
        frozen_events=[e["event"] for e in thawed if e["event"].startswith(("job.", "upload."))],
        successor_claim=[e.get("decision") for e in took_over if e["event"] == "job.claimed"],
        attempts=facts.jobs[file_id].attempts,
    )
    assert result["status"] == "completed"
    assert facts.by_status(JobStatus.COMPLETED) == {file_id}
    assert "job.published" not in frozen.event_names()
    assert [e.get("decision") for e in took_over if e["event"] == "job.claimed"] == ["take_over"]
    assert [e["event"] for e in took_over].count("job.published") == 1

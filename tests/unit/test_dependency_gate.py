"""The worker's pause while SQS or DynamoDB is down: one probe at a time after a pause
growing to 30 s, one log line when the outage starts and one when it ends."""

from __future__ import annotations

import threading
import time
from typing import Any

from botocore.exceptions import EndpointConnectionError
from structlog.testing import capture_logs

from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.entrypoints.dependency_gate import DependencyGate
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.services.download.service import Outcome, ProcessResult
from tests.unit.test_downloader_dispatch import QUEUE_URL, FakeService
from tests.unit.test_worker_visibility import ReceivingSqs, message


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_gate_pauses_with_a_growing_backoff_lets_one_probe_and_logs_once() -> None:
    clock = Clock()
    gate = DependencyGate(threading.Event(), clock)
    assert gate.try_turn() == 0
    with capture_logs() as logs:
        pauses = []
        for _ in range(7):
            pauses.append(gate.failed("DynamoDB", "unavailable"))
            assert gate.try_turn() == pauses[-1]  # nobody receives during the pause
            clock.now += pauses[-1]
        assert pauses == [1, 2, 4, 8, 16, 30, 30]
        assert gate.try_turn() == 0  # one probe...
        assert gate.try_turn() > 0  # ...at a time
        gate.succeeded("SQS")  # a receive went through: DynamoDB may still be down
        assert gate.down == "DynamoDB"
        gate.succeeded()  # a file went through: up
        assert (gate.down, gate.try_turn()) == (None, 0)
    events = [(e["event"], e.get("dependency")) for e in logs]
    assert events == [
        ("worker.dependency_down", "DynamoDB"),
        ("worker.dependency_up", "DynamoDB"),
    ]
    assert (logs[1]["down_s"], logs[1]["failed_calls"]) == (91.0, 7)


class DownSqs(ReceivingSqs):
    """Refuses every receive until `up_at` (monotonic), then hands out its messages."""

    def __init__(self, messages: list[dict[str, str]], down_s: float) -> None:
        super().__init__(messages)
        self.up_at = time.monotonic() + down_s
        self.refused = 0

    def receive_message(self, **kwargs: Any) -> dict[str, Any]:
        if time.monotonic() < self.up_at:
            self.refused += 1
            raise EndpointConnectionError(endpoint_url=QUEUE_URL)
        return super().receive_message(**kwargs)


def test_a_worker_pauses_receiving_while_sqs_is_down_and_logs_the_outage_once() -> None:
    """SQS refuses receives for 2.5 s, four threads: a few probes, not a receive per thread
    per backoff; one down and one up line; the waiting message is then processed."""
    service: Any = FakeService({"a-2026-02-28": ProcessResult(Outcome.COMPLETED)})
    sqs = DownSqs([message(1, "a-2026-02-28")], down_s=2.5)
    options = WorkerOptions(concurrency=4, wait_seconds=0, exit_when_idle_s=5.0)
    worker = Worker(service, DownloadQueue(sqs, QUEUE_URL), options)  # type: ignore[arg-type]
    with capture_logs() as logs:
        assert worker.run() == 0
    failed = sqs.refused
    events = [e["event"] for e in logs if e["event"].startswith("worker.")]
    assert events.count("worker.dependency_down") == 1
    assert events.count("worker.dependency_up") == 1
    assert "worker.receive_failed" not in events
    assert service.calls == ["a-2026-02-28"]
    assert failed <= 8, f"{failed} receives in a 2.5 s SQS outage"


def test_a_worker_pauses_while_files_find_dynamodb_unavailable() -> None:
    """Files that find DynamoDB unavailable pause the worker like a failed receive: one
    down line, one up line when a file goes through."""
    results = {
        "a-2026-02-28": ProcessResult(Outcome.UNAVAILABLE, 1, dependency="DynamoDB"),
        "b-2026-02-28": ProcessResult(Outcome.COMPLETED),
    }
    service: Any = FakeService(results)  # type: ignore[arg-type]
    sqs = ReceivingSqs([message(1, "a-2026-02-28"), message(2, "b-2026-02-28")])
    options = WorkerOptions(concurrency=1, wait_seconds=0, max_messages=2, exit_when_idle_s=1.5)
    worker = Worker(service, DownloadQueue(sqs, QUEUE_URL), options)  # type: ignore[arg-type]
    with capture_logs() as logs:
        worker.run()
    events = [e["event"] for e in logs if e["event"].startswith("worker.dependency")]
    assert events == ["worker.dependency_down", "worker.dependency_up"]


def test_failures_met_during_a_pause_do_not_lengthen_it() -> None:
    """Threads whose receives were already open when the outage began fail at once, together:
    the pause grows per probe, not per such failure, so it stays near the outage's length."""
    clock = Clock()
    gate = DependencyGate(threading.Event(), clock)
    with capture_logs() as logs:
        assert [gate.failed("DynamoDB", "unavailable") for _ in range(4)] == [1, 1, 1, 1]
        clock.now += 1
        assert gate.try_turn() == 0
        assert gate.failed("DynamoDB", "unavailable") == 2
        gate.succeeded()
    assert logs[-1]["failed_calls"] == 5

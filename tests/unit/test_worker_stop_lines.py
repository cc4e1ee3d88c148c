"""A pool's workers (the download queue's and the large-file queue's) each log worker.stopping
and worker.stopped naming their queue, as worker.started does: with the large-file queue that
`dlpipe local up` provisions, two bare lines read as one event logged twice."""

from __future__ import annotations

import threading
from typing import Any

from structlog.testing import capture_logs

from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.entrypoints.pool import WorkerPool
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from tests.e2e.test_worker_kit import wait_until
from tests.unit.test_downloader_dispatch import QUEUE_URL, FakeService, FakeSqs

STOP_EVENTS = ("worker.stopping", "worker.stopped")


def _stopped_pool(labels: list[str | None]) -> list[dict[str, Any]]:
    """The log records of a pool of one worker per label (None: the default label), started
    and then stopped."""
    service: FakeService = FakeService({})
    options = WorkerOptions(wait_seconds=0, grace_s=0.1)
    workers = [
        Worker(service, DownloadQueue(FakeSqs(), QUEUE_URL), options)  # type: ignore[arg-type]
        if label is None
        else Worker(service, DownloadQueue(FakeSqs(), QUEUE_URL), options, label=label)  # type: ignore[arg-type]
        for label in labels
    ]
    pool = WorkerPool(workers)
    with capture_logs() as logs:
        running = threading.Thread(target=pool.run, daemon=True)
        running.start()
        wait_until(
            lambda: sum(e["event"] == "worker.started" for e in logs) == len(workers), 60, "starts"
        )
        pool.request_stop("test")
        running.join(10)
        assert not running.is_alive()
    return [dict(e) for e in logs]


def test_each_workers_stop_lines_name_its_queue_and_none_is_a_duplicate() -> None:
    """`downloads` and `large`: one worker.stopping (with the reason) and one worker.stopped
    each, told apart by `queue`; no two stop lines are the same line."""
    logs = _stopped_pool([None, "large"])
    for event in STOP_EVENTS:
        queues = sorted(str(e.get("queue")) for e in logs if e["event"] == event)
        assert (event, queues) == (event, ["downloads", "large"])
    stopping = [e for e in logs if e["event"] == "worker.stopping"]
    assert {e.get("reason") for e in stopping} == {"test"}
    lines = [tuple(sorted(e.items())) for e in logs if e["event"] in STOP_EVENTS]
    assert len(set(lines)) == len(lines) == 4


def test_a_lone_workers_stop_lines_name_its_queue_too() -> None:
    """No large-file queue: one worker.stopping and one worker.stopped, queue `downloads`."""
    logs = _stopped_pool([None])
    stops = [(e["event"], e.get("queue")) for e in logs if e["event"] in STOP_EVENTS]
    assert stops == [("worker.stopping", "downloads"), ("worker.stopped", "downloads")]

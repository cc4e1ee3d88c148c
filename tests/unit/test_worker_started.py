"""A pool's workers (the download queue's and the large-file queue's) each log worker.started
naming their queue: two bare `worker.started` lines read as one event logged twice."""

from __future__ import annotations

import threading

from structlog.testing import capture_logs

from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.entrypoints.pool import WorkerPool
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from tests.e2e.test_worker_kit import wait_until
from tests.unit.test_downloader_dispatch import QUEUE_URL, FakeService, FakeSqs


def test_each_workers_started_line_names_its_queue() -> None:
    """`downloads` and `large`: one worker.started each, told apart by `queue`."""
    service: FakeService = FakeService({})
    options = WorkerOptions(wait_seconds=0, grace_s=0.1)
    pool = WorkerPool(
        [
            Worker(service, DownloadQueue(FakeSqs(), QUEUE_URL), options),  # type: ignore[arg-type]
            Worker(service, DownloadQueue(FakeSqs(), QUEUE_URL), options, label="large"),  # type: ignore[arg-type]
        ]
    )
    with capture_logs() as logs:
        running = threading.Thread(target=pool.run, daemon=True)
        running.start()
        wait_until(lambda: sum(e["event"] == "worker.started" for e in logs) == 2, 60, "starts")
        pool.request_stop("test")
        running.join(10)
    started = [e.get("queue") for e in logs if e["event"] == "worker.started"]
    assert sorted(map(str, started)) == ["downloads", "large"]

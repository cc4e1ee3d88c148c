"""One long-poll Worker per download queue (main and, when deployed, large-file), run as one.

The large-file queue is consumed only here: the downloader Lambda's event source is the
main queue alone. Each queue gets its own `concurrency` threads, so a quiet large queue
never delays the main one's long polls. `build_worker_pool` runs one on the queues
dlpipe.bootstrap.download builds.
"""

from __future__ import annotations

import threading

from dlpipe.adapters.aws import AwsClients
from dlpipe.bootstrap.download import build_service, build_worker_queues
from dlpipe.config import Settings
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.services.download.service import DownloadService


class WorkerPool:
    """Workers run side by side; stopping the pool stops each of them."""

    def __init__(self, workers: list[Worker]) -> None:
        self.workers = workers

    def request_stop(self, reason: str = "signal") -> None:
        """Stop every worker (safe in a signal handler, like Worker.request_stop)."""
        for worker in self.workers:
            worker.request_stop(reason)

    def run(self) -> int:
        """Run every worker until all have stopped; returns the process exit code (0)."""
        threads = [
            threading.Thread(target=w.run, name=f"worker-{n}", daemon=True)
            for n, w in enumerate(self.workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            # Joined in short slices so the main thread still runs signal handlers.
            while thread.is_alive():
                thread.join(timeout=0.5)
        return 0


def build_worker_pool(
    settings: Settings,
    clients: AwsClients,
    options: WorkerOptions,
    *,
    service: DownloadService | None = None,
    stop: threading.Event | None = None,
) -> WorkerPool:
    """A Worker on the main queue, and one on the large-file queue if it is configured
    (`dlpipe worker`, and the local day's downloaders)."""
    service = service or build_service(settings, clients, stop=stop)
    queues = build_worker_queues(settings, clients)
    return WorkerPool([Worker(service, queue, options) for queue in queues])

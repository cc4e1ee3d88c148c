"""One long-poll Worker on the feeds' download queues and one on the large-file queue (when
deployed), run as one.

The feeds' queues share one Worker's `concurrency` threads through a LaneInbox (a cap per feed,
fair between feeds: dlpipe.entrypoints.lanes); a deployment whose feeds all share one queue
polls it directly. The large-file queue is consumed only here (the downloader Lambda's event
sources are the feeds' queues) and gets its own `concurrency` threads, so a quiet large queue
never delays the others' long polls. `build_worker_pool` runs one on the queues
dlpipe.bootstrap.download builds.
"""

from __future__ import annotations

import threading

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.bootstrap.download import build_service
from dlpipe.bootstrap.worker_queues import build_worker_queues
from dlpipe.config import Settings
from dlpipe.entrypoints.lanes import LaneInbox
from dlpipe.entrypoints.receive_window import receive_window_s
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.log import get_logger
from dlpipe.services.download.service import DownloadService

log = get_logger()


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
    main: DownloadQueue | LaneInbox = queues.feeds[0].queue
    if len(queues.feeds) > 1 or queues.shared:
        main = LaneInbox(
            queues.feeds,
            options.concurrency,
            wait_s=options.wait_seconds,
            visibility_s=receive_window_s(service),
            refresh=queues.feed_queues,
        )
        log.info("worker.lanes", caps=main.caps())
    workers = [Worker(service, main, options)]
    if queues.large is not None:
        workers.append(Worker(service, queues.large, options, label="large"))
    return WorkerPool(workers)

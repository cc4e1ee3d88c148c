"""What a long-poll worker (`dlpipe worker`, the ECS task) consumes: each feed's download
queue and the large-file queue, read again as feeds are deployed. Apart from the downloader's
wiring (download.py) because only the long-poll worker lists the feeds: the Lambda answers
the queue its records come from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.download_queue import CopyRoute, DownloadQueue
from dlpipe.bootstrap.download import FeedRouter
from dlpipe.bootstrap.feed_source import configured_feeds, feed_source
from dlpipe.config import Settings
from dlpipe.domain.feeds import DEFAULT_FEED, DEFAULT_FEED_NAME
from dlpipe.feed_settings import settings_for_feed
from dlpipe.log import get_logger

log = get_logger()


@dataclass(frozen=True)
class FeedQueue:
    """One download queue and the feeds whose files it carries, with their share of a
    worker's threads (the smallest of theirs, when feeds share a queue)."""

    name: str  # the feeds, comma-separated
    queue: DownloadQueue
    share_percent: int


@dataclass(frozen=True)
class WorkerQueues:
    """What a long-poll worker consumes: each feed's queue, and the shared large-file queue;
    `feed_queues()` reads the feeds again (a feed added later gets its queue consumed)."""

    feeds: list[FeedQueue]
    large: DownloadQueue | None
    feed_queues: Callable[[], list[FeedQueue]]
    shared: bool  # True: the feeds' queues may change (named feeds are deployed by SSM)


def build_worker_queues(settings: Settings, clients: AwsClients) -> WorkerQueues:
    """Each known feed's download queue (the default feed's is DLPIPE_QUEUE_URL; a named feed
    without its own shares it), and the large-file queue if it is configured (`dlpipe worker`,
    and the local day's downloaders); delayed copies of messages are routed by size and feed."""
    router = FeedRouter(clients.sqs, settings, feed_source(settings, clients))
    main = router.default

    def feed_queues() -> list[FeedQueue]:
        return _feed_queues(settings, clients, router.copy_queue_url)

    large = main.large_queue_url
    return WorkerQueues(
        feeds=feed_queues(),
        large=DownloadQueue(clients.sqs, large, router.copy_queue_url) if large else None,
        feed_queues=feed_queues,
        shared=bool(settings.feeds_parameter_path),
    )


def _feed_queues(settings: Settings, clients: AwsClients, copy_to: CopyRoute) -> list[FeedQueue]:
    """The configured feeds' queues; a feeds parameter path that cannot be listed now (or
    whose feeds break the prefix rule) leaves the named feeds deployed there out until the
    next read (logged)."""

    def unlisted(exc: Exception) -> None:
        log.warning("worker.feeds_unlisted", path=settings.feeds_parameter_path, error=str(exc))

    feeds = {
        DEFAULT_FEED_NAME: DEFAULT_FEED,
        **configured_feeds(settings, clients, unlisted=unlisted),
    }
    by_url: dict[str, list[tuple[str, int]]] = {}
    for name, feed in feeds.items():
        own = settings_for_feed(settings, feed)
        by_url.setdefault(own.require("queue_url"), []).append((name, own.max_share_percent))
    return [
        FeedQueue(
            ",".join(name for name, _ in members),
            DownloadQueue(clients.sqs, url, copy_to),
            min(share for _, share in members),
        )
        for url, members in by_url.items()
    ]

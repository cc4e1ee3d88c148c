"""Who holds the download capacity: per feed known to the deployment, its queue's depth
(GetQueueAttributes, once per queue), its oldest available job and how many of its available
jobs were given back as slow, from one bounded StatusIndex read shared by every feed.

A feed's queue is `settings_for_feed(settings, feed).queue_url`: its own when the deployment
gave it one, else DLPIPE_QUEUE_URL, shared with the default feed. The large-file queue is
shared by every feed and shown on its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from dlpipe.domain.download_errors import ProviderSlowError
from dlpipe.domain.feeds import DEFAULT_FEED
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.outcome import error_code
from dlpipe.domain.waiting import FeedQueue, FeedQueues, QueueDepth
from dlpipe.feed_settings import settings_for_feed
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import feed_order, record_feed

# The available jobs read, oldest first, to find each feed's oldest and count its slow ones:
# one StatusIndex Query page (up to ~1 MB, ~128 RCU) however long the backlog. Past it, a
# feed's oldest wait is unknown and its slow count a lower bound (FeedQueues.truncated).
AVAILABLE_READ_CAP = 1000
SLOW_CODE = ProviderSlowError.code


def feed_queue_urls(ops: OpsContext) -> dict[str, str | None]:
    """Each configured feed's download queue (None: none configured), default first; the
    default feed is always known (the settings configure it)."""
    feeds = {DEFAULT_FEED.name: DEFAULT_FEED, **ops.feeds}
    return {
        name: settings_for_feed(ops.settings, feeds[name]).queue_url for name in feed_order(feeds)
    }


def queue_depths(ops: OpsContext, urls: Mapping[str, str | None]) -> dict[str, QueueDepth]:
    """The depth of every distinct queue of `urls` and of the large-file queue, by URL (one
    GetQueueAttributes each)."""
    distinct = [*dict.fromkeys(u for u in urls.values() if u)]
    if ops.settings.large_queue_url and ops.settings.large_queue_url not in distinct:
        distinct.append(ops.settings.large_queue_url)
    return {url: QueueDepth(*ops.gauge(url).depth_and_in_flight()) for url in distinct}


def feed_queues(
    ops: OpsContext,
    urls: Mapping[str, str | None] | None = None,
    depths: Mapping[str, QueueDepth] | None = None,
) -> FeedQueues:
    """A row per feed, configured or seen among the available jobs (a feed no configuration
    names has no known queue); `urls` and `depths` when the caller has read them already."""
    urls = feed_queue_urls(ops) if urls is None else urls
    depths = queue_depths(ops, urls) if depths is None else depths
    available = list(ops.jobs().query_by_status(JobStatus.AVAILABLE, limit=AVAILABLE_READ_CAP))
    oldest, slow = _by_feed(available)
    names = feed_order([*urls, *oldest])
    sharing: dict[str, list[str]] = {}
    for name in names:
        url = urls.get(name)
        if url:
            sharing.setdefault(url, []).append(name)
    rows = []
    for name in names:
        url = urls.get(name)
        group = sharing.get(url, [name]) if url else [name]
        first = group[0] == name
        rows.append(
            FeedQueue(
                feed=name,
                queue_url=url,
                depth=depths.get(url) if url and first else None,
                oldest_available_ms=oldest.get(name),
                slow=slow.get(name, 0),
                shared_with=tuple(n for n in group if n != name),
            )
        )
    large = ops.settings.large_queue_url
    return FeedQueues(
        rows=tuple(rows),
        large=depths.get(large) if large else None,
        read_cap=AVAILABLE_READ_CAP,
        truncated=len(available) >= AVAILABLE_READ_CAP,
        now_ms=ops.now_ms(),
    )


def _by_feed(available: list[FileJob]) -> tuple[dict[str, int], dict[str, int]]:
    """Each feed's oldest available time (the read is oldest first) and its slow jobs."""
    oldest: dict[str, int] = {}
    slow: dict[str, int] = {}
    for job in available:
        feed = record_feed(job)
        oldest.setdefault(feed, job.status_updated_at_ms)
        if error_code(job.error_message) == SLOW_CODE:
            slow[feed] = slow.get(feed, 0) + 1
    return oldest, slow

"""Is anyone consuming the download queues? Their depth (GetQueueAttributes) and the oldest
`available` job (StatusIndex, one bounded Query), judged by dlpipe.domain.waiting."""

from __future__ import annotations

from collections.abc import Mapping

from dlpipe.domain.model import JobStatus
from dlpipe.domain.waiting import (
    FeedQueues,
    QueueDepth,
    Starving,
    WaitingWork,
    idle_consumer_seconds,
    starving_feeds,
)
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_queues import feed_queue_urls, queue_depths


def queue_depth(
    ops: OpsContext, depths: Mapping[str, QueueDepth] | None = None
) -> QueueDepth | None:
    """Visible and in-flight messages of every download queue together (each feed's, the
    shared one, the large-file one); None without a queue. `depths`: already read, by URL."""
    if depths is None:
        depths = queue_depths(ops, feed_queue_urls(ops))
    if not depths:
        return None
    return QueueDepth(
        sum(d.visible for d in depths.values()), sum(d.in_flight for d in depths.values())
    )


def waiting_work(ops: OpsContext, depths: Mapping[str, QueueDepth] | None = None) -> WaitingWork:
    """The queues' depth and when the oldest available job (of any date and feed: the rule
    is about the queues together) became available."""
    oldest = ops.jobs().edge_by_status(JobStatus.AVAILABLE)
    return WaitingWork(
        depth=queue_depth(ops, depths),
        oldest_available_ms=None if oldest is None else oldest.status_updated_at_ms,
        now_ms=ops.now_ms(),
    )


def idle_seconds(ops: OpsContext, work: WaitingWork) -> int | None:
    """How long no worker has taken the waiting work, past the configured threshold, or None."""
    return idle_consumer_seconds(work, ops.settings.idle_warning_seconds)


def starving(ops: OpsContext, queues: FeedQueues) -> Starving | None:
    """Which feeds' queues hold the messages in flight while another feed's work has waited
    past the configured threshold, or None."""
    return starving_feeds(queues, ops.settings.idle_warning_seconds)

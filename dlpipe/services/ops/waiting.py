"""Is anyone consuming the download queue? Its depth (GetQueueAttributes) and the oldest
`available` job (StatusIndex, one bounded Query), judged by dlpipe.domain.waiting."""

from __future__ import annotations

from dlpipe.domain.model import JobStatus
from dlpipe.domain.waiting import QueueDepth, WaitingWork, idle_consumer_seconds
from dlpipe.services.ops.context import OpsContext


def queue_depth(ops: OpsContext) -> QueueDepth | None:
    """Visible and in-flight messages of the download queues together; None without a queue."""
    settings = ops.settings
    urls = [u for u in (settings.queue_url, settings.large_queue_url) if u]
    if not urls:
        return None
    visible = in_flight = 0
    for url in urls:
        shown, held = ops.gauge(url).depth_and_in_flight()
        visible, in_flight = visible + shown, in_flight + held
    return QueueDepth(visible, in_flight)


def waiting_work(ops: OpsContext) -> WaitingWork:
    """The queues' depth and when the oldest available job (of any date: the queue is shared)
    became available."""
    oldest = ops.jobs().edge_by_status(JobStatus.AVAILABLE)
    return WaitingWork(
        depth=queue_depth(ops),
        oldest_available_ms=None if oldest is None else oldest.status_updated_at_ms,
        now_ms=ops.now_ms(),
    )


def idle_seconds(ops: OpsContext, work: WaitingWork) -> int | None:
    """How long no worker has taken the waiting work, past the configured threshold, or None."""
    return idle_consumer_seconds(work, ops.settings.idle_warning_seconds)

"""The download queues' part of `dlpipe status`: depth, the oldest wait, the idle warning, and
per feed who holds the capacity (the queues by feed, the starving warning)."""

from __future__ import annotations

from rich.console import RenderableType

from dlpipe.cli.ops.layout import Column, FitTable
from dlpipe.cli.ops.render import iso, table
from dlpipe.domain.waiting import FeedQueue, FeedQueues, WaitingWork, idle_warning, starving_warning
from dlpipe.services.ops.queries import DayStatus

# SQS gives depth only; the oldest message's age is CloudWatch's, so it is derived here.
AGE_SOURCE = "oldest available job, StatusIndex (when it became available)"
_FEED_COLUMNS = (
    Column("feed", "id"),
    Column("waiting"),
    Column("in flight"),
    Column("oldest wait"),
    Column("slow", drop=1),
    # A queue's name is one word to copy (`aws sqs ...`): never wrapped, left out rather than
    # cut (`dlpipe-downloads-feed-{feed}` beside a shared queue's note, at 80 columns); the
    # feeds it is shared with are text, beside it, and go first (put back if the name goes).
    Column("queue", "id", drop=2),
    Column("shared", drop=3),
)


def waiting_payload(found: DayStatus) -> dict[str, object]:
    """`queue`, `idle_warning`, `queues_by_feed` and `starving_warning` of `status --json`
    (queue None: no queue configured)."""
    work = found.waiting
    queue: dict[str, object] | None = None
    if work is not None and work.depth is not None:
        queue = {
            "visible": work.depth.visible,
            "in_flight": work.depth.in_flight,
            "oldest_available_age_s": work.oldest_age_s,
            "oldest_available_from": AGE_SOURCE,
        }
    warning = None if found.idle_s is None else idle_warning(found.idle_s)
    starving = None if found.starving is None else starving_warning(found.starving)
    return {
        "queue": queue,
        "idle_warning": warning,
        "queues_by_feed": _by_feed_payload(found.queues),
        "starving_warning": starving,
    }


def _by_feed_payload(queues: FeedQueues | None) -> dict[str, object] | None:
    if queues is None:
        return None
    large = queues.large
    return {
        "feeds": [_row_payload(row, queues) for row in queues.rows],
        "large_files": None
        if large is None
        else {"visible": large.visible, "in_flight": large.in_flight},
        # The available jobs read to find each feed's oldest and slow ones, oldest first:
        # truncated, a feed's oldest may be missing and `slow` is a lower bound.
        "available_read_cap": queues.read_cap,
        "available_read_truncated": queues.truncated,
    }


def _row_payload(row: FeedQueue, queues: FeedQueues) -> dict[str, object]:
    depth = row.depth
    return {
        "feed": row.feed,
        "queue_url": row.queue_url,
        # None on every feed but the first of a shared queue: its depth is shown once.
        "visible": None if depth is None else depth.visible,
        "in_flight": None if depth is None else depth.in_flight,
        "shared_with": list(row.shared_with),
        "oldest_available_age_s": row.age_s(queues.now_ms),
        "oldest_available_at": iso(row.oldest_available_ms),
        "slow": row.slow,
    }


def waiting_lines(found: DayStatus) -> list[RenderableType]:
    """The queue line, the queues by feed, and the warning lines when no worker takes the
    work or one feed's queue holds the threads."""
    lines: list[RenderableType] = [_queue_line(found.waiting)]
    if found.queues is not None and found.queues.rows:
        lines.append(queues_view(found.queues))
    if found.idle_s is not None:
        lines.append(f"WARNING: {idle_warning(found.idle_s)}")
    if found.starving is not None:
        lines.append(f"WARNING: {starving_warning(found.starving)}")
    return lines


def queues_view(queues: FeedQueues) -> FitTable:
    """A row per feed: waiting, in flight, oldest wait, slow, its queue's name and the feeds
    it shares that queue with; the shared large-file queue last."""
    more = "≥" if queues.truncated else ""
    rows: list[list[object]] = []
    for row in queues.rows:
        depth = row.depth
        age_s = row.age_s(queues.now_ms)
        oldest = (
            _span(age_s)
            if age_s is not None
            else (f"beyond {queues.read_cap}" if queues.truncated else None)
        )
        rows.append(
            [
                row.feed,
                None if depth is None else depth.visible,
                None if depth is None else depth.in_flight,
                oldest,
                f"{more}{row.slow}",
                "not configured" if row.queue_url is None else row.queue_url.rsplit("/", 1)[-1],
                _shared_text(row),
            ]
        )
    if queues.large is not None:
        rows.append(
            [
                "(large files)",
                queues.large.visible,
                queues.large.in_flight,
                None,
                None,
                None,
                "by every feed",
            ]
        )
    return table("queues by feed", _FEED_COLUMNS, rows)


def _shared_text(row: FeedQueue) -> str | None:
    """`with F, G` (and where its depth is shown) for a queue feeds share; None: its own."""
    if row.queue_url is None or not row.shared_with:
        return None
    where = "" if row.depth is not None else f"; its depth on {row.shared_with[0]}'s row"
    return f"with {', '.join(row.shared_with)}{where}"


def _queue_line(work: WaitingWork | None) -> str:
    if work is None or work.depth is None:
        return "download queue: not configured"
    age_s = work.oldest_age_s
    oldest = "no job available" if age_s is None else f"oldest available job waited {_span(age_s)}"
    depth = work.depth
    return f"download queue: {depth.visible} waiting, {depth.in_flight} in flight; {oldest}"


def _span(seconds: int) -> str:
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"

"""A feed's day against its deadline, as `dlpipe status` and the web view's day page show it.

The rule is the domain's (dlpipe/domain/freshness.py); this module picks its inputs: the feed's
deadline and time zone from the configured feeds, the settings' date offset, and the moment
the day completed (the first completed batch's last update, the write that completed it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.feeds import Feed
from dlpipe.domain.freshness import Freshness, deadline_ms, freshness
from dlpipe.domain.model import Batch, BatchStatus


def completed_at_ms(batches: Sequence[Batch]) -> int | None:
    """When the day first had a completed batch; None while none completed."""
    done = [ms_from_iso(b.updated_at) for b in batches if b.status is BatchStatus.COMPLETED]
    return min(done, default=None)


def day_freshness(
    feeds: Mapping[str, Feed],
    feed: str,
    polling_date: str,
    batches: Sequence[Batch],
    *,
    now_ms: int,
    date_offset_days: int,
) -> Freshness | None:
    """Due, on time or late for a feed that declares a deadline; None for one that does not
    (or that no feeds file names: a feed seen only in the data has no deadline here)."""
    config = feeds.get(feed)
    if config is None or config.deadline is None:
        return None
    due_ms = deadline_ms(polling_date, config.deadline, config.time_zone, date_offset_days)
    return freshness(due_ms, completed_at_ms(batches), now_ms)

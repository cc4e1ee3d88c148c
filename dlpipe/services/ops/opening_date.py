"""The date a screen without a date opens on (`dlpipe status`, `batch show`, the web view's
grid): the day the feeds' schedules ran for last (domain/schedule.py), not today in UTC."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.domain.schedule import last_scheduled_date, run_date
from dlpipe.services.ops.feed_filter import FeedChoice


def latest_scheduled_date(
    feeds: Mapping[str, Feed], feed: FeedChoice, now_ms: int, date_offset_days: int
) -> str:
    """The latest date the shown feeds' schedules ran for last: the chosen feed's, else every
    configured feed's (`feeds`), so that no feed's newest day lies past the screen's end. A
    feed configured nowhere here has no schedule to read: the default feed's stands in."""
    shown = list(feeds.values()) if feed is None else [feeds.get(feed, DEFAULT_FEED)]
    return max(_scheduled_date(f, now_ms, date_offset_days) for f in shown or [DEFAULT_FEED])


def _scheduled_date(feed: Feed, now_ms: int, date_offset_days: int) -> str:
    try:
        return last_scheduled_date(feed.schedule, feed.time_zone, now_ms, date_offset_days)
    except ValueError:
        # A cron EventBridge would refuse (so it never runs) or with no run in the years looked
        # back: its day is dated as a run now would be.
        now = dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC)
        return run_date(now, feed.time_zone, date_offset_days)

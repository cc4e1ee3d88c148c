"""The date a screen without a date opens on (`dlpipe status`, `batch show`, the web view's
grid), one rule for all of them: the day the feeds' schedules ran for last
(domain/schedule.py), not today in UTC; unless no date of the grid's default window up to it
has a batch at all (a day run long ago, as on a local stack), then the latest date before
them that has one, looked for up to LOOKBACK_DAYS back. A window with a batch opens on the
latest date even when that date has none: its missing run is what the operator must see."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.domain.schedule import last_scheduled_date, run_date
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import FeedChoice
from dlpipe.services.ops.queries import day_batches

# The grid's default width (`dlpipe ui --days`, UiOptions.days): status opens where it does.
OPENING_WINDOW_DAYS = 14
# How far back before the window a batch is looked for: a year of PollingDateIndex queries
# at most (the table is keyed by batch, so there is no "latest batch" query without a Scan;
# each probe of an empty date reads nothing), made only when the window is empty.
LOOKBACK_DAYS = 366

DayReader = Callable[[str], Sequence[Any]]  # a date's batches (PollingDateIndex), oldest first


@dataclass(frozen=True)
class OpeningDate:
    """The date opened on, the latest date a shown feed's schedule ran for, the window looked
    at up to it, and whether that window had no batch (`date` is then an older one's)."""

    date: str
    latest: str
    window_days: int
    moved: bool = False

    def moved_text(self) -> str | None:
        """What a screen that moved says at its head (the grid's hint, in words), or None."""
        if not self.moved:
            return None
        return (
            f"no batch in the {self.window_days} days up to {self.latest} (the latest date a"
            f" schedule ran for): showing {self.date}, the latest date that has one"
        )

    def to_dict(self) -> dict[str, Any]:
        """Stable keys for `--json`."""
        return {"latest": self.latest, "moved": self.moved, "window_days": self.window_days}


def opening_date(
    ops: OpsContext,
    feed: FeedChoice,
    window_days: int = OPENING_WINDOW_DAYS,
    read: DayReader | None = None,
) -> OpeningDate:
    """The date a screen of `feed` (of every feed, for None) without a date opens on (`read`:
    how a date's batches are read, e.g. the grid's reads kept for its window)."""
    latest = latest_scheduled_date(ops.feeds, feed, ops.now_ms(), ops.settings.date_offset_days)
    if read is None:
        table = ops.batches()

        def read(day: str) -> Sequence[Any]:
            return day_batches(table, day, feed=feed)

    return open_on(latest, read, window_days)


def open_on(latest: str, read: DayReader, window_days: int = OPENING_WINDOW_DAYS) -> OpeningDate:
    """The rule: `latest` when a date of the `window_days` up to it has a batch (read newest
    first, so a day that ran costs one query), else the latest date before them with one
    (LOOKBACK_DAYS at most), else `latest`."""
    last = dt.date.fromisoformat(latest)
    if any(read((last - dt.timedelta(days=n)).isoformat()) for n in range(window_days)):
        return OpeningDate(latest, latest, window_days)
    found = latest_date_with_batches(read, last - dt.timedelta(days=window_days), LOOKBACK_DAYS)
    if found is None:
        return OpeningDate(latest, latest, window_days)
    return OpeningDate(found.isoformat(), latest, window_days, moved=True)


def latest_date_with_batches(read: DayReader, start: dt.date, lookback_days: int) -> dt.date | None:
    """The latest date on or before `start` with a batch, probing one date at a time over at
    most `lookback_days`."""
    for n in range(lookback_days):
        day = start - dt.timedelta(days=n)
        if read(day.isoformat()):
            return day
    return None


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

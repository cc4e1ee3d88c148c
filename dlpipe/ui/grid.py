"""The grid: the last N polling dates, a row group per feed, a cell per batch (re-runs
stacked), one query a day (PollingDateIndex returns every feed's batches of a date)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from dlpipe.domain.model import Batch
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import feeds_shown, record_feed
from dlpipe.services.ops.opening_date import latest_scheduled_date
from dlpipe.services.ops.ports import OpsBatches
from dlpipe.services.ops.queries import day_batches

# How far back the grid looks for a batch when the default window has none: a year of
# PollingDateIndex queries at most, made only when the latest dates are empty.
LOOKBACK_DAYS = 366


@dataclass(frozen=True)
class GridDay:
    """One polling date and its batches, oldest first (a re-run follows the run it repeats)."""

    polling_date: str
    batches: list[Batch]

    @property
    def live(self) -> bool:
        """True while one of the date's batches has not ended."""
        return any(not b.is_terminal for b in self.batches)

    def of_feed(self, feed: str) -> list[Batch]:
        """The date's batches of `feed`, oldest first."""
        return [b for b in self.batches if record_feed(b) == feed]

    def run(self, index: int, feed: str | None = None) -> Batch | None:
        """The date's `index`-th batch (0 = first run) of `feed` (of any, for None), or None."""
        found = self.batches if feed is None else self.of_feed(feed)
        return found[index] if index < len(found) else None


@dataclass(frozen=True)
class Grid:
    """Columns of dates, oldest left; rows of runs (first run, then re-runs)."""

    days: list[GridDay]
    end: str
    previous_end: str
    next_end: str | None
    latest: str = ""  # the latest date a shown feed's schedule ran for: the default end
    moved: bool = False  # the default window had no batch: it opened on older dates that do
    feeds: tuple[str, ...] = ("default",)  # a row group each: configured or seen in view
    feed: str | None = None  # ?feed=: that feed's group alone

    @property
    def first(self) -> str:
        """The oldest date shown."""
        return self.days[0].polling_date if self.days else self.end

    @property
    def empty(self) -> bool:
        """True when no date in view has a batch."""
        return not any(d.batches for d in self.days)

    @property
    def runs(self) -> int:
        """How many rows: the most batches any date has (at least one)."""
        return max([1, *(len(d.batches) for d in self.days)])

    def runs_of(self, feed: str) -> int:
        """How many rows `feed`'s group has: the most batches of it any date has (at least one)."""
        return max([1, *(len(d.of_feed(feed)) for d in self.days)])

    @property
    def live(self) -> bool:
        """True while a batch in view is running: the page refreshes itself."""
        return any(d.live for d in self.days)


def grid(ops: OpsContext, days: int, end: str | None = None, feed: str | None = None) -> Grid:
    """The `days` dates up to `end`; without `end`, up to the latest date the shown feeds'
    schedules ran for (each in its own time zone), or, when those dates have no batch at all,
    up to the latest date that has one (LOOKBACK_DAYS). With `feed`, that feed's batches only."""
    latest = latest_scheduled_date(ops.feeds, feed, ops.now_ms(), ops.settings.date_offset_days)
    table = ops.batches()
    last = date.fromisoformat(end or latest)
    shown = _window(table, last, days, feed)
    moved = False
    if end is None and not any(d.batches for d in shown):
        start = last - timedelta(days=days)
        found = latest_date_with_batches(table, start, LOOKBACK_DAYS, feed)
        if found is not None:
            last, shown, moved = found, _window(table, found, days, feed), True
    later = (last + timedelta(days=min(days, (date.max - last).days))).isoformat()  # no overflow
    return Grid(
        days=shown,
        end=last.isoformat(),
        previous_end=(last - timedelta(days=days)).isoformat(),
        next_end=None if last.isoformat() >= latest else min(later, latest),
        latest=latest,
        moved=moved,
        feeds=tuple(feeds_shown(feed, ops.feeds, [b for d in shown for b in d.batches])),
        feed=feed,
    )


def _window(table: OpsBatches, last: date, days: int, feed: str | None) -> list[GridDay]:
    """The `days` dates up to `last`, oldest first: one PollingDateIndex query each."""
    dates = [(last - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]
    return [GridDay(d, day_batches(table, d, feed=feed)) for d in dates]


def latest_date_with_batches(
    table: OpsBatches, start: date, lookback_days: int, feed: str | None = None
) -> date | None:
    """The latest date on or before `start` with a batch, probing PollingDateIndex one date at a
    time over at most `lookback_days` (the table is keyed by batch, so there is no "latest
    batch" query without a Scan; each probe of an empty date reads nothing)."""
    for n in range(lookback_days):
        day = start - timedelta(days=n)
        if day_batches(table, day.isoformat(), feed=feed):
            return day
    return None

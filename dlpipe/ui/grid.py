"""The grid: the last N polling dates, a row group per feed, a cell per batch (re-runs
stacked), one query a day (PollingDateIndex returns every feed's batches of a date)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from dlpipe.domain.model import Batch
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import feeds_shown, record_feed
from dlpipe.services.ops.opening_date import latest_scheduled_date, opening_date
from dlpipe.services.ops.queries import day_batches


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
    """The `days` dates up to `end`; without `end`, up to the date every screen without a date
    opens on (services/ops/opening_date.py, with the grid's `days` as its window): the latest
    date the shown feeds' schedules ran for (each in its own time zone), or, when those dates
    have no batch at all, the latest date that has one. With `feed`, that feed's batches only.
    Each date is read once (one PollingDateIndex query)."""
    table = ops.batches()
    read: dict[str, list[Batch]] = {}

    def batches_of(day: str) -> list[Batch]:
        if day not in read:
            read[day] = day_batches(table, day, feed=feed)
        return read[day]

    if end is None:
        opened = opening_date(ops, feed, days, batches_of)
        latest, last, moved = opened.latest, date.fromisoformat(opened.date), opened.moved
    else:
        now_ms, offset = ops.now_ms(), ops.settings.date_offset_days
        latest = latest_scheduled_date(ops.feeds, feed, now_ms, offset)
        last, moved = date.fromisoformat(end), False
    shown = _window(batches_of, last, days)
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


def _window(batches_of: Callable[[str], list[Batch]], last: date, days: int) -> list[GridDay]:
    """The `days` dates up to `last`, oldest first."""
    dates = [(last - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]
    return [GridDay(d, batches_of(d)) for d in dates]

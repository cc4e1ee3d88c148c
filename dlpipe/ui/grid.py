"""The grid: the last N polling dates, a cell per batch (re-runs stacked), one query a day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from dlpipe.domain.model import Batch
from dlpipe.services.ops.context import OpsContext
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

    def run(self, index: int) -> Batch | None:
        """The date's `index`-th batch (0 = first run), or None."""
        return self.batches[index] if index < len(self.batches) else None


@dataclass(frozen=True)
class Grid:
    """Columns of dates, oldest left; rows of runs (first run, then re-runs)."""

    days: list[GridDay]
    end: str
    previous_end: str
    next_end: str | None

    @property
    def runs(self) -> int:
        """How many rows: the most batches any date has (at least one)."""
        return max([1, *(len(d.batches) for d in self.days)])

    @property
    def live(self) -> bool:
        """True while a batch in view is running: the page refreshes itself."""
        return any(d.live for d in self.days)


def latest_scheduled_date(now_ms: int, date_offset_days: int) -> str:
    """The date today's scheduled run polls (today minus the configured offset, UTC)."""
    today = datetime.fromtimestamp(now_ms / 1000, tz=UTC).date()
    return (today - timedelta(days=date_offset_days)).isoformat()


def grid(ops: OpsContext, days: int, end: str | None = None) -> Grid:
    """The `days` dates up to `end` (default: the latest scheduled date), one
    PollingDateIndex query each."""
    latest = latest_scheduled_date(ops.now_ms(), ops.settings.date_offset_days)
    last = date.fromisoformat(end or latest)
    dates = [(last - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]
    table = ops.batches()
    later = (last + timedelta(days=days)).isoformat()
    return Grid(
        days=[GridDay(d, day_batches(table, d)) for d in dates],
        end=last.isoformat(),
        previous_end=(last - timedelta(days=days)).isoformat(),
        next_end=None if last.isoformat() >= latest else min(later, latest),
    )

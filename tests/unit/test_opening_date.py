"""The one rule of the date a screen without a date opens on (`dlpipe status`, `batch show`,
the web view's grid): the latest date a schedule ran for, unless the grid's default window of
dates up to it holds no batch at all, then the latest date before them that has one."""

from __future__ import annotations

from datetime import date, timedelta

from dlpipe.cli.ui import ui_command
from dlpipe.services.ops.opening_date import (
    LOOKBACK_DAYS,
    OPENING_WINDOW_DAYS,
    OpeningDate,
    open_on,
)
from dlpipe.ui.options import UiOptions

LATEST = "2026-03-20"


def _before(days: int) -> str:
    return (date.fromisoformat(LATEST) - timedelta(days=days)).isoformat()


class Dates:
    """A PollingDateIndex of dates that have a batch, counting the dates read."""

    def __init__(self, *with_batch: str) -> None:
        self.with_batch = set(with_batch)
        self.read: list[str] = []

    def __call__(self, day: str) -> list[str]:
        self.read.append(day)
        return [f"batch of {day}"] if day in self.with_batch else []


def test_the_window_is_the_grids_default_width() -> None:
    """Status opens where the grid opens at its default width: `dlpipe ui --days` and the
    web view's own default are the rule's window."""
    days = next(p for p in ui_command.params if p.name == "days")
    assert OPENING_WINDOW_DAYS == UiOptions().days == days.default


def test_a_window_with_a_batch_opens_on_the_latest_date_even_when_that_date_has_none() -> None:
    """The latest date has no batch but a date in the window has: the screen opens on the
    latest date (its missing run is what the operator must see), reading newest first."""
    dates = Dates(_before(3))
    assert open_on(LATEST, dates) == OpeningDate(LATEST, LATEST, OPENING_WINDOW_DAYS)
    assert dates.read == [LATEST, _before(1), _before(2), _before(3)]


def test_a_window_without_a_batch_opens_on_the_latest_date_before_it_that_has_one() -> None:
    """Nothing in the window (a day run long ago, as on a local stack): the latest earlier
    date with a batch, said to have moved."""
    dates = Dates(_before(40), _before(OPENING_WINDOW_DAYS + 2))
    found = open_on(LATEST, dates)
    assert found == OpeningDate(_before(OPENING_WINDOW_DAYS + 2), LATEST, OPENING_WINDOW_DAYS, True)
    assert found.moved_text() == (
        f"no batch in the {OPENING_WINDOW_DAYS} days up to {LATEST} (the latest date a"
        f" schedule ran for): showing {_before(OPENING_WINDOW_DAYS + 2)}, the latest date"
        " that has one"
    )


def test_nothing_in_a_year_opens_on_the_latest_date_unmoved() -> None:
    """No batch in the window nor in the LOOKBACK_DAYS before it: the latest date, each date
    read once."""
    dates = Dates(_before(OPENING_WINDOW_DAYS + LOOKBACK_DAYS))
    found = open_on(LATEST, dates, window_days=3)
    assert found == OpeningDate(LATEST, LATEST, 3)
    assert found.moved_text() is None
    assert len(dates.read) == len(set(dates.read)) == 3 + LOOKBACK_DAYS

"""The deadline rule: when a feed's day is due, and on time or late by how much."""

from __future__ import annotations

import datetime as dt

import pytest

from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.freshness import deadline_ms, freshness


def test_the_deadline_is_local_time_on_the_day_after_the_polling_date() -> None:
    # 2026-07-01 in London is BST (UTC+1): 09:30 local is 08:30 UTC on the next day.
    at = deadline_ms("2026-06-30", "09:30", "Europe/London")
    assert at == ms_from_iso("2026-07-01T08:30:00Z")
    # In winter the same local time is 09:30 UTC.
    assert deadline_ms("2026-12-01", "09:30", "Europe/London") == ms_from_iso(
        "2026-12-02T09:30:00Z"
    )


def test_an_offset_of_zero_makes_the_day_due_on_itself() -> None:
    assert deadline_ms("2026-02-28", "23:00", "UTC", 0) == ms_from_iso("2026-02-28T23:00:00Z")


def test_a_deadline_skipped_by_daylight_saving_resolves_forward_not_to_an_error() -> None:
    # 2026-03-08 02:30 does not exist in New York (clocks jump 02:00 -> 03:00).
    at = deadline_ms("2026-03-07", "02:30", "America/New_York")
    assert dt.datetime.fromtimestamp(at / 1000, tz=dt.UTC).isoformat().startswith("2026-03-08T0")


@pytest.mark.parametrize(
    ("completed", "now", "label"),
    [
        (None, -1, "due"),
        (None, 0, "due"),
        (0, 10**9, "on time"),
        (-5, 1, "on time"),
        (None, 1, "late by 1 min"),
        (None, 60_000, "late by 1 min"),
        (None, 60_001, "late by 2 min"),
        (42 * 60_000, 10**9, "completed, 42 min after its deadline"),
        (60 * 60_000, 10**9, "completed, 1 h 00 min after its deadline"),
        (187 * 60_000, 10**9, "completed, 3 h 07 min after its deadline"),
        (None, 1440 * 60_000, "late by 1 day 0 h"),
        # The 392,069 min: 272 days, 6 h and 29 min.
        (392_069 * 60_000, 10**12, "completed, 272 days 6 h after its deadline"),
    ],
)
def test_freshness_labels(completed: int | None, now: int, label: str) -> None:
    assert freshness(0, completed, now).label() == label


def test_a_late_day_stays_late_by_its_completion_not_by_now() -> None:
    state = freshness(0, 3 * 60_000, 10**12)
    assert (state.kind, state.minutes_late) == ("completed_late", 3)
    assert not state.overdue


def test_only_a_day_not_complete_past_its_deadline_is_overdue() -> None:
    """Due, on time and completed late need no operator; late and not complete does."""
    assert freshness(0, None, 1).overdue
    assert not freshness(0, None, 0).overdue
    assert not freshness(0, 0, 10**9).overdue
    assert not freshness(0, 10**6, 10**9).overdue

"""Operator input parsing: ages, dates, relative days, date ranges, FileIDs and BatchIDs."""

from __future__ import annotations

import click
import pytest

import dlpipe.cli.ops.param_types as param_types
from dlpipe.cli.ops.dates import date_range, parse_day, resolve_day
from dlpipe.cli.ops.param_types import parse_duration
from tests.support import BASE_MS  # 2126-02-28T00:00:00Z


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86_400), (" 5M ", 300)]
)
def test_durations_are_read_in_seconds(text: str, seconds: int) -> None:
    """Each unit suffix multiplies to seconds; case and surrounding spaces do not matter."""
    assert parse_duration(text) == seconds


def test_zero_is_a_duration_meaning_now() -> None:
    """`0s` (any unit) is zero seconds: `--older-than 0s` means any age, not a malformed age."""
    assert [parse_duration(t) for t in ("0s", "0m")] == [0, 0]


@pytest.mark.parametrize("text", ["", "30", "m", "1.5h", "-5m", "2w", "30 m"])
def test_malformed_durations_are_refused(text: str) -> None:
    """Anything but a whole number and one of s, m, h, d is a ValueError."""
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_relative_days_resolve_against_the_clock() -> None:
    """today and yesterday are the clock's UTC date and the one before; dates pass through."""
    assert [resolve_day(parse_day(d), BASE_MS) for d in ("today", "Yesterday", "2020-02-29")] == [
        "2126-02-28",
        "2126-02-27",
        "2020-02-29",
    ]


@pytest.mark.parametrize("text", ["2026-02-30", "26-02-01", "tomorrow", "20260201"])
def test_non_dates_are_refused(text: str) -> None:
    """A non-calendar date or an unknown word is a ValueError."""
    with pytest.raises(ValueError, match="is not a date"):
        parse_day(text)


def test_date_range_is_inclusive_and_bounded() -> None:
    """Both ends are included; reversed or overlong ranges are refused."""
    assert date_range("2026-02-27", "2026-03-01", 92) == ["2026-02-27", "2026-02-28", "2026-03-01"]
    with pytest.raises(ValueError, match="after"):
        date_range("2026-03-01", "2026-02-27", 92)
    with pytest.raises(ValueError, match="at most 2"):
        date_range("2026-02-27", "2026-03-01", 2)


@pytest.mark.parametrize("text", ["3651d", "999999999d", "99999999999999999999d", "87601h"])
def test_durations_beyond_ten_years_are_refused_naming_the_range(text: str) -> None:
    """A cutoff further back than 3650 days would leave the calendar (OverflowError, year out
    of range): a ValueError naming the allowed range instead."""
    with pytest.raises(ValueError, match="from 0s to 3650d"):
        parse_duration(text)


def test_ten_years_is_the_longest_duration() -> None:
    """3650d itself is accepted."""
    assert parse_duration("3650d") == 3650 * 86_400


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("FILE_ID", "accounts-2026-02-28"),
        ("FILE_ID", "vendor-b.accounts-2026-02-28"),
        ("BATCH_ID", "batch-2026-02-28-0b6c3f4e-8a7d-4c1b-9e2f-3a5b6c7d8e9f"),
        ("BATCH_ID", "vendor-b.batch-2026-02-28-0b6c3f4e-8a7d-4c1b-9e2f-3a5b6c7d8e9f"),
    ],
)
def test_id_arguments_accept_every_feeds_keys(param: str, value: str) -> None:
    """The commands' FileID and BatchID arguments take a named feed's keys as they are."""
    assert getattr(param_types, param).convert(value, None, None) == value


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("FILE_ID", "default.accounts-2026-02-28"),
        ("FILE_ID", "vendor.b.accounts-2026-02-28"),
        ("BATCH_ID", "Vendor.batch-2026-02-28-0b6c3f4e-8a7d-4c1b-9e2f-3a5b6c7d8e9f"),
    ],
)
def test_id_arguments_still_refuse_garbage(param: str, value: str) -> None:
    """A '.' does not open the door: a bad feed part is a usage error."""
    with pytest.raises(click.BadParameter):
        getattr(param_types, param).convert(value, None, None)

"""The date a scheduled run covers and the date a feed's schedule ran for last: one rule for
the orchestrator, the CLI and the web view, in the feed's time zone."""

from __future__ import annotations

import datetime as dt

import pytest

from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.events import parse_event
from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.domain.schedule import last_run, last_scheduled_date, run_date
from dlpipe.services.ops.opening_date import latest_scheduled_date

DAILY_6 = "cron(0 6 * * ? *)"


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def _date(schedule: str, time_zone: str, now: str, offset: int = 1) -> str:
    return last_scheduled_date(schedule, time_zone, ms_from_iso(now), offset)


def test_a_run_covers_its_local_day_minus_the_offset() -> None:
    """01:00 in Tokyo is 16:00Z the day before: the run covers Tokyo's day minus one."""
    assert run_date(_at("2026-02-28T16:00:00Z"), "Asia/Tokyo", 1) == "2026-02-28"
    assert run_date(_at("2026-02-28T16:00:00Z"), "UTC", 1) == "2026-02-27"
    assert run_date(_at("2026-02-28T16:00:00Z"), "UTC", 0) == "2026-02-28"


@pytest.mark.parametrize(
    ("time_zone", "now", "expected"),
    [
        # Auckland (UTC+13 in March) is already on 2 March on both sides of midnight UTC; its
        # 06:00 run of 2 March covered 1 March.
        ("Pacific/Auckland", "2026-03-01T23:30:00Z", "2026-03-01"),
        ("Pacific/Auckland", "2026-03-02T00:30:00Z", "2026-03-01"),
        # Los Angeles (UTC-8) is still on 1 March: its 06:00 run of 1 March covered 28 February.
        ("America/Los_Angeles", "2026-03-01T23:30:00Z", "2026-02-28"),
        ("America/Los_Angeles", "2026-03-02T00:30:00Z", "2026-02-28"),
    ],
)
def test_a_far_feeds_last_date_does_not_follow_midnight_utc(
    time_zone: str, now: str, expected: str
) -> None:
    """The date comes from the feed's own clock and schedule, not from today in UTC."""
    assert _date(DAILY_6, time_zone, now) == expected


def test_before_todays_run_the_last_date_is_yesterdays_run() -> None:
    """At 06:29Z the default feed's 06:30 UTC run has not fired: its last run covered two days back."""
    assert _date(DEFAULT_FEED.schedule, "UTC", "2026-03-02T06:29:00Z") == "2026-02-28"
    assert _date(DEFAULT_FEED.schedule, "UTC", "2026-03-02T06:30:00Z") == "2026-03-01"


def test_the_orchestrator_and_the_screens_agree_on_the_day_a_run_covers() -> None:
    """A scheduled event at a run's time and a screen opened at that time name one date."""
    for time_zone in ("Pacific/Auckland", "America/Los_Angeles", "UTC"):
        fired = last_run(DAILY_6, time_zone, _at("2026-03-02T00:30:00Z"))
        event = {"scheduled_time": fired.astimezone(dt.UTC).isoformat()}
        orchestrator = parse_event(event, 1, time_zone).polling_date
        assert orchestrator == _date(DAILY_6, time_zone, fired.isoformat()), time_zone


def test_a_time_skipped_by_daylight_saving_does_not_run() -> None:
    """02:30 does not exist in New York on 8 March 2026: the last run is 7 March's."""
    fired = last_run("cron(30 2 * * ? *)", "America/New_York", _at("2026-03-08T12:00:00Z"))
    assert fired.astimezone(dt.UTC) == _at("2026-03-07T07:30:00Z")


def test_a_repeated_time_runs_once_at_its_first_occurrence() -> None:
    """01:30 comes twice in New York on 1 November 2026 (05:30Z and 06:30Z): it ran at 05:30Z."""
    fired = last_run("cron(30 1 * * ? *)", "America/New_York", _at("2026-11-01T06:45:00Z"))
    assert fired.astimezone(dt.UTC) == _at("2026-11-01T05:30:00Z")


@pytest.mark.parametrize(
    ("schedule", "now", "fired"),
    [
        ("cron(0 6 ? * MON-FRI *)", "2026-03-02T05:00:00Z", "2026-02-27T06:00:00Z"),  # Mon->Fri
        ("cron(0/15 * * * ? *)", "2026-03-02T10:07:00Z", "2026-03-02T10:00:00Z"),
        ("cron(0 0 L * ? *)", "2026-03-15T00:00:00Z", "2026-02-28T00:00:00Z"),  # last day
        ("cron(0 0 15W * ? *)", "2026-02-20T00:00:00Z", "2026-02-16T00:00:00Z"),  # Sun 15 -> Mon
        ("cron(0 0 LW * ? *)", "2026-06-10T00:00:00Z", "2026-05-29T00:00:00Z"),  # Sun 31 -> Fri
        ("cron(0 0 ? * 2#1 *)", "2026-03-20T00:00:00Z", "2026-03-02T00:00:00Z"),  # 1st Monday
        ("cron(0 0 ? * 6L *)", "2026-03-10T00:00:00Z", "2026-02-27T00:00:00Z"),  # last Friday
        ("cron(0 8 1 JAN,JUL ? *)", "2026-03-10T00:00:00Z", "2026-01-01T08:00:00Z"),
        ("cron(0 0 29 2 ? *)", "2026-03-10T00:00:00Z", "2024-02-29T00:00:00Z"),
    ],
)
def test_eventbridge_cron_fields_are_read_as_scheduler_reads_them(
    schedule: str, now: str, fired: str
) -> None:
    """Names, lists, ranges, steps and L, W, # (in UTC, so the instants read plainly)."""
    assert last_run(schedule, "UTC", _at(now)) == _at(fired)


def test_a_rate_has_no_fixed_phase_so_it_last_ran_now() -> None:
    """rate(...) counts from the schedule's creation, which nothing records: the date of now."""
    assert _date("rate(1 day)", "Pacific/Auckland", "2026-03-01T23:30:00Z") == "2026-03-01"


@pytest.mark.parametrize(
    "schedule",
    [
        "cron(0 6 * * * *)",  # both day fields given: EventBridge refuses it
        "cron(61 6 * * ? *)",
        "cron(0 6 1,L * ? *)",  # L inside a list
        "cron(0 6 * FOO ? *)",
        "cron(0 0 1 1 ? 2150)",  # no run yet
    ],
)
def test_a_schedule_it_cannot_read_or_that_never_ran_is_a_value_error(schedule: str) -> None:
    """The caller decides what stands in."""
    with pytest.raises(ValueError, match=r"cron|no run"):
        _date(schedule, "UTC", "2026-03-01T12:00:00Z")


def _feed(name: str, time_zone: str, schedule: str = DAILY_6) -> Feed:
    return Feed(name=name, schedule=schedule, time_zone=time_zone)


def test_a_screen_opens_on_the_chosen_feeds_date_or_the_latest_of_every_feeds() -> None:
    """--feed: its own date; every feed: the latest, so no feed's newest day is past the end."""
    feeds = {"default": DEFAULT_FEED, "nz": _feed("nz", "Pacific/Auckland")}
    now = ms_from_iso("2026-03-01T23:30:00Z")
    assert latest_scheduled_date(feeds, "nz", now, 1) == "2026-03-01"
    assert latest_scheduled_date(feeds, "default", now, 1) == "2026-02-28"
    assert latest_scheduled_date(feeds, None, now, 1) == "2026-03-01"


def test_a_feed_without_a_readable_schedule_is_dated_as_if_it_ran_now() -> None:
    """Unknown here: the default feed's schedule stands in; unreadable: a run now."""
    feeds = {"bad": _feed("bad", "Pacific/Auckland", "cron(0 6 * * * *)")}
    now = ms_from_iso("2026-03-01T23:30:00Z")
    assert latest_scheduled_date(feeds, "bad", now, 1) == "2026-03-01"  # 2 March in Auckland
    assert latest_scheduled_date(feeds, "elsewhere", now, 1) == "2026-02-28"  # 06:30 UTC

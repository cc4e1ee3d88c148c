"""The invoking event names exactly one polling date, or is rejected with a clear error."""

from __future__ import annotations

import pytest

from dlpipe.domain.events import InvalidEventError, PollingRequest, parse_event


def test_explicit_date_is_the_polling_date() -> None:
    assert parse_event({"date": "2026-02-28"}) == PollingRequest("2026-02-28", rerun=False)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("2026-02-30", "not a calendar date"),
        ("20260228", "YYYY-MM-DD"),
        ("2026-2-28", "YYYY-MM-DD"),
        (" 2026-02-28", "YYYY-MM-DD"),
        ("2026-02-28T00:00:00", "YYYY-MM-DD"),
        (20260228, "YYYY-MM-DD"),
        (None, "YYYY-MM-DD"),
    ],
)
def test_malformed_date_is_rejected_with_the_reason(value: object, why: str) -> None:
    with pytest.raises(InvalidEventError, match=why):
        parse_event({"date": value})


def test_scheduled_event_polls_the_previous_utc_day() -> None:
    event = {"source": "aws.events", "time": "2026-03-01T06:00:00Z", "detail": {}}
    assert parse_event(event).polling_date == "2026-02-28"


def test_scheduler_input_scheduled_time_polls_the_previous_utc_day() -> None:
    assert parse_event({"scheduled_time": "2026-03-01T06:00:00Z"}).polling_date == "2026-02-28"


def test_scheduled_time_with_an_offset_is_converted_to_utc_first() -> None:
    # 01:30 at +02:00 is still 23:30 on Feb 28 in UTC.
    assert parse_event({"time": "2026-03-01T01:30:00+02:00"}).polling_date == "2026-02-27"


def test_date_offset_days_shifts_the_scheduled_day() -> None:
    assert parse_event({"time": "2024-03-01T00:00:00Z"}, date_offset_days=0).polling_date == (
        "2024-03-01"
    )
    assert parse_event({"time": "2024-03-01T00:00:00Z"}, date_offset_days=1).polling_date == (
        "2024-02-29"
    )


def test_explicit_date_wins_over_scheduled_time() -> None:
    assert parse_event({"date": "2026-01-05", "time": "2026-03-01T06:00:00Z"}).polling_date == (
        "2026-01-05"
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("2026-03-01T06:00:00", "no UTC offset"),
        ("yesterday", "not an ISO 8601"),
        (1772344800, "ISO 8601 string"),
        ("0001-01-01T00:00:00Z", "out of range"),
    ],
)
@pytest.mark.parametrize("key", ["time", "scheduled_time"])
def test_unusable_scheduled_time_is_rejected(key: str, value: object, why: str) -> None:
    with pytest.raises(InvalidEventError, match=why):
        parse_event({key: value})


def test_rerun_flag_is_passed_through() -> None:
    assert parse_event({"date": "2026-02-28", "rerun": True}).rerun is True


def test_rerun_flag_must_be_a_boolean() -> None:
    with pytest.raises(InvalidEventError, match="rerun"):
        parse_event({"date": "2026-02-28", "rerun": "yes"})


@pytest.mark.parametrize("event", [{}, {"detail": {}}, ["2026-02-28"], "2026-02-28", None])
def test_event_without_a_date_or_time_is_rejected(event: object) -> None:
    with pytest.raises(InvalidEventError):
        parse_event(event)


def test_an_event_without_feed_is_the_default_feeds() -> None:
    """Events written before feeds (schedule and operator) run the default feed's day."""
    assert parse_event({"date": "2026-02-28"}).feed == "default"
    assert parse_event({"scheduled_time": "2026-03-01T06:30:00Z"}).feed == "default"


def test_the_event_may_name_the_feed() -> None:
    """`feed` is carried with a date or a schedule's time."""
    assert parse_event({"feed": "vendor-b", "date": "2026-02-28"}) == PollingRequest(
        "2026-02-28", rerun=False, feed="vendor-b"
    )
    scheduled = parse_event({"feed": "vendor-b", "scheduled_time": "2026-03-01T06:30:00Z"})
    assert (scheduled.feed, scheduled.polling_date) == ("vendor-b", "2026-02-28")


@pytest.mark.parametrize("feed", ["Vendor-B", "vendor.b", "", "-x", "x" * 32, 7, None, ["a"]])
def test_an_invalid_feed_is_one_line_naming_it(feed: object) -> None:
    """A bad `feed` is an InvalidEventError of one line, never a traceback or a default."""
    with pytest.raises(InvalidEventError, match="'feed' must be a feed name") as refused:
        parse_event({"feed": feed, "date": "2026-02-28"})
    assert "\n" not in str(refused.value)


def test_only_a_schedules_time_makes_a_scheduled_request() -> None:
    """The restatement window is a scheduled run's: an explicit date (a manual run, a
    backfill, a restated day's own run) is never one, even beside a schedule's time."""
    assert parse_event({"scheduled_time": "2026-03-01T06:00:00Z"}).scheduled
    assert parse_event({"time": "2026-03-01T06:00:00Z"}).scheduled
    assert not parse_event({"date": "2026-02-28"}).scheduled
    assert not parse_event({"date": "2026-02-28", "time": "2026-03-01T06:00:00Z"}).scheduled

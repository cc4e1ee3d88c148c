"""Turn the invoking event into the polling date: pure, no clock, so replays agree."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, is_feed_name
from dlpipe.domain.model import validate_date
from dlpipe.domain.schedule import run_date

# EventBridge Scheduler passes <aws.scheduler.scheduled-time> in our input template as
# "scheduled_time" (terraform/scheduler.tf); an EventBridge rule's scheduled event carries "time".
_SCHEDULE_TIME_KEYS = ("scheduled_time", "time")


class InvalidEventError(ValueError):
    """The invoking event names no valid polling date; the message says what is wrong."""


@dataclass(frozen=True)
class PollingRequest:
    """The run the event asks for: which feed's day to poll, and whether it is a rerun."""

    polling_date: str
    rerun: bool = False
    feed: str = DEFAULT_FEED_NAME
    # The date came from a schedule's time (not an explicit `date`): only such a run also
    # re-lists the feed's restatement window of earlier days (services/orchestrator/recheck.py).
    scheduled: bool = False


def parse_event(event: object, date_offset_days: int = 1, time_zone: str = "UTC") -> PollingRequest:
    """Read `{"date": "YYYY-MM-DD"}`, or a schedule's time (the date its run covers,
    domain/schedule.py's run_date: its calendar day in the feed's `time_zone`, an IANA name,
    minus the offset).

    An explicit `date` wins over a schedule time; `rerun`, if present, must be a boolean;
    `feed`, if present, a feed name (absent: the default feed).
    """
    feed = event_feed(event)
    assert isinstance(event, Mapping)  # event_feed refused anything else
    rerun = event.get("rerun", False)
    if not isinstance(rerun, bool):
        raise InvalidEventError(f"'rerun' must be true or false, got {rerun!r}")
    if "date" in event:
        return PollingRequest(parse_polling_date(event["date"]), rerun, feed)
    for key in _SCHEDULE_TIME_KEYS:
        if key in event:
            day = _date_from_schedule(key, event[key], date_offset_days, time_zone)
            return PollingRequest(day, rerun, feed, scheduled=True)
    raise InvalidEventError(
        "event needs 'date' (YYYY-MM-DD) or a scheduled 'scheduled_time' / 'time' (ISO 8601)"
    )


def event_feed(event: object) -> str:
    """The feed the event names (absent: the default feed); InvalidEventError if it is not
    a JSON object or the name is not a feed name. Read first: the feed's time zone decides
    a scheduled event's day."""
    if not isinstance(event, Mapping):
        raise InvalidEventError(f"event must be a JSON object, got {type(event).__name__}")
    feed = event.get("feed", DEFAULT_FEED_NAME)
    if not is_feed_name(feed):
        raise InvalidEventError(
            f"'feed' must be a feed name ([a-z0-9][a-z0-9-]{{0,30}}), got {feed!r}"
        )
    return str(feed)


def parse_polling_date(value: object) -> str:
    """Validate a calendar date written exactly as YYYY-MM-DD (`validate_date`, the rule every
    date the code reads follows) and return it."""
    try:
        return validate_date(value)
    except InvalidIdentifierError as exc:
        raise InvalidEventError(f"'date': {exc}") from exc


def _date_from_schedule(key: str, value: object, date_offset_days: int, time_zone: str) -> str:
    """The date the run at schedule time `value` covers (run_date). The time is the run's own
    (Scheduler's scheduled time), so it is dated as it is, not looked up in the schedule."""
    if not isinstance(value, str):
        raise InvalidEventError(f"{key!r} must be an ISO 8601 string, got {value!r}")
    try:
        scheduled = dt.datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidEventError(f"{key!r} {value!r} is not an ISO 8601 timestamp") from exc
    if scheduled.tzinfo is None:
        # EventBridge always sends UTC ("...Z"); a naive time would make the day ambiguous.
        raise InvalidEventError(f"{key!r} {value!r} has no UTC offset")
    try:
        return run_date(scheduled, time_zone, date_offset_days)
    except OverflowError as exc:
        raise InvalidEventError(
            f"{key!r} {value!r} minus {date_offset_days} days is out of range"
        ) from exc

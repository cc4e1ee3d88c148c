"""Operator input: ages like `0s`, `30m`, `2h`, `1d`, `90s` (at most 3650d); dates `YYYY-MM-DD`,
`today`, `yesterday` (DAY: the one date parser of every command's --date)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import click

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.feeds import is_feed_name
from dlpipe.domain.model import parse_file_id, validate_batch_id, validate_date

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
# Ten years back is further than any record lives (TTL); beyond it a cutoff leaves the calendar.
MAX_DURATION_DAYS = 3650
RELATIVE_DAYS = {"today": 0, "yesterday": 1}


def parse_duration(text: str) -> int:
    """Seconds in `text` (`90s`, `30m`, `2h`, `1d`; `0s` is now); ValueError if it is not one
    of those or longer than MAX_DURATION_DAYS."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise ValueError(f"{text!r} is not a duration like 90s, 30m, 2h or 1d")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds > MAX_DURATION_DAYS * 86_400:
        raise ValueError(
            f"{text.strip()} is out of range: durations go from 0s to {MAX_DURATION_DAYS}d (10 years)"
        )
    return seconds


def parse_day(text: str) -> str:
    """`YYYY-MM-DD`, or `today` / `yesterday` kept as words until a clock resolves them."""
    word = text.strip().lower()
    if word in RELATIVE_DAYS:
        return word
    try:
        return validate_date(text.strip())
    except InvalidIdentifierError as exc:
        raise ValueError(f"{text!r} is not a date (YYYY-MM-DD, today or yesterday)") from exc


def wall_clock_ms() -> int:
    """Now, for the commands that have no OpsContext clock (`run`, `local up`)."""
    return int(datetime.now(UTC).timestamp() * 1000)


def resolve_day(day: str, now_ms: int) -> str:
    """The calendar date (UTC) that `day` names at `now_ms`."""
    if day not in RELATIVE_DAYS:
        return day
    today = datetime.fromtimestamp(now_ms / 1000, tz=UTC).date()
    return (today - timedelta(days=RELATIVE_DAYS[day])).isoformat()


def date_range(first: str, last: str, max_days: int) -> list[str]:
    """Every date from `first` to `last` inclusive; ValueError if reversed or too long."""
    start, end = date.fromisoformat(first), date.fromisoformat(last)
    if start > end:
        raise ValueError(f"--from {first} is after --to {last}")
    days = (end - start).days + 1
    if days > max_days:
        raise ValueError(f"{days} days from {first} to {last}; at most {max_days} at a time")
    return [(start + timedelta(days=n)).isoformat() for n in range(days)]


class _Parsed(click.ParamType):  # type: ignore[type-arg]  # generic only in recent click
    """A click parameter type around a parser that raises ValueError; failure exits 2."""

    def __init__(self, name: str, parser: Any) -> None:
        self.name = name
        self._parser = parser

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse `value`, or fail with a usage error naming it."""
        try:
            return self._parser(value) if isinstance(value, str) else value
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = _Parsed("duration", parse_duration)
DAY = _Parsed("date", parse_day)
FILE_ID = _Parsed("file_id", lambda v: parse_file_id(v) and v)
BATCH_ID = _Parsed("batch_id", validate_batch_id)


def feed_name(text: str) -> str:
    """`text` if it is a feed name, else ValueError (one line, the value escaped)."""
    if not is_feed_name(text):
        raise ValueError(f"{text!a} is not a feed name ([a-z0-9][a-z0-9-], 1-31 characters)")
    return text


FEED = _Parsed("feed", feed_name)

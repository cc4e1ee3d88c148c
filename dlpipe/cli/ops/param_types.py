"""The click parameter types of operator input, each around its parser: ages like `0s`, `30m`,
`2h`, `1d`, `90s` (DURATION, at most 3650d), dates (DAY: the one parser of every command's
--date, dlpipe/cli/ops/dates.py), FileIDs and BatchIDs of any feed, feed names. A value that
does not parse is a usage error (exit 2) naming it."""

from __future__ import annotations

import re
from typing import Any

import click

from dlpipe.cli.ops.dates import parse_day
from dlpipe.domain.feeds import is_feed_name
from dlpipe.domain.model import parse_file_id, validate_batch_id

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
# Ten years back is further than any record lives (TTL); beyond it a cutoff leaves the calendar.
MAX_DURATION_DAYS = 3650


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


def feed_name(text: str) -> str:
    """`text` if it is a feed name, else ValueError (one line, the value escaped)."""
    if not is_feed_name(text):
        raise ValueError(f"{text!a} is not a feed name ([a-z0-9][a-z0-9-], 1-31 characters)")
    return text


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
FEED = _Parsed("feed", feed_name)

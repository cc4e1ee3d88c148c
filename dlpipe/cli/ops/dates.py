"""The calendar of operator input: `YYYY-MM-DD`, `today` and `yesterday` (UTC) as every
command's --date takes them, date ranges, and the wall clock of the commands without an
OpsContext."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import validate_date

RELATIVE_DAYS = {"today": 0, "yesterday": 1}


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

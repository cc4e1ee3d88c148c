"""What an operator may tune about the web view, and the request input it refuses."""

from __future__ import annotations

from dataclasses import dataclass

from dlpipe.domain.feeds import is_feed_name


@dataclass(frozen=True)
class UiOptions:
    """How much the pages show and how often a running batch's page refreshes itself."""

    days: int = 14  # columns of the grid: PollingDateIndex queries a page
    max_days: int = 92
    refresh_seconds: float = 5.0
    stuck_older_than_s: int = 1800
    files_limit: int = 1000  # rows of a day's files table (BatchIndex, oldest first)


class BadRequestError(ValueError):
    """Input in the URL that names nothing (a bad date, FileID, status or sort key): 400."""


class NotFoundPageError(LookupError):
    """Input that is well formed but names nothing stored: 404."""


# The dates a page takes: wide enough for any polling date, narrow enough that a window of
# dates, its neighbours and a year's lookback stay inside the calendar (0001-01-01 and
# 9999-12-31 would overflow it: a 400, never a 500).
MIN_PAGE_DATE = "0003-01-01"
MAX_PAGE_DATE = "9999-12-30"


def check_page_date(text: str) -> str:
    """`text` (a valid YYYY-MM-DD) if a page can show it, else BadRequestError."""
    if not MIN_PAGE_DATE <= text <= MAX_PAGE_DATE:
        raise BadRequestError(f"date must be from {MIN_PAGE_DATE} to {MAX_PAGE_DATE}, got {text!a}")
    return text


def parse_feed(text: str | None) -> str | None:
    """?feed= from the URL: a feed name, None when absent (every feed), else BadRequestError."""
    if not text:
        return None
    if not is_feed_name(text):
        raise BadRequestError(f"feed must be [a-z0-9][a-z0-9-], 1-31 characters, got {text!a}")
    return text

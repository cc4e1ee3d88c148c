"""Retry-After (RFC 9110 section 10.2.3), read one way by every HTTP client of dlpipe.

The header is delay-seconds (ASCII digits only) or an HTTP-date in one of the three forms
RFC 9110 section 5.6.7 names, always GMT. Anything else, a sign, a fraction, a numeric zone,
non-ASCII digits, is unreadable: the caller falls back to its own backoff. The answer is
bounded, [0, RETRY_AFTER_MAX_S]; callers cap it further to what they can afford to wait.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

RETRY_AFTER_MAX_S = 86_400.0  # a day: a larger or overflowing value is a broken server
_MAX_HEADER_CHARS = 64  # the longest valid form (RFC 850) is 33 characters
_DELAY = re.compile(r"[0-9]+", re.ASCII)
_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
_TIME = r"(?P<hh>\d\d):(?P<mm>\d\d):(?P<ss>\d\d)"
_MON = r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DATES = (
    # IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    re.compile(
        rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?P<dd>\d\d) {_MON} (?P<yyyy>\d{{4}}) {_TIME} GMT",
        re.ASCII,
    ),
    # rfc850-date (obsolete): Sunday, 06-Nov-94 08:49:37 GMT
    re.compile(
        r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), "
        rf"(?P<dd>\d\d)-{_MON}-(?P<yy>\d\d) {_TIME} GMT",
        re.ASCII,
    ),
    # asctime-date (obsolete): Sun Nov  6 08:49:37 1994
    re.compile(
        rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) {_MON} (?P<dd>[ \d]\d) {_TIME} (?P<yyyy>\d{{4}})",
        re.ASCII,
    ),
)


def retry_after_seconds(value: str | None, now_s: float | None = None) -> float | None:
    """Retry-After as seconds from now, in [0, RETRY_AFTER_MAX_S]; None if absent or unreadable."""
    if value is None:
        return None
    text = value.strip(" \t")
    if not text or len(text) > _MAX_HEADER_CHARS:
        return None
    if _DELAY.fullmatch(text):
        return min(float(int(text)), RETRY_AFTER_MAX_S)
    now = time.time() if now_s is None else now_s
    when_s = _http_date_epoch_s(text, now)
    if when_s is None:
        return None
    return min(max(0.0, when_s - now), RETRY_AFTER_MAX_S)


def _http_date_epoch_s(text: str, now_s: float) -> float | None:
    for pattern in _DATES:
        match = pattern.fullmatch(text)
        if match is None:
            continue
        part = match.groupdict()
        year = int(part["yyyy"]) if part.get("yyyy") else _rfc850_year(part["yy"], now_s)
        try:
            when = datetime(
                year,
                _MONTHS[part["mon"]],
                int(part["dd"]),
                int(part["hh"]),
                int(part["mm"]),
                int(part["ss"]),
                tzinfo=UTC,
            )
        except ValueError:
            return None  # 31 Feb, 25:00 and the like
        return when.timestamp()
    return None


def _rfc850_year(yy: str, now_s: float) -> int:
    """A two-digit year more than 50 years ahead is the most recent past one (RFC 9110 5.6.7)."""
    this_year = time.gmtime(now_s).tm_year
    year = this_year - this_year % 100 + int(yy)
    return year - 100 if year > this_year + 50 else year

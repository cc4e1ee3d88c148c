"""Time as the records layer sees it: injected, so tests can stand still or jump."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Protocol

# Tests only: shifts the wall clock of one process (clock skew between workers).
ENV_TEST_CLOCK_OFFSET_SECONDS = "DLPIPE_TEST_CLOCK_OFFSET_SECONDS"

# Tests only (clock skew between workers); read once, 0 unless the variable is set.
_TEST_OFFSET_MS = int(float(os.environ.get(ENV_TEST_CLOCK_OFFSET_SECONDS) or 0) * 1000)


class Clock(Protocol):
    """Source of the current time in epoch milliseconds."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        ...


class SystemClock:
    """The wall clock (shifted only when a test sets DLPIPE_TEST_CLOCK_OFFSET_SECONDS)."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        return time.time_ns() // 1_000_000 + _TEST_OFFSET_MS


def iso_from_ms(epoch_ms: int) -> str:
    """The time format for storage: ISO 8601 UTC text, millisecond precision, zone `Z`
    (2026-02-28T06:00:00.000Z), the one form every ISO time attribute (CreatedAt, UpdatedAt,
    StartTime, TimeoutAt, ...) is written in, and `--json` prints."""
    instant = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def time_for_people(epoch_ms: int) -> str:
    """The time format for people, the same in the CLI's tables and the web view: UTC to the
    second with its zone (2026-02-28T06:00:00Z), ISO 8601 that a tool reads back, and one
    word that a terminal never wraps and a double click selects whole."""
    return datetime.fromtimestamp(epoch_ms // 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ms_from_iso(text: str) -> int:
    """Epoch ms of an ISO 8601 time in any form records hold (`Z`, or `+00:00` in some items;
    a provider may send another offset); a time without a zone is UTC. ValueError if `text`
    is not ISO 8601."""
    instant = datetime.fromisoformat(text)
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return int(instant.timestamp() * 1000)


def normalized_iso(text: str | None) -> str | None:
    """`text` rewritten in iso_from_ms's form (None stays None)."""
    return None if text is None else iso_from_ms(ms_from_iso(text))

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
    """ISO 8601 UTC text (millisecond precision) for an epoch-ms instant."""
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")

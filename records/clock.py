"""Time as the records layer sees it: injected, so tests can stand still or jump."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Source of the current time in epoch milliseconds."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        ...


class SystemClock:
    """The wall clock."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        return time.time_ns() // 1_000_000


def iso_from_ms(epoch_ms: int) -> str:
    """ISO 8601 UTC text (millisecond precision) for an epoch-ms instant."""
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")

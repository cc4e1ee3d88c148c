"""A secret's value that is read again when the party it is shown to refuses it.

The downloader's key and the provider token are read once, then kept: a process would
otherwise go on failing every file with a rotated or restored secret until it restarts. When
a use of the value fails in the way only a wrong value explains (a wrong_key unwrap, a 401),
the caller asks `newer_than(failed)`: the value another thread read since `failed` was used,
else the source read again, at most once every `interval_s` (DLPIPE_SECRET_REREAD_SECONDS)
so a day of files that fail alike costs one read a minute, not one per file.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from dlpipe.log import get_logger

log = get_logger()
T = TypeVar("T")


class Rereadable(Generic[T]):
    """`value`, read by `read`; `newer_than` reads again (bounded) after a refused use."""

    def __init__(
        self,
        read: Callable[[], T],
        *,
        where: str,
        same: Callable[[T, T], bool],
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read, self._where, self._same = read, where, same
        self._interval_s, self._clock = interval_s, clock
        self._lock = threading.Lock()
        self._value = read()  # the first read's errors are the caller's (one line, at startup)
        self._read_at: float | None = None  # when a refusal last made us read again

    @property
    def value(self) -> T:
        """The value now."""
        with self._lock:
            return self._value

    def newer_than(self, failed: T) -> T | None:
        """A value other than `failed` to try once, or None: the source still holds `failed`,
        cannot be read now (logged, the value kept), or was read again less than
        `interval_s` ago."""
        with self._lock:
            if not self._same(self._value, failed):
                return self._value  # another thread has read it again since
            now = self._clock()
            if self._read_at is not None and now - self._read_at < self._interval_s:
                return None
            self._read_at = now
            try:
                fresh = self._read()
            except Exception as exc:  # noqa: BLE001 - a failed re-read keeps the value it has
                log.warning("secret.reread_failed", source=self._where, error=str(exc))
                return None
            if self._same(fresh, failed):
                log.info("secret.reread_unchanged", source=self._where)
                return None
            log.info("secret.reread_changed", source=self._where)
            self._value = fresh
            return fresh

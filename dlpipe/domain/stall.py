"""The stall floor of a transfer: below `min_bytes` in a window of `window_s`, it is abandoned.

curl's --speed-limit/--speed-time and the S3 clients' stall timeouts do the same: a provider
that trickles bytes would otherwise hold a downloader for as long as it likes (a read timeout
never fires while bytes keep coming), and with it every file queued behind it. A file that is
merely large keeps moving and is never cut. Plain Python: the caller gives the clock readings.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlpipe.domain.download_errors import ProviderSlowError

KIB = 1024
# ~2 KiB/s over 30 s: only a stalled source is below it (the slowest provider BENCHMARKS.md
# measured moves megabytes a second).
DEFAULT_STALL_FLOOR_BYTES = 64 * KIB
DEFAULT_STALL_WINDOW_SECONDS = 30


@dataclass(frozen=True)
class StallFloor:
    """At least `min_bytes` in every `window_s` seconds of a transfer."""

    min_bytes: int = DEFAULT_STALL_FLOOR_BYTES
    window_s: float = DEFAULT_STALL_WINDOW_SECONDS

    def __post_init__(self) -> None:
        if self.min_bytes < 0 or self.window_s <= 0:
            raise ValueError(f"a stall floor needs min_bytes >= 0 and window_s > 0, got {self}")


class StallWatch:
    """Counts a transfer's bytes per window; ProviderSlowError once a whole window is below the
    floor. The first window starts when the watch does (the request has been answered)."""

    def __init__(self, floor: StallFloor, now_s: float) -> None:
        self._floor = floor
        self._window_start_s = now_s
        self._bytes = 0

    def observe(self, byte_count: int, now_s: float) -> None:
        """`byte_count` more bytes arrived at `now_s`; raises ProviderSlowError on a stall."""
        self._bytes += byte_count
        elapsed_s = now_s - self._window_start_s
        if elapsed_s < self._floor.window_s:
            return
        if self._bytes < self._floor.min_bytes:
            raise ProviderSlowError(
                f"{self._bytes} bytes in {elapsed_s:.0f} s, below the floor of "
                f"{self._floor.min_bytes} bytes per {self._floor.window_s:g} s"
            )
        self._window_start_s, self._bytes = now_s, 0


# A slow source's file is tried on this many claims in all, its message hidden a growing while
# between them (two stall windows, doubling: 60 s, then 120 s at the default 30 s window);
# then the job ends `failed` with provider_slow. 3 stays below the 5 receives after which SQS
# dead-letters a message (the smallest max_receive_count Terraform accepts).
SLOW_ATTEMPTS = 3
SLOW_RETRY_WINDOWS = 2


def slow_retry_s(attempts: int, window_s: float = DEFAULT_STALL_WINDOW_SECONDS) -> int | None:
    """Seconds the message of a file abandoned as slow on its `attempts`-th claim stays hidden,
    for a stall floor measured over `window_s`; None when that was the last attempt and the
    job ends `failed`."""
    if attempts >= SLOW_ATTEMPTS:
        return None
    return int(SLOW_RETRY_WINDOWS * window_s * 2 ** max(0, attempts - 1))

"""How long a feed's day takes beside two others against alone (the lanes' isolation, in time).

    python bench/feed_isolation.py [--soak]

Three named feeds on one local stack, the local day's downloaders (4 threads, the default
share of 50 %: cap 2 per feed), each feed on its own queue: `trickle` (its provider sends each
file's first download at 2,000 B/s, below the stall floor, so each is abandoned and retried),
`large` (10 x the threads in 512 KiB files) and `small` (10 files of 64 KiB); --soak is
tests/reliability/test_feed_isolation.py's longer scenario. A feed's time runs from the start
to its last file completed (the local progress watcher); alone = that feed's day with the two
others configured and idle, on the same emulator. Prints each ratio; no target is checked
(the test says the isolation in counts and order: caps held, the small day done while the
large backlog was at most half done).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from common import machine, quiet_logs

from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.lanes import DEFAULT_MAX_SHARE_PERCENT, lane_cap
from dlpipe.local.day import DayOptions, DayProgress
from dlpipe.local.feed_days import LocalFeeds, local_feeds, run_feed_days
from dlpipe.local.stack import LocalStack, local_stack
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec

THREADS = DayOptions(date="").workers
FEEDS = ("trickle", "large", "small")
KIB = 1024


def _specs(prefix: str, count: int, size: int) -> list[StubFileSpec]:
    return [StubFileSpec(f"{prefix}_{n:03d}", size, CIPHER_GCM) for n in range(count)]


def _feeds(stack: LocalStack, folder: Path, soak: bool) -> tuple[LocalFeeds, Faults]:
    # (large x threads, large size, small, trickle, trickle size): the test's two scenarios
    large, large_kib, small, trickle, trickle_kib = (50, 1024, 20, 8, 1024) if soak else (
        10, 512, 10, 4, 256)  # fmt: skip
    files = {
        "trickle": _specs("t", trickle, trickle_kib * KIB),
        "large": _specs("l", large * THREADS, large_kib * KIB),
        "small": _specs("s", small, 64 * KIB),
    }
    tables = {
        name: {"schedule": "cron(0 7 * * ? *)", "time_zone": "UTC",
               "destination_prefix": f"isolation-{name}"}
        for name in FEEDS
    }  # fmt: skip
    local = local_feeds(stack, tables, folder, files["small"])
    trickling = Faults(trickle_bytes_per_s=2_000)
    trickling.trickle_downloads = len(files["trickle"])
    return replace(local, files_by_feed=files, faults={"trickle": trickling}), trickling


def _timed(
    stack: LocalStack, local: LocalFeeds, day: str, days: tuple[str, ...]
) -> dict[str, float]:
    """Each feed's seconds from the start to its last file completed."""
    start = time.monotonic()
    done: dict[str, float] = {}

    def seen(feed: str, progress: DayProgress) -> None:
        if progress.total and progress.completed == progress.total and feed not in done:
            done[feed] = time.monotonic() - start

    options = DayOptions(date=day, poll_interval_seconds=1, max_polls=600)
    reports = run_feed_days(stack, local, options, on_progress=seen, days=days)
    failed = [r.feed for r in reports if not r.ok]
    if failed:
        raise SystemExit(f"the day of {failed} did not complete")
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soak", action="store_true", help="the longer scenario")
    args = parser.parse_args()
    quiet_logs()
    info = machine()
    cap = lane_cap(THREADS, DEFAULT_MAX_SHARE_PERCENT, len(FEEDS))
    print(f"feed isolation: {info['cores']} cores, load {info['load_average']}")
    with tempfile.TemporaryDirectory() as folder, local_stack() as stack:
        local, trickling = _feeds(stack, Path(folder), args.soak)
        alone = {feed: _timed(stack, local, f"2026-03-0{n + 1}", (feed,))[feed]
                 for n, feed in enumerate(("small", "large"))}  # fmt: skip
        together = _timed(stack, local, "2026-03-05", FEEDS)
    print(f"{THREADS} threads, cap {cap} per feed")
    for feed in ("small", "large"):
        ratio = together[feed] / alone[feed]
        print(f"{feed}: {together[feed]:.1f} s together / {alone[feed]:.1f} s alone = {ratio:.2f}")
    print(f"trickle: {together.get('trickle', float('nan')):.1f} s together,"
          f" {trickling.streams.downloads} downloads")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

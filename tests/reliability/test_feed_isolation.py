"""Feeds that cannot hold each other up (dlpipe/domain/lanes.py, dlpipe/domain/stall.py).

Three named feeds at once on one local stack, with the local day's downloaders (4 threads, the
default share of 50 %): `trickle`, whose provider sends the first attempt of each file at
2,000 bytes a second (below the default stall floor of 64 KiB per 30 s, so each is abandoned
as `provider_slow` and retried after the stall back-off, when it arrives at full speed);
`large`, a backlog ten times the threads; and `small`. Each feed has its own queue, as
Terraform deploys it. The small and the large feed each finish within 2x their time alone
(the others configured and idle), and the trickling feed never holds more than its cap.

`make test` runs the short scenario; `make soak` a longer one (more and larger files). The
figures of one run are printed (`-s`) for BENCHMARKS.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.lanes import DEFAULT_MAX_SHARE_PERCENT, lane_cap
from dlpipe.domain.model import JobStatus
from dlpipe.local.day import DayOptions, DayProgress, DayReport
from dlpipe.local.feed_days import LocalFeeds, local_feeds, run_feed_days
from dlpipe.local.stack import LocalStack
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_local_day import stack
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
__all__ = ["stack"]  # the fixture, shared as is

THREADS = DayOptions(date="").workers  # the local day's downloaders
TRICKLE_BYTES_PER_S = 2_000
FEEDS = ("trickle", "large", "small")


@dataclass(frozen=True)
class Scenario:
    """How big each feed's day is."""

    large_files: int
    large_bytes: int
    small_files: int
    trickle_files: int
    trickle_bytes: int


SHORT = Scenario(
    large_files=10 * THREADS,
    large_bytes=512 * 1024,
    small_files=10,
    trickle_files=4,
    trickle_bytes=256 * 1024,
)
LONG = Scenario(
    large_files=50 * THREADS,
    large_bytes=1024 * 1024,
    small_files=20,
    trickle_files=8,
    trickle_bytes=1024 * 1024,
)


def _specs(prefix: str, count: int, size: int) -> list[StubFileSpec]:
    return [StubFileSpec(f"{prefix}_{n:03d}", size, CIPHER_GCM) for n in range(count)]


def _feeds(stack: LocalStack, tmp_path: Path, scenario: Scenario) -> tuple[LocalFeeds, Faults]:
    tables = {
        name: {
            "schedule": "cron(0 7 * * ? *)",
            "time_zone": "UTC",
            "destination_prefix": f"isolation-{name}",
        }
        for name in FEEDS
    }
    trickling = Faults(trickle_bytes_per_s=TRICKLE_BYTES_PER_S)
    files = {
        "trickle": _specs("t", scenario.trickle_files, scenario.trickle_bytes),
        "large": _specs("l", scenario.large_files, scenario.large_bytes),
        "small": _specs("s", scenario.small_files, 64 * 1024),
    }
    local = local_feeds(stack, tables, tmp_path / "feeds", files["small"])
    # Each first attempt trickles; the retries find the provider recovered.
    trickling.trickle_downloads = scenario.trickle_files
    return replace(local, files_by_feed=files, faults={"trickle": trickling}), trickling


def _timed_days(
    stack: LocalStack, local: LocalFeeds, day: str, days: tuple[str, ...]
) -> tuple[dict[str, float], dict[str, DayReport]]:
    """Run `days` at once; each feed's time from the start to its last file published."""
    start = time.monotonic()
    done: dict[str, float] = {}

    def seen(feed: str, progress: DayProgress) -> None:
        if progress.total and progress.completed == progress.total and feed not in done:
            done[feed] = time.monotonic() - start

    options = DayOptions(date=day, poll_interval_seconds=1, max_polls=600)
    reports = run_feed_days(stack, local, options, on_progress=seen, days=days)
    return done, {report.feed: report for report in reports}


@contextmanager
def _claims_sampled(stack: LocalStack, prefix: str, peak: list[int]) -> Iterator[None]:
    """Sample, every 0.1 s, how many files whose FileID starts with `prefix` are claimed
    (`downloading`); the most seen at once ends up in `peak`."""
    jobs = JobsTable(stack.clients.dynamodb, stack.settings.jobs_table)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            held = jobs.query_by_status(JobStatus.DOWNLOADING)
            peak[0] = max(peak[0], sum(1 for job in held if job.file_id.startswith(prefix)))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _isolation(stack: LocalStack, tmp_path: Path, scenario: Scenario) -> None:
    local, trickling = _feeds(stack, tmp_path, scenario)
    alone: dict[str, float] = {}
    for feed in ("small", "large"):
        times, reports = _timed_days(stack, local, unique_day(), (feed,))
        assert reports[feed].ok, reports[feed]
        alone[feed] = times[feed]
    day, peak = unique_day(), [0]
    with _claims_sampled(stack, "trickle.t_", peak):
        together, reports = _timed_days(stack, local, day, FEEDS)
    cap = lane_cap(THREADS, DEFAULT_MAX_SHARE_PERCENT, len(FEEDS))
    ratios = {feed: together[feed] / alone[feed] for feed in ("small", "large")}
    print(
        f"\nfeed isolation ({THREADS} threads, cap {cap} per feed): "
        + ", ".join(
            f"{feed} {together[feed]:.1f} s together / {alone[feed]:.1f} s alone"
            f" = {ratios[feed]:.2f}"
            for feed in ("small", "large")
        )
        + f"; trickle {together.get('trickle', float('nan')):.1f} s,"
        f" {trickling.streams.downloads} downloads, at most {peak[0]} claimed at once"
    )
    assert all(report.ok for report in reports.values()), reports
    assert ratios["small"] <= 2.0, ratios
    assert ratios["large"] <= 2.0, ratios
    # Every trickled first attempt was abandoned and retried (the provider then recovered),
    # and the trickling feed never held more threads than its cap.
    assert trickling.streams.downloads >= 2 * scenario.trickle_files
    assert 1 <= peak[0] <= cap


def test_a_trickling_and_a_large_feed_hold_up_a_small_one_at_most_twofold(
    stack: LocalStack, tmp_path: Path
) -> None:
    _isolation(stack, tmp_path, SHORT)


@pytest.mark.soak
def test_a_trickling_and_a_large_feed_hold_up_a_small_one_at_most_twofold_soak(
    stack: LocalStack, tmp_path: Path
) -> None:
    _isolation(stack, tmp_path, LONG)

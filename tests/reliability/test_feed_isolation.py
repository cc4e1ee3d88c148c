"""Feeds that cannot hold each other up (dlpipe/domain/lanes.py, dlpipe/domain/stall.py).

Three named feeds at once on one local stack, with the local day's downloaders (4 threads, the
default share of 50 %): `trickle`, whose provider sends the first attempt of each file at
2,000 bytes a second (below the feed's own stall floor of 16 KiB per 5 s, so each is
abandoned as `provider_slow` and retried two windows later, when it arrives at full speed);
`large`, a backlog ten times the threads; and `small`. Each feed has its own queue, as
Terraform deploys it. No feed ever holds more than its cap of the threads (sampled), the
small feed's day ends while the large feed's backlog is at most half done (the jobs' own
CreatedAt and CompletedAt, in order), and the trickling feed's first attempts are abandoned
and retried.

`make test` runs the short scenario; `make soak` a longer one (more and larger files). How
long each feed takes beside the others against alone is bench/feed_isolation.py's figure.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import pytest

from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.lanes import DEFAULT_MAX_SHARE_PERCENT, lane_cap
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.local.day import DayOptions
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
TRICKLE_WINDOW_S = 5
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
    tables: dict[str, dict[str, object]] = {
        name: {
            "schedule": "cron(0 7 * * ? *)",
            "time_zone": "UTC",
            "destination_prefix": f"isolation-{name}",
        }
        for name in FEEDS
    }
    # The trickling feed's own stall floor, over the shortest window a feed may set: 2,000
    # bytes a second is below 16 KiB in 5 s, so a first attempt is abandoned after 5 s and
    # comes back two windows later (10 s), not after the default 30 s and 60 s.
    tables["trickle"].update(stall_window_seconds=TRICKLE_WINDOW_S, stall_floor_bytes=16 * 1024)
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


@contextmanager
def _claims_sampled(stack: LocalStack, date: str, peaks: dict[str, int]) -> Iterator[None]:
    """Sample, every 0.1 s, how many of each feed's files of `date` are claimed
    (`downloading`); the most seen at once, per feed, ends up in `peaks`."""
    jobs = JobsTable(stack.clients.dynamodb, stack.settings.jobs_table)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            held = Counter(
                job.feed
                for job in jobs.query_by_status(JobStatus.DOWNLOADING)
                if job.download_date == date
            )
            for feed, count in held.items():
                peaks[feed] = max(peaks.get(feed, 0), count)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _done_while(small: list[FileJob], large: list[FileJob]) -> int:
    """The large feed's files completed from the small feed's first job's creation to its
    last file's completion: the product's own stamps, put in order."""
    start = min(_at(job.created_at) for job in small)
    end = max(_at(job.completed_at) for job in small)
    return sum(1 for job in large if start <= _at(job.completed_at) <= end)


def _at(stamp: str | None) -> datetime:
    assert stamp is not None, "a completed job without CompletedAt"
    return datetime.fromisoformat(stamp)


def _isolation(stack: LocalStack, tmp_path: Path, scenario: Scenario) -> None:
    local, trickling = _feeds(stack, tmp_path, scenario)
    day, peaks = unique_day(), dict[str, int]()
    options = DayOptions(date=day, poll_interval_seconds=1, max_polls=600)
    with _claims_sampled(stack, day, peaks):
        reports = {r.feed: r for r in run_feed_days(stack, local, options, days=FEEDS)}
    assert all(report.ok for report in reports.values()), reports
    jobs = JobsTable(stack.clients.dynamodb, stack.settings.jobs_table)
    by_feed = {feed: list(jobs.query_by_batch(reports[feed].batch_id)) for feed in FEEDS}
    cap = lane_cap(THREADS, DEFAULT_MAX_SHARE_PERCENT, len(FEEDS))
    # Each feed at most its cap of the threads, whatever the others have waiting.
    assert peaks.get("trickle", 0) >= 1, peaks
    assert max(peaks.values()) <= cap, peaks
    # The small feed is served beside the large backlog, not behind it (which would see the
    # whole backlog done first): at most half of it was done while the small day ran.
    done = _done_while(by_feed["small"], by_feed["large"])
    assert done <= scenario.large_files // 2, f"{done} large files done in the small day"
    # Every trickled first attempt was abandoned and retried (the provider then recovered).
    assert trickling.streams.downloads >= 2 * scenario.trickle_files


def test_a_trickling_and_a_large_feed_never_hold_up_a_small_one(
    stack: LocalStack, tmp_path: Path
) -> None:
    _isolation(stack, tmp_path, SHORT)


@pytest.mark.soak
def test_a_trickling_and_a_large_feed_never_hold_up_a_small_one_soak(
    stack: LocalStack, tmp_path: Path
) -> None:
    _isolation(stack, tmp_path, LONG)

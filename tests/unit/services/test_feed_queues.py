"""Who holds the download capacity: a row per feed with its queue's depth, its oldest
available job and its slow ones, and the starving warning, over in-process fakes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, cast

import pytest

from dlpipe.config import Settings
from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.domain.model import FileJob, JobStatus, make_file_id
from dlpipe.domain.waiting import QueueDepth, starving_warning
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_queues import AVAILABLE_READ_CAP, feed_queues
from dlpipe.services.ops.ports import OpsJobs
from dlpipe.services.ops.queries import day_status
from dlpipe.services.ops.waiting import queue_depth
from tests.support import BASE_MS, ManualClock, make_job

SHARED = "https://sqs.eu-west-1.amazonaws.com/123456789012/dlpipe-downloads"
VENDOR_B = "https://sqs.eu-west-1.amazonaws.com/123456789012/dlpipe-downloads-vendor-b"
LARGE = "https://sqs.eu-west-1.amazonaws.com/123456789012/dlpipe-downloads-large"
SLOW = "provider_slow: 3 bytes in 30 s, below the floor of 65536 bytes per 30 s"


def _feed(name: str, queue_url: str | None = None) -> Feed:
    return replace(DEFAULT_FEED, name=name, queue_url=queue_url)


@dataclass
class _Gauge:
    depth_now: QueueDepth

    def depth(self) -> int:
        return self.depth_now.visible

    def depth_and_in_flight(self) -> tuple[int, int]:
        return self.depth_now.visible, self.depth_now.in_flight


@dataclass
class _AvailableJobs:
    """The StatusIndex reads of the jobs table: the jobs in a status, oldest first."""

    jobs: list[FileJob] = field(default_factory=list)
    reads: list[int | None] = field(default_factory=list)

    def _in(self, status: JobStatus) -> list[FileJob]:
        found = [j for j in self.jobs if j.status is status]
        return sorted(found, key=lambda j: j.status_updated_at_ms)

    def query_by_status(
        self, status: JobStatus, *, limit: int | None = None, **_: Any
    ) -> Iterator[FileJob]:
        self.reads.append(limit)
        yield from self._in(status)[:limit]

    def edge_by_status(self, status: JobStatus, *, newest: bool = False) -> FileJob | None:
        found = self._in(status)
        return (found[-1] if newest else found[0]) if found else None

    def count_by_batch(self, batch_id: str, status: JobStatus) -> int:
        return 0


class _NoBatches:
    def query_by_date(self, polling_date: str, status: object = None) -> list[Any]:
        return []


def _unused(*_: object) -> Any:
    raise AssertionError("not used by the status")


def _ops(
    jobs: _AvailableJobs,
    depths: dict[str, QueueDepth],
    feeds: list[Feed],
    *,
    large: str | None = None,
    idle_s: int = 300,
) -> OpsContext:
    settings = replace(
        Settings.from_env({}),
        queue_url=SHARED,
        large_queue_url=large,
        dlq_url=None,
        idle_warning_seconds=idle_s,
    )
    return OpsContext(
        settings=settings,
        clock=ManualClock(BASE_MS),
        job_store=cast(OpsJobs, jobs),
        batch_store=cast(Any, _NoBatches()),
        download_queues=_unused,
        gauge=lambda url: _Gauge(depths[url]),
        messages=_unused,
        orchestrator=_unused,
        feeds={f.name: f for f in feeds},
    )


def _job(entity: str, feed: str, waited_s: int, **changes: Any) -> FileJob:
    file_id = make_file_id(entity, "2026-02-28", feed)
    named = {} if feed == "default" else {"feed": feed}
    return make_job(entity, now_ms=BASE_MS - waited_s * 1000, file_id=file_id, **named, **changes)


def test_each_feed_has_its_queue_depth_oldest_wait_and_slow_jobs() -> None:
    """default on the shared queue, vendor-b on its own: each its depth, its oldest available
    job's wait and its available jobs given back as slow."""
    jobs = _AvailableJobs(
        [
            _job("accounts", "default", 900),
            _job("trades", "default", 100, error_message=SLOW),
            _job("prices", "vendor-b", 60, error_message=SLOW),
            _job("quotes", "vendor-b", 30, error_message=SLOW),
            _job("ticks", "vendor-b", 20, error_message="provider_unavailable: 503"),
        ]
    )
    depths = {SHARED: QueueDepth(11, 0), VENDOR_B: QueueDepth(3, 4)}
    ops = _ops(jobs, depths, [DEFAULT_FEED, _feed("vendor-b", VENDOR_B)])
    found = feed_queues(ops)
    rows = {r.feed: r for r in found.rows}
    assert list(rows) == ["default", "vendor-b"]
    assert (rows["default"].queue_url, rows["default"].depth) == (SHARED, QueueDepth(11, 0))
    assert (rows["vendor-b"].queue_url, rows["vendor-b"].depth) == (VENDOR_B, QueueDepth(3, 4))
    assert rows["default"].age_s(found.now_ms) == 900
    assert rows["vendor-b"].age_s(found.now_ms) == 60
    assert (rows["default"].slow, rows["vendor-b"].slow) == (1, 2)
    assert not found.truncated
    assert jobs.reads == [AVAILABLE_READ_CAP]  # one bounded read for every feed


def test_feeds_without_a_queue_of_their_own_show_the_shared_queue_once() -> None:
    """vendor-c has no queue_url: it is on the deployment's queue, whose depth default's row
    carries; both rows name the other; the large-file queue is shown by itself."""
    depths = {SHARED: QueueDepth(5, 1), VENDOR_B: QueueDepth(0, 0), LARGE: QueueDepth(1, 1)}
    feeds = [DEFAULT_FEED, _feed("vendor-b", VENDOR_B), _feed("vendor-c")]
    ops = _ops(_AvailableJobs(), depths, feeds, large=LARGE)
    found = feed_queues(ops)
    rows = {r.feed: r for r in found.rows}
    assert (rows["default"].depth, rows["default"].shared_with) == (QueueDepth(5, 1), ("vendor-c",))
    assert (rows["vendor-c"].queue_url, rows["vendor-c"].depth) == (SHARED, None)
    assert rows["vendor-c"].shared_with == ("default",)
    assert rows["vendor-b"].shared_with == ()
    assert found.large == QueueDepth(1, 1)
    # Together: each queue counted once, the large-file queue included.
    assert queue_depth(ops) == QueueDepth(6, 2)


def test_a_feed_seen_only_among_the_available_jobs_has_a_row_without_a_queue() -> None:
    """A feed no configuration names any more still shows its waiting jobs."""
    jobs = _AvailableJobs([_job("accounts", "vendor-x", 50)])
    ops = _ops(jobs, {SHARED: QueueDepth(1, 0)}, [DEFAULT_FEED])
    (default, gone) = feed_queues(ops).rows
    assert default.feed == "default"
    assert (gone.feed, gone.queue_url, gone.depth) == ("vendor-x", None, None)
    assert gone.oldest_available_ms == BASE_MS - 50_000


def test_a_backlog_past_the_read_cap_is_flagged() -> None:
    """More available jobs than the read takes: truncated (counts are lower bounds)."""
    jobs = _AvailableJobs([_job(f"e{n}", "default", 10) for n in range(AVAILABLE_READ_CAP)])
    found = feed_queues(_ops(jobs, {SHARED: QueueDepth(0, 0)}, [DEFAULT_FEED]))
    assert found.truncated


def test_status_names_the_feed_that_holds_the_threads() -> None:
    """vendor-b's queue holds all 4 messages in flight; default's 11 have waited 15 min with
    none in flight: the day's status carries the starving warning, not the idle one."""
    jobs = _AvailableJobs([_job("accounts", "default", 900), _job("prices", "vendor-b", 60)])
    depths = {SHARED: QueueDepth(11, 0), VENDOR_B: QueueDepth(3, 4)}
    ops = _ops(jobs, depths, [DEFAULT_FEED, _feed("vendor-b", VENDOR_B)])
    found = day_status(ops, "2026-02-28", 900)
    assert found.idle_s is None
    assert found.starving is not None
    assert starving_warning(found.starving) == (
        "vendor-b holds 4 of 4 in flight; 11 waiting on default for 15 min"
    )
    assert found.waiting is not None
    assert found.waiting.depth == QueueDepth(14, 4)


@pytest.mark.parametrize("held", [0, 1])
def test_one_queue_alone_keeps_the_idle_rule(held: int) -> None:
    """A deployment of one queue: idle when nothing is in flight, never starving."""
    jobs = _AvailableJobs([_job("accounts", "default", 900)])
    ops = _ops(jobs, {SHARED: QueueDepth(11, held)}, [DEFAULT_FEED])
    found = day_status(ops, "2026-02-28", 900)
    assert found.starving is None
    assert found.idle_s == (None if held else 900)

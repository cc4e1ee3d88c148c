"""A completion check streams the pending jobs to the sweeper: it never holds the day's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.services.orchestrator.completion import tally
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable
from tests.support import ManualClock, make_batch, make_job

PENDING = 50


class CountingJobs(FakeJobsTable):
    """Counts the jobs its BatchIndex reads have handed out so far."""

    handed_out = 0

    def query_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int | None = None,
        on_unreadable: Callable[..., None] | None = None,
    ) -> Iterator[FileJob]:
        for job in super().query_by_batch(batch_id, status, limit=limit):
            self.handed_out += 1
            yield job


def a_large_day(pending: int) -> tuple[CountingJobs, FakeBatchesTable, str]:
    clock = ManualClock()
    jobs, batches = CountingJobs(clock), FakeBatchesTable(clock)
    batch = batches.create(make_batch("2026-02-28"))
    file_ids = set()
    for i in range(pending):
        job = jobs.create(make_job(f"entity{i}", "2026-02-28", batch_id=batch.batch_id))
        file_ids.add(job.file_id)
    batches.mark_queued(batch.batch_id, file_ids)
    return jobs, batches, batch.batch_id


def test_the_sweeper_sees_each_pending_job_as_it_is_read_not_after_all_are() -> None:
    """Job k reaches the sweeper when k jobs have been read: a list of them all would have
    been read whole before the first one arrived."""
    jobs, batches, batch_id = a_large_day(PENDING)
    lag: list[int] = []

    def sweep(pending: Iterable[FileJob]) -> int:
        for position, _ in enumerate(pending, start=1):
            lag.append(jobs.handed_out - position)
        return 0

    found = tally(jobs, batches, batches.require(batch_id), sweep, is_last_poll=False)
    assert len(lag) == PENDING
    assert set(lag) == {0}
    assert found.counts.pending == PENDING


def test_pending_is_counted_whether_or_not_the_sweep_reads_the_jobs() -> None:
    """A sweep that stops early, or never looks, leaves the pending count whole; what it
    completed is taken off."""
    jobs, batches, batch_id = a_large_day(PENDING)

    def look_at_three(pending: Iterable[FileJob]) -> int:
        for seen, _ in enumerate(pending, start=1):
            if seen == 3:
                return 2
        return 0

    batch = batches.require(batch_id)
    assert tally(jobs, batches, batch, lambda _: 0, is_last_poll=False).counts.pending == PENDING
    found = tally(jobs, batches, batch, look_at_three, is_last_poll=False)
    assert found.counts.pending == PENDING - 2

"""A completion check counts the pending jobs (never reads them) and hands the sweeper only a
way to report what it cannot read: the sweeper reads its own candidates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from dlpipe.domain.errors import CorruptRecordError, UnreadableHandler
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.services.orchestrator.completion import tally
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable
from tests.support import ManualClock, make_batch, make_job

PENDING = 50


class CountingJobs(FakeJobsTable):
    """Counts the jobs its BatchIndex reads hand out (a count hands out none)."""

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

    def counts_by_batch(self, batch_id: str, statuses: Iterable[JobStatus]) -> dict[JobStatus, int]:
        found = dict.fromkeys(statuses, 0)
        for job in self.items.values():
            if job.batch_id == batch_id and job.status in found:
                found[job.status] += 1
        return found


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


def test_a_poll_counts_the_pending_jobs_without_reading_one() -> None:
    """50 pending jobs: the check counts them and hands no job out of BatchIndex."""
    jobs, batches, batch_id = a_large_day(PENDING)
    found = tally(jobs, batches, batches.require(batch_id), lambda _: 0, is_last_poll=False)
    assert found.counts.pending == PENDING
    assert jobs.handed_out == 0


def test_what_the_sweep_completed_or_could_not_read_is_taken_off_pending() -> None:
    """The sweep completed 2 and met 1 it could not read: 47 pending, the unreadable one an
    error named by FileID."""
    jobs, batches, batch_id = a_large_day(PENDING)

    def sweep(on_unreadable: UnreadableHandler) -> int:
        on_unreadable(CorruptRecordError("no Entity", key="entity0-2026-02-28"))
        return 2

    found = tally(jobs, batches, batches.require(batch_id), sweep, is_last_poll=False)
    assert found.counts.pending == PENDING - 3
    assert (found.error, found.unreadable) == (1, {"entity0-2026-02-28"})

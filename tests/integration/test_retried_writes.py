"""A write whose response was lost, sent again, against the emulator over HTTP.

botocore re-sends a request whose response never arrived (a dropped connection, a timeout)
with the same parameters. Here the repository call is simply made twice on the same
ManualClock: the second request is byte for byte the retry. When the first send landed, the
retry is refused by that very change; the stored item (ALL_OLD) shows it, and the call must
succeed with what the first send wrote. Anyone else's write stays refused.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.errors import (
    BatchExistsError,
    BatchTransitionRefusedError,
    ClaimRefusedError,
    LeaseLostError,
)
from dlpipe.domain.model import BatchStatus, FileJob, JobStatus
from tests.support import ManualClock, make_batch, make_job

pytestmark = pytest.mark.integration
LEASE_S = 60
# Owner ids as the service makes them: host:pid, and a part new for every claim.
MINE, MY_NEXT, THEIRS = "host-a:41:0a1b2c3d", "host-a:41:4e5f6a7b", "host-b:7:8c9d0e1f"
FACTS = {"byte_count": 7, "sha256": "b" * 64, "destination_key": "e/d/f"}


def _claimed(jobs: JobsTable, entity: str) -> FileJob:
    job = jobs.create(make_job(entity))
    return jobs.claim(job.file_id, MINE, LEASE_S)


def test_a_retried_claim_succeeds_with_the_lease_its_first_send_took(
    jobs: JobsTable, entity: str
) -> None:
    """The retry is refused by our own live lease; it returns that claim, counted once."""
    first = _claimed(jobs, entity)
    again = jobs.claim(first.file_id, MINE, LEASE_S)
    assert again == first
    assert (again.lease_owner, again.attempts) == (MINE, 1)
    assert jobs.require(first.file_id) == first


def test_another_workers_claim_of_a_held_job_is_still_refused(jobs: JobsTable, entity: str) -> None:
    """A different worker, and another claim of the same process, still find the job busy."""
    first = _claimed(jobs, entity)
    for owner in (THEIRS, MY_NEXT):
        with pytest.raises(ClaimRefusedError) as refused:
            jobs.claim(first.file_id, owner, LEASE_S)
        assert refused.value.current.lease_owner == MINE


def test_a_retried_lease_renewal_succeeds_with_the_same_lease(
    jobs: JobsTable, entity: str, clock: ManualClock
) -> None:
    """Renewing twice at one instant sets the same expiry (the condition still holds)."""
    first = _claimed(jobs, entity)
    clock.advance(20)
    renewed = jobs.extend_lease(first.file_id, MINE, LEASE_S)
    assert jobs.extend_lease(first.file_id, MINE, LEASE_S) == renewed


def test_a_retried_completion_succeeds_with_the_completed_job(jobs: JobsTable, entity: str) -> None:
    """The retry is refused (the job is completed, no owner); it returns the completed job."""
    first = _claimed(jobs, entity)
    done = jobs.complete(first.file_id, MINE, **FACTS)
    again = jobs.complete(first.file_id, MINE, **FACTS)
    assert again == done
    assert (again.status, again.byte_count, again.finished_by) == (JobStatus.COMPLETED, 7, MINE)


@pytest.mark.parametrize("final", [JobStatus.FAILED, JobStatus.ERROR])
def test_a_retried_failure_succeeds_with_the_ended_job(
    jobs: JobsTable, entity: str, final: JobStatus
) -> None:
    """failed and error: the retry returns the job the first send ended."""
    first = _claimed(jobs, entity)
    ended = jobs.finish_unsuccessfully(first.file_id, MINE, final, "tag_mismatch: x")
    assert jobs.finish_unsuccessfully(first.file_id, MINE, final, "tag_mismatch: x") == ended


def test_a_retried_release_succeeds_with_the_available_job(jobs: JobsTable, entity: str) -> None:
    """The retry of a release returns the job it made available."""
    first = _claimed(jobs, entity)
    released = jobs.release(first.file_id, MINE)
    again = jobs.release(first.file_id, MINE)
    assert again == released
    assert (again.status, again.lease_owner) == (JobStatus.AVAILABLE, None)


def test_a_write_that_ended_someone_elses_claim_still_refuses_ours(
    jobs: JobsTable, entity: str, clock: ManualClock
) -> None:
    """Our claim taken over and completed by its new holder: our completion is refused."""
    first = _claimed(jobs, entity)
    clock.advance(LEASE_S + 1)
    jobs.claim(first.file_id, THEIRS, LEASE_S)
    jobs.complete(first.file_id, THEIRS, **FACTS)
    for write in (
        lambda: jobs.complete(first.file_id, MINE, **FACTS),
        lambda: jobs.release(first.file_id, MINE),
        lambda: jobs.finish_unsuccessfully(first.file_id, MINE, JobStatus.FAILED, "x"),
    ):
        with pytest.raises(LeaseLostError):
            write()


def test_a_new_claim_clears_the_mark_of_the_claim_that_ended_before(
    jobs: JobsTable, entity: str
) -> None:
    """FinishedBy names the claim that ended the job; the next claim removes it."""
    first = _claimed(jobs, entity)
    assert jobs.release(first.file_id, MINE).finished_by == MINE
    assert jobs.claim(first.file_id, MY_NEXT, LEASE_S).finished_by is None
    with pytest.raises(LeaseLostError):
        jobs.release(first.file_id, MINE)


def test_a_retried_create_batch_succeeds_and_a_different_one_is_refused(
    batches: BatchesTable,
) -> None:
    """The same batch written twice is one create; another batch under its ID is refused."""
    batch = batches.create(make_batch())
    assert batches.create(batch) == batch
    with pytest.raises(BatchExistsError):
        batches.create(replace(batch, start_time="2026-02-28T01:00:00.000+00:00"))


def test_a_retried_mark_queued_succeeds(batches: BatchesTable) -> None:
    """queued -> queued is allowed: the retry lands again with the same values."""
    batch = batches.create(make_batch())
    queued = batches.mark_queued(batch.batch_id, {"a-2026-02-28"})
    assert batches.mark_queued(batch.batch_id, {"a-2026-02-28"}) == queued


@pytest.mark.parametrize("final", [BatchStatus.COMPLETED, BatchStatus.FAILED, BatchStatus.TIMEOUT])
def test_a_retried_final_status_succeeds_and_a_later_one_is_refused(
    batches: BatchesTable, clock: ManualClock, final: BatchStatus
) -> None:
    """The retry returns the finished batch; another poller's write a moment later is refused."""
    batch = batches.create(make_batch())
    batches.mark_queued(batch.batch_id, {"a-2026-02-28"})
    finished = batches.finish(batch.batch_id, final)
    assert batches.finish(batch.batch_id, final) == finished
    clock.advance(1)
    with pytest.raises(BatchTransitionRefusedError):
        batches.finish(batch.batch_id, final)

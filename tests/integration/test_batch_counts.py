"""A day larger than SETS_MAX_FILES: the batch item stays small, completion counts through
BatchIndex at a measured, bounded read cost (DynamoDB Local over HTTP)."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from dlpipe.adapters import jobs_index
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.items import job_to_item
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.model import SETS_MAX_FILES, BatchStatus, FileJob, JobStatus
from dlpipe.domain.schema import BATCH_SHARDS, STATUS_SHARDS
from dlpipe.domain.shards import shard_number
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.support import ManualClock, make_batch, make_job, own_table, put_all, unique_day

pytestmark = pytest.mark.integration
LARGE_DAY = 1_500
PAGE_BYTES = 1024 * 1024  # a Query page reads at most 1 MB
UNIT_BYTES = 4096


class _NoListing:
    def list_files(self, date: str) -> Any:
        raise AssertionError("these tests never fetch")


@pytest.fixture(scope="module")
def jobs_table_name(clients: AwsClients) -> Iterator[str]:
    """A jobs table of this module's own: these tests weigh what a poll reads (the sweeper's
    StatusIndex Queries, at the far-future ManualClock, read any job other tests left pending
    in the shared table)."""
    with own_table(clients) as name:
        yield name


@pytest.fixture
def jobs(clients: AwsClients, jobs_table_name: str, clock: ManualClock) -> JobsTable:
    """The module's own jobs table, on the test's clock."""
    return JobsTable(clients.dynamodb, jobs_table_name, clock)


@pytest.fixture
def queue(clients: AwsClients) -> Iterator[JobQueue]:
    """A queue of this test's own, deleted afterwards."""
    url = clients.sqs.create_queue(QueueName=f"counts-{uuid.uuid4().hex[:16]}")["QueueUrl"]
    yield JobQueue(clients.sqs, url)
    clients.sqs.delete_queue(QueueUrl=url)


@pytest.fixture
def flow(
    jobs: JobsTable, batches: BatchesTable, queue: JobQueue, clock: ManualClock
) -> BatchFlowService:
    """The flow on the shared tables; no provider (the jobs are written directly)."""
    return BatchFlowService(
        jobs=jobs,
        batches=batches,
        provider=_NoListing(),
        queue=queue,
        clock=clock,
        new_uuid=lambda: str(uuid.uuid4()),
    )


def item_size_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values (S as UTF-8, N ~ digits/2 + 1)."""

    def value_size(value: dict[str, Any]) -> int:
        kind, data = next(iter(value.items()))
        if kind == "S":
            return len(data.encode())
        if kind == "N":
            return len(data.lstrip("-").replace(".", "")) // 2 + 1
        if kind == "SS":
            return sum(len(v.encode()) for v in data)
        return 1  # BOOL, NULL

    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


def query_rcu(sizes: list[int]) -> float:
    """What a Query costs: per page (1 MB or QUERY_PAGE_ITEMS items, whichever is reached
    first), ceil(bytes / 4 KB) x 0.5 (eventually consistent)."""
    pages: list[list[int]] = [[]]
    for size in sizes:
        page = pages[-1]
        if sum(page) + size > PAGE_BYTES or len(page) == jobs_index.QUERY_PAGE_ITEMS:
            pages.append([])
        pages[-1].append(size)
    return sum(0.5 * math.ceil(sum(p) / UNIT_BYTES) for p in pages if p)


def write_day(
    jobs: JobsTable, batches: BatchesTable, entity: str, n: int, done: int
) -> tuple[str, list[FileJob]]:
    """A queued batch of `n` jobs, the first `done` of them already completed."""
    day = unique_day()
    batch = batches.create(make_batch(day))
    written = []
    for i in range(n):
        job = make_job(f"{entity}{i}", day, batch_id=batch.batch_id)
        if i < done:
            job = replace(job, status=JobStatus.COMPLETED, completed_at=job.created_at)
        written.append(job)
    put_items(jobs, written)
    batches.mark_queued(batch.batch_id, {j.file_id for j in written})
    return batch.batch_id, written


def put_items(jobs: JobsTable, batch: list[FileJob]) -> None:
    """The items jobs.create (or, for a completed job, jobs.complete) leaves, 25 to a request:
    these tests weigh reads; the writes' conditions are the property tests'."""
    put_all(jobs._client, jobs.table_name, [job_to_item(job) for job in batch])


def completed(job: FileJob) -> FileJob:
    """`job` as jobs.complete leaves it (the values these tests complete with)."""
    return replace(
        job,
        status=JobStatus.COMPLETED,
        completed_at=job.created_at,
        byte_count=1,
        sha256="0" * 64,
        destination_key="k",
    )


def stored_item(clients: AwsClients, batches: BatchesTable, batch_id: str) -> dict[str, Any]:
    """The batch item as DynamoDB holds it."""
    return clients.dynamodb.get_item(
        TableName=batches.table_name, Key={"BatchID": {"S": batch_id}}
    )["Item"]


def jobs_sizes(clients: AwsClients, jobs: JobsTable, batch: list[FileJob]) -> dict[str, int]:
    """Each job item's size as stored."""
    sizes = {}
    for start in range(0, len(batch), 100):  # BatchGetItem's most keys a request
        keys = [{"FileID": {"S": job.file_id}} for job in batch[start : start + 100]]
        pending: dict[str, Any] = {jobs.table_name: {"Keys": keys, "ConsistentRead": True}}
        while pending:
            answer = clients.dynamodb.batch_get_item(RequestItems=pending)
            for item in answer["Responses"].get(jobs.table_name, []):
                sizes[item["FileID"]["S"]] = item_size_bytes(item)
            pending = dict(answer["UnprocessedKeys"])
    assert len(sizes) == len(batch)
    return sizes


def test_a_large_day_keeps_a_small_item_and_completes_by_counts(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    clients: AwsClients,
    entity: str,
) -> None:
    """1,500 jobs: the batch item carries counts and no sets (< 10 KB), and the completion
    check counts them through BatchIndex and completes the batch."""
    batch_id, written = write_day(jobs, batches, entity, LARGE_DAY, done=LARGE_DAY - 2)
    queued = batches.require(batch_id)
    assert (queued.expected, queued.queued_count, queued.sets_truncated) == (1500, 1500, True)
    assert queued.expected_files == frozenset()
    first = flow.check_completion(batch_id, 1, False)
    assert (first.status, first.pending, first.completed) == (None, 2, LARGE_DAY - 2)
    for job in written[-2:]:
        jobs.claim(job.file_id, "w", 60)
        jobs.complete(job.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
    final = flow.check_completion(batch_id, 2, False)
    assert (final.status, final.completed, final.failed, final.pending) == ("completed", 1500, 0, 0)
    item = stored_item(clients, batches, batch_id)
    assert not {"ExpectedFiles", "CompletedFiles", "FailedFiles"} & set(item)
    assert item["CompletedCount"] == {"N": "1500"}
    assert item_size_bytes(item) < 10_000


def test_a_poll_costs_what_its_pending_jobs_weigh_not_the_day(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    clients: AwsClients,
    entity: str,
) -> None:
    """The read capacity DynamoDB reports for a poll is its shards' index COUNTs, whatever the
    jobs and the completed ones weigh: no pending job is fetched; counting the completed ones,
    at the end, reads index items only."""
    batch_id, written = write_day(jobs, batches, entity, LARGE_DAY, done=LARGE_DAY - 100)
    sizes = jobs_sizes(clients, jobs, written)
    jobs.meter.read_capacity_units = 0.0
    flow.check_completion(batch_id, 1, False)
    measured = jobs.meter.read_capacity_units
    # available (100 jobs): one COUNT Query a shard of its index items (~150 B each: well
    # under 4 KB a shard, 0.5 RCU); downloading..failed (one range Query a shard) and the
    # sweeper's StatusIndex Queries (2 statuses x 8 shards, none stale): what an empty
    # Query costs. Fetching the 100 jobs instead would add 0.5 RCU each.
    empty = query_rcu([])
    shards = {shard_number(j.file_id, BATCH_SHARDS) for j in written[-100:]}
    assert measured == 0.5 * len(shards) + (BATCH_SHARDS + 2 * STATUS_SHARDS) * empty
    assert measured < 0.5 * 100 / 4  # a quarter of fetching every pending job
    jobs.meter = type(jobs.meter)()
    for job in written[-100:]:
        jobs.claim(job.file_id, "w", 60)
        jobs.complete(job.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
    assert flow.check_completion(batch_id, 2, False).status == "completed"
    completed = list(jobs_sizes(clients, jobs, written).values())
    # Counting the completed ones reads their index items (keys, TTL and the manifest's
    # projected attributes), not the jobs: at least half a unit for each shard's Query, and a
    # third of what the jobs weigh plus each shard's rounding up to its next half unit (the
    # jobs' FileIDs fall on the shards unevenly; seen at 34.0 against 100.5 / 3 in a full run).
    rounding = 0.5 * BATCH_SHARDS
    assert (
        0.5 * BATCH_SHARDS
        <= jobs.meter.read_capacity_units
        < query_rcu(completed) / 3 + rounding
        < query_rcu(completed) / 2
    )
    assert sizes  # every job was written


def test_a_large_day_reads_at_most_a_quarter_unit_a_file_over_its_polls(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
) -> None:
    """1,500 files finishing over four polls: every poll's reads together (counts, sweeps,
    the final counts) stay under 0.25 RCU per file, as DynamoDB Local reports them."""
    batch_id, written = write_day(jobs, batches, entity, LARGE_DAY, done=0)
    jobs.meter = type(jobs.meter)()
    quarter = LARGE_DAY // 4
    for poll in range(1, 5):
        assert flow.check_completion(batch_id, poll, False).status is None
        finished = written[(poll - 1) * quarter : poll * quarter]
        put_items(jobs, [completed(job) for job in finished[:-1]])
        for job in finished[-1:]:  # one through the worker's own writes, as a check of the rest
            jobs.claim(job.file_id, "w", 60)
            jobs.complete(job.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
    assert flow.check_completion(batch_id, 5, False).status == "completed"
    assert jobs.meter.read_capacity_units / LARGE_DAY <= 0.25


def test_a_small_day_keeps_its_sets_and_reads_as_before(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
) -> None:
    """Within SETS_MAX_FILES the batch still names its files: ExpectedFiles, then
    CompletedFiles and FailedFiles once the day is done."""
    batch_id, written = write_day(jobs, batches, entity, 3, done=1)
    jobs.claim(written[1].file_id, "w", 60)
    jobs.complete(written[1].file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
    jobs.claim(written[2].file_id, "w", 60)
    jobs.finish_unsuccessfully(written[2].file_id, "w", JobStatus.FAILED, "gave up")
    assert flow.check_completion(batch_id, 1, False).status == "failed"
    batch = batches.require(batch_id)
    assert batch.expected_files == {j.file_id for j in written}
    assert batch.completed_files == {written[0].file_id, written[1].file_id}
    assert batch.failed_files == {written[2].file_id}
    assert (batch.expected, batch.completed, batch.unsuccessful) == (3, 2, 1)
    assert SETS_MAX_FILES >= 3


def test_an_item_written_before_counts_existed_reads_its_counts_from_its_sets(
    batches: BatchesTable,
) -> None:
    """A batch item with sets and no counts (the seed's layout) reports the same numbers."""
    old = make_batch(
        unique_day(),
        status=BatchStatus.QUEUED,
        expected_files=frozenset({"a-2026-02-28", "b-2026-02-28", "c-2026-02-28"}),
        completed_files=frozenset({"a-2026-02-28"}),
        failed_files=frozenset({"b-2026-02-28"}),
    )
    batches.create(old)
    read = batches.require(old.batch_id)
    assert (read.expected, read.completed, read.unsuccessful, read.pending) == (3, 1, 1, 1)
    assert read.pending_files == {"c-2026-02-28"}


def test_a_job_not_yet_visible_in_the_index_keeps_the_batch_open(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
) -> None:
    """A large day whose index shows fewer jobs than ExpectedCount (index lag, a job not yet
    written) is not done: nothing pending is not enough."""
    batch_id, _ = write_day(jobs, batches, entity, SETS_MAX_FILES + 1, done=SETS_MAX_FILES + 1)
    batches.mark_queued(batch_id, set(), expected_count=SETS_MAX_FILES + 2)
    check = flow.check_completion(batch_id, 1, False)
    assert (check.status, check.completed, check.pending) == (None, SETS_MAX_FILES + 1, 1)
    assert flow.check_completion(batch_id, 2, True).status == "timeout"


def test_a_large_rerun_counts_files_completed_under_the_earlier_batch(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
) -> None:
    """A rerun of a large day: jobs completed under the failed batch stay there and are
    counted from its BatchIndex partition, so the new batch completes."""
    old_id, written = write_day(jobs, batches, entity, SETS_MAX_FILES + 1, done=SETS_MAX_FILES + 1)
    batches.finish(old_id, BatchStatus.FAILED, error_message="check_failed: test")
    day = batches.require(old_id).polling_date
    new = batches.create(make_batch(day))
    batches.mark_queued(new.batch_id, {j.file_id for j in written})
    check = flow.check_completion(new.batch_id, 1, False)
    assert (check.status, check.completed, check.pending) == ("completed", SETS_MAX_FILES + 1, 0)


def test_a_count_follows_every_page_when_the_page_limit_binds(
    jobs: JobsTable, batches: BatchesTable, monkeypatch: pytest.MonkeyPatch, entity: str
) -> None:
    """Query pages end at QUERY_PAGE_ITEMS items (DynamoDB Local needs it to page in linear
    time): a count and a read still see every job, across as many pages as that makes."""
    monkeypatch.setattr(jobs_index, "QUERY_PAGE_ITEMS", 7)
    batch_id, written = write_day(jobs, batches, entity, 40, done=23)
    jobs.meter = type(jobs.meter)()
    assert jobs.count_by_batch(batch_id, JobStatus.COMPLETED) == 23
    # Per shard, n // 7 + 1 pages: full pages of 7, then the one that ends the shard.
    per_shard = Counter(shard_number(j.file_id, BATCH_SHARDS) for j in written[:23])
    assert jobs.meter.pages == sum(per_shard.get(n, 0) // 7 + 1 for n in range(BATCH_SHARDS))
    pending = list(jobs.query_by_batch(batch_id, JobStatus.AVAILABLE))
    assert sorted(j.file_id for j in pending) == sorted(j.file_id for j in written[23:])
    assert len(jobs.batch_file_ids(batch_id)) == 40


def rerun_of(batches: BatchesTable, old_id: str, written: list[FileJob]) -> str:
    """A rerun's batch after `old_id` timed out: same date, queued with every file of the day."""
    batches.finish(old_id, BatchStatus.TIMEOUT, timeout_at="x")
    new = batches.create(make_batch(batches.require(old_id).polling_date))
    batches.mark_queued(new.batch_id, {j.file_id for j in written})
    return new.batch_id


@pytest.mark.parametrize("n", [3, SETS_MAX_FILES + 1])
def test_a_rerun_that_times_out_still_counts_files_completed_under_the_earlier_batch(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
    n: int,
) -> None:
    """A rerun whose one adopted file is still pending at the last poll times out with the
    earlier batch's completed files counted completed (not missing), small day or large."""
    old_id, written = write_day(jobs, batches, entity, n, done=n - 1)
    new_id = rerun_of(batches, old_id, written)
    jobs.adopt(written[-1].file_id, new_id)
    progress = flow.check_completion(new_id, 1, False)
    assert (progress.status, progress.completed, progress.pending) == (None, n - 1, 1)
    last = flow.check_completion(new_id, 2, True)
    assert (last.status, last.completed, last.failed, last.pending) == ("timeout", n - 1, 0, 1)
    stored = batches.require(new_id)
    assert (stored.completed, stored.unsuccessful, stored.pending) == (n - 1, 0, 1)


def test_a_second_poller_does_not_rewrite_the_counts_of_a_batch_the_first_one_finished(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
) -> None:
    """Two runs of a date poll one batch: the slower poller's stale counts are refused once
    the other completed it, it reports what the batch holds, and the audit calls the day done."""
    batch_id, written = write_day(jobs, batches, entity, 3, done=2)
    last = written[-1]

    def sweep_then_race(batch_id_: str, pending: Iterable[FileJob]) -> int:
        assert list(pending) == []  # this poller counted the last file pending (not stale)
        jobs.claim(last.file_id, "w", 60)
        jobs.complete(last.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
        assert flow.check_completion(batch_id_, 5, False).status == "completed"  # the other
        return 0

    slow = replace(flow)
    slow.sweep = sweep_then_race  # type: ignore[method-assign]
    seen = slow.check_completion(batch_id, 4, False)
    stored = batches.require(batch_id)
    assert (stored.status, stored.completed, stored.unsuccessful) == (BatchStatus.COMPLETED, 3, 0)
    assert (seen.status, seen.completed, seen.pending) == ("completed", 3, 0)


@pytest.mark.parametrize("n", [3, SETS_MAX_FILES + 1])
def test_a_rerun_whose_unadopted_file_fails_in_the_earlier_batch_ends_failed_and_polls_cheaply(
    flow: BatchFlowService,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
    n: int,
) -> None:
    """A rerun cannot adopt a file still held under a live lease in the earlier batch: its polls
    read that batch's pending and failed partitions, not every completed job, and the rerun
    ends failed once the file fails there."""
    old_id, written = write_day(jobs, batches, entity, n, done=n - 1)
    jobs.claim(written[-1].file_id, "w1", 3600)
    new_id = rerun_of(batches, old_id, written)
    jobs.meter = type(jobs.meter)()
    first = flow.check_completion(new_id, 1, False)
    assert (first.status, first.completed, first.pending) == (None, n - 1, 1)
    assert jobs.meter.read_capacity_units <= 2  # the 1,000 completed jobs weigh ~59 RCU
    jobs.finish_unsuccessfully(written[-1].file_id, "w1", JobStatus.FAILED, "gave up")
    second = flow.check_completion(new_id, 2, False)
    assert (second.status, second.completed, second.failed, second.pending) == (
        "failed",
        n - 1,
        1,
        0,
    )

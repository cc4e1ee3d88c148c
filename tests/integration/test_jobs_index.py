"""The jobs table's sharded, sparse indexes against the emulator over HTTP: what each write of
a file costs in each index (ConsumedCapacity, INDEXES), that an ended job leaves StatusIndex,
and that readers merge and page across every shard."""

from __future__ import annotations

from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.model import JobStatus
from dlpipe.domain.schema import BATCH_INDEX, BATCH_SHARDS, STATUS_INDEX
from dlpipe.domain.shards import batch_shard_number, shard_number, status_shard
from dlpipe.local.provision import Provisioned
from tests.support import ManualClock, make_job, new_batch_id

pytestmark = pytest.mark.integration
LEASE_S = 60
_TABLE = "table"


class CapacityRecorder:
    """A DynamoDB client that asks every write for its capacity by index and keeps it."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.writes: list[dict[str, float]] = []

    def __getattr__(self, name: str) -> Any:
        operation = getattr(self._client, name)
        if name not in {"put_item", "update_item"}:
            return operation

        def recorded(**request: Any) -> Any:
            response = operation(ReturnConsumedCapacity="INDEXES", **request)
            used = response["ConsumedCapacity"]
            indexes = used.get("GlobalSecondaryIndexes", {})
            self.writes.append(
                {
                    _TABLE: used["Table"]["CapacityUnits"],
                    **{name: float(c["CapacityUnits"]) for name, c in indexes.items()},
                }
            )
            return response

        return recorded


def _row(written: dict[str, float]) -> tuple[float, float, float]:
    return (
        written[_TABLE],
        written.get(STATUS_INDEX, 0.0),
        written.get(BATCH_INDEX, 0.0),
    )


def test_a_files_writes_cost_what_docs_architecture_computes(
    clients: AwsClients, provisioned: Provisioned, clock: ManualClock, entity: str
) -> None:
    """put, claim, lease fence, complete of a job item over 1 KB: table 2 WCU each;
    StatusIndex 1 (in), 2 (moved), 0, 1 (out); BatchIndex 1, 2, 0, 2: 16 + 1 in all."""
    recorder = CapacityRecorder(clients.dynamodb)
    jobs = JobsTable(recorder, provisioned.jobs_table, clock)  # type: ignore[arg-type]
    # The measured item's weight (BENCHMARKS.md, "The job item": 1071 B when put).
    job = make_job(
        entity, encrypted_aes_key="k" * 344, presigned_url="http://127.0.0.1/" + "u" * 300
    )
    jobs.create(job)
    clock.advance(1)
    jobs.claim(job.file_id, "w1", LEASE_S)
    clock.advance(1)
    jobs.extend_lease(job.file_id, "w1", LEASE_S)
    jobs.complete(job.file_id, "w1", byte_count=1, sha256="a" * 64, destination_key="k/x")
    rows = [_row(w) for w in recorder.writes]
    assert rows == [(2.0, 1.0, 1.0), (2.0, 2.0, 2.0), (2.0, 0.0, 0.0), (2.0, 1.0, 2.0)]
    assert sum(sum(r) for r in rows) == 17


def test_an_ended_job_leaves_status_index_and_a_requeue_brings_it_back(
    clients: AwsClients, provisioned: Provisioned, jobs: JobsTable, entity: str
) -> None:
    """StatusShard while pending only: StatusIndex is sparse."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    jobs.finish_unsuccessfully(job.file_id, "w1", JobStatus.FAILED, "http_503: gone")
    raw = clients.dynamodb.get_item(
        TableName=provisioned.jobs_table, Key={"FileID": {"S": job.file_id}}
    )["Item"]
    assert "StatusShard" not in raw
    jobs.requeue(job.file_id)
    raw = clients.dynamodb.get_item(
        TableName=provisioned.jobs_table, Key={"FileID": {"S": job.file_id}}
    )["Item"]
    assert raw["StatusShard"] == {"S": status_shard(JobStatus.AVAILABLE, job.file_id)}


def test_a_batch_is_read_whole_across_its_shards_and_paged_one_by_one(
    jobs: JobsTable, entity: str
) -> None:
    """40 files over 16 shards: query_by_batch returns each once in Status order; pages of
    one, two and seven (pages ending where a shard ends too) return each once, then end."""
    batch_id = new_batch_id()
    made = [jobs.create(make_job(f"{entity}n{i}", batch_id=batch_id)) for i in range(40)]
    for job in made[:10]:
        jobs.claim(job.file_id, "w1", LEASE_S)
    assert len({shard_number(j.file_id, BATCH_SHARDS) for j in made}) > 8
    read = list(jobs.query_by_batch(batch_id))
    assert sorted(j.file_id for j in read) == sorted(j.file_id for j in made)
    assert [j.status for j in read] == sorted(j.status for j in read)
    assert [j.file_id for j in jobs.query_by_batch(batch_id, JobStatus.DOWNLOADING)] == [
        j.file_id for j in read if j.status is JobStatus.DOWNLOADING
    ]
    for size in (1, 2, 7):
        seen: list[str] = []
        start: dict[str, str] | None = None
        while True:
            page, start = jobs.page_by_batch(batch_id, limit=size, start=start)
            assert len(page) <= size
            seen += [j.file_id for j in page]
            if start is None:
                break
            assert batch_shard_number(start["BatchShard"], batch_id) is not None
        assert sorted(seen) == sorted(j.file_id for j in made)
    assert jobs.count_by_batch(batch_id, JobStatus.AVAILABLE) == 30
    assert len(jobs.batch_file_ids(batch_id)) == 40


class CallNames:
    """A DynamoDB client that notes the name of every operation called through it."""

    def __init__(self, client: Any) -> None:
        self._client, self.called = client, list[str]()

    def __getattr__(self, name: str) -> Any:
        self.called.append(name)
        return getattr(self._client, name)


def test_a_batchs_manifest_rows_come_from_its_index_items_alone(
    clients: AwsClients, provisioned: Provisioned, clock: ManualClock, entity: str
) -> None:
    """rows_by_batch: each completed job's entity, key, size and SHA-256 and each failed
    job's error, read from BatchIndex (its projection) with Queries only: no job fetched."""
    writer = JobsTable(clients.dynamodb, provisioned.jobs_table, clock)
    batch_id = new_batch_id()
    made = [writer.create(make_job(f"{entity}m{i}", batch_id=batch_id)) for i in range(5)]
    for n, job in enumerate(made):
        writer.claim(job.file_id, "w1", LEASE_S)
        if n < 4:
            writer.complete(
                job.file_id, "w1", byte_count=10 + n, sha256=f"{n}" * 64, destination_key=f"k/{n}"
            )
        else:
            writer.finish_unsuccessfully(job.file_id, "w1", JobStatus.FAILED, "http_404: gone")
    calls = CallNames(clients.dynamodb)
    reader = JobsTable(calls, provisioned.jobs_table, clock)  # type: ignore[arg-type]
    done = sorted(reader.rows_by_batch(batch_id, JobStatus.COMPLETED), key=lambda r: r.file_id)
    failed = list(reader.rows_by_batch(batch_id, JobStatus.FAILED))
    assert [(r.entity, r.destination_key, r.byte_count, r.sha256) for r in done] == [
        (f"{entity}m{n}", f"k/{n}", 10 + n, f"{n}" * 64) for n in range(4)
    ]
    assert [(r.file_id, r.error_message) for r in failed] == [(made[4].file_id, "http_404: gone")]
    assert set(calls.called) == {"query"}


def test_stuck_jobs_merge_every_shard_oldest_first(
    jobs: JobsTable, entity: str, clock: ManualClock
) -> None:
    """Claims made a second apart, across shards, come back in claim order; a limit cuts."""
    made = [jobs.create(make_job(f"{entity}s{i}", now_ms=clock.now)) for i in range(12)]
    for job in made:
        clock.advance(1)
        jobs.claim(job.file_id, "w1", LEASE_S)
    cut = clock.now + 1
    found = [
        j.file_id
        for j in jobs.query_by_status(JobStatus.DOWNLOADING, older_than_ms=cut)
        if j.file_id in {m.file_id for m in made}
    ]
    assert found == [j.file_id for j in made]

"""The upgrade to the sharded indexes on DynamoDB Local: a jobs table provisioned with the
seed's indexes, jobs in every status written in the old shape, the indexes replaced as
Terraform replaces them (UpdateTable: delete, then create), `migrate_index_keys` run (what
`dlpipe tables migrate` runs), and the operator reads answer as before. Between the delete
and the create, a read of the index is one IndexNotReadyError line."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_migrate import migrate_index_keys
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.errors import IndexNotReadyError
from dlpipe.domain.model import JobStatus
from dlpipe.domain.schema import JOBS_INDEXES, JOBS_PROJECTIONS
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, world
from tests.support import ManualClock, make_job, unique_day

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "world"]  # fixtures used by the tests below


@pytest.fixture
def no_scan() -> list[str]:
    """The ops fixtures refuse every Scan; `tables migrate` makes the one Scan dlpipe has,
    the point of this file. (The other ops tests keep the refusal.)"""
    return []


# The seed's definitions: StatusIndex on Status + StatusUpdatedAt, BatchIndex on BatchID +
# Status, both projecting ALL.
SEED_INDEXES = {"StatusIndex": ("Status", "StatusUpdatedAt"), "BatchIndex": ("BatchID", "Status")}
TYPES = {"FileID": "S", "Status": "S", "StatusUpdatedAt": "N", "BatchID": "S"}


def _keys(hash_key: str, range_key: str) -> list[dict[str, str]]:
    return [
        {"AttributeName": hash_key, "KeyType": "HASH"},
        {"AttributeName": range_key, "KeyType": "RANGE"},
    ]


def _wait_active(clients: AwsClients, table: str) -> None:
    for _ in range(100):
        described = clients.dynamodb.describe_table(TableName=table)["Table"]
        indexes = described.get("GlobalSecondaryIndexes", [])
        if all(i["IndexStatus"] == "ACTIVE" for i in indexes):
            return
        time.sleep(0.1)
    raise AssertionError(f"{table}'s indexes stayed building")


@pytest.fixture
def seed_table(clients: AwsClients) -> Iterator[str]:
    """A jobs table with the seed's indexes, deleted afterwards."""
    name = f"jobs-seed-{uuid.uuid4().hex[:12]}"
    clients.dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, t in TYPES.items()],
        KeySchema=[{"AttributeName": "FileID", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {"IndexName": n, "KeySchema": _keys(*k), "Projection": {"ProjectionType": "ALL"}}
            for n, k in SEED_INDEXES.items()
        ],
    )
    yield name
    clients.dynamodb.delete_table(TableName=name)


def _replace_indexes(clients: AwsClients, table: str, between: list[str]) -> None:
    """Delete each index, then create it with this code's definition (schema.py), one GSI a
    call as DynamoDB allows; `between` gets the line a read gives while BatchIndex is gone."""
    for name in SEED_INDEXES:
        clients.dynamodb.update_table(
            TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": name}}]
        )
        _wait_active(clients, table)
    jobs = JobsTable(clients.dynamodb, table, ManualClock())
    with pytest.raises(IndexNotReadyError) as missing:
        jobs.count_by_batch("batch-2026-02-28-x", JobStatus.AVAILABLE)
    between.append(str(missing.value))
    for name, (hash_key, range_key) in JOBS_INDEXES.items():
        kind, extra = JOBS_PROJECTIONS[name]
        projection = {"ProjectionType": kind, "NonKeyAttributes": list(extra)}
        clients.dynamodb.update_table(
            TableName=table,
            AttributeDefinitions=[
                {"AttributeName": hash_key, "AttributeType": "S"},
                {"AttributeName": range_key, "AttributeType": TYPES[range_key]},
            ],
            GlobalSecondaryIndexUpdates=[
                {
                    "Create": {
                        "IndexName": name,
                        "KeySchema": _keys(hash_key, range_key),
                        "Projection": projection,
                    }
                }
            ],
        )
        _wait_active(clients, table)


def test_the_old_jobs_are_indexed_again_after_the_indexes_are_replaced_and_migrated(
    clients: AwsClients,
    seed_table: str,
    clock: ManualClock,
    entity: str,
    world: World,
    dlpipe_cli: CliRunner,
) -> None:
    """Jobs in every status, written in the old shape: after the indexes are replaced they are
    invisible, `migrate_index_keys` makes them visible (a re-run changes nothing), and the
    counts, a batch's list, the stuck claims and the oldest available read what was written."""
    jobs = JobsTable(clients.dynamodb, seed_table, clock)
    day = unique_day()
    batch_id = f"batch-{day}-{uuid.uuid4()}"
    written = {
        s: [jobs.create(make_job(f"{entity}{s}{i}", day, batch_id=batch_id)) for i in range(2)]
        for s in JobStatus
    }
    for status, pair in written.items():
        for job in pair:
            if status is not JobStatus.AVAILABLE:
                jobs.claim(job.file_id, "w", 60)
            if status is JobStatus.COMPLETED:
                jobs.complete(job.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
            elif status in (JobStatus.FAILED, JobStatus.ERROR):
                jobs.finish_unsuccessfully(job.file_id, "w", status, "gave up")
            # The old shape: no index key attributes of the new design.
            clients.dynamodb.update_item(
                TableName=seed_table,
                Key={"FileID": {"S": job.file_id}},
                UpdateExpression="REMOVE BatchShard, StatusShard",
            )
    between: list[str] = []
    _replace_indexes(clients, seed_table, between)
    assert between == [
        f"the table {seed_table!r}'s BatchIndex is being built (missing or being created); try"
        " again in a few minutes, then run `dlpipe tables migrate` once if this is an upgrade"
    ]
    assert jobs.count_by_batch(batch_id, JobStatus.AVAILABLE) == 0  # invisible until migrated
    # As an operator runs it: `dlpipe tables migrate` with the operator's credentials.
    ops = replace(world.ops, settings=replace(world.ops.settings, jobs_table=seed_table))
    run = dlpipe_cli("tables", "migrate", obj=ops)
    assert run.code == 0, run.err
    assert run.out.startswith(f"{seed_table}: 10 jobs scanned, 10 migrated, 0 already"), run.out
    again = migrate_index_keys(clients.dynamodb, seed_table)
    assert (again.migrated, again.already) == (0, 10)
    counts = jobs.counts_by_batch(batch_id, list(JobStatus))
    assert counts == dict.fromkeys(JobStatus, 2)
    listed = {j.file_id: j.status for j in jobs.query_by_batch(batch_id)}
    assert listed == {j.file_id: s for s, pair in written.items() for j in pair}
    clock.advance(61)
    stuck = {j.file_id for j in jobs.query_by_status(JobStatus.DOWNLOADING)}
    assert stuck == {j.file_id for j in written[JobStatus.DOWNLOADING]}
    oldest = jobs.edge_by_status(JobStatus.AVAILABLE)
    assert oldest is not None
    assert oldest.file_id in {j.file_id for j in written[JobStatus.AVAILABLE]}

"""data-download-jobs: the one-off migration that indexes jobs written before the sharded
indexes (`dlpipe tables migrate`). The only Scan in dlpipe: an operator runs it once after the
upgrade that replaced StatusIndex and BatchIndex.

A job written under the old design lacks BatchShard and StatusShard, so neither index holds
it. The Scan reads keys, BatchID and Status only (paginated); each job without BatchShard gets
it, and StatusShard while pending, by an UpdateItem conditional on the job still lacking
BatchShard and still having the BatchID and Status the Scan read: a re-run skips what is
done, and a job a writer moved meanwhile is left to that writer (the new code writes both
shards on every status change; an old writer's change is picked up by a re-run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from dlpipe.adapters import dynamo
from dlpipe.adapters.jobs_reads import job_names
from dlpipe.domain.schema import (
    BATCH_ID_ATTRIBUTE,
    BATCH_SHARD_ATTRIBUTE,
    FILE_ID_ATTRIBUTE,
    STATUS_ATTRIBUTE,
)
from dlpipe.domain.shards import batch_shard, status_shard
from dlpipe.domain.statuses import JobStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_SCAN_PAGE_ITEMS = 1000
_READ = "#id, #batch, #status, #bshard"


@dataclass
class MigrationCount:
    """What a run saw and did."""

    scanned: int = 0
    migrated: int = 0
    already: int = 0  # had BatchShard (written by the new code, or migrated before)
    skipped: int = 0  # moved by a writer between the Scan and the update, or unreadable


def migrate_index_keys(
    client: DynamoDBClient,
    table: str,
    on_page: Callable[[MigrationCount], None] | None = None,
) -> MigrationCount:
    """Set BatchShard on every job of `table` that lacks it, and StatusShard on the pending
    ones; `on_page` sees the running count after each Scan page."""
    count = MigrationCount()
    request: dict[str, Any] = {
        "ProjectionExpression": _READ,
        "ExpressionAttributeNames": job_names(_READ),
        "Limit": _SCAN_PAGE_ITEMS,
    }
    while True:
        page = dynamo.call(table, client.scan, **request)
        for item in page.get("Items", []):
            count.scanned += 1
            _migrate_one(client, table, item, count)
        if on_page is not None:
            on_page(count)
        start = page.get("LastEvaluatedKey")
        if not start:
            return count
        request["ExclusiveStartKey"] = start


def _migrate_one(
    client: DynamoDBClient, table: str, item: dict[str, Any], count: MigrationCount
) -> None:
    if BATCH_SHARD_ATTRIBUTE in item:
        count.already += 1
        return
    file_id = item.get(FILE_ID_ATTRIBUTE, {}).get("S")
    batch_id = item.get(BATCH_ID_ATTRIBUTE, {}).get("S")
    raw_status = item.get(STATUS_ATTRIBUTE, {}).get("S")
    if not file_id or not batch_id or raw_status not in set(JobStatus):
        count.skipped += 1  # not a job this code can index; `dlpipe jobs` names such items
        return
    status = JobStatus(raw_status)
    update = "SET #bshard = :bshard"
    values: dict[str, Any] = {
        ":bshard": {"S": batch_shard(batch_id, file_id)},
        ":batch": {"S": batch_id},
        ":status": {"S": raw_status},
    }
    shard = status_shard(status, file_id)
    if shard is not None:
        update += ", #sshard = :sshard"
        values[":sshard"] = {"S": shard}
    condition = "attribute_not_exists(#bshard) AND #batch = :batch AND #status = :status"
    try:
        dynamo.call(
            table,
            client.update_item,
            Key={FILE_ID_ATTRIBUTE: {"S": file_id}},
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=job_names(update + condition),
            ExpressionAttributeValues=values,
        )
    except ClientError:  # dynamo.call re-raises only a condition failure
        count.skipped += 1
        return
    count.migrated += 1

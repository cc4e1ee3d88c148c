"""StatusIndex reads that survive unreadable items: one bad record must not hide the others.

JobsTable.query_by_status stops at the first item that does not parse as a FileJob (a
hand-written or half-written item); an operator looking for stuck jobs needs the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlpipe.log import get_logger
from records import dynamo
from records.items import job_from_item
from records.model import FileJob, JobStatus
from records.schema import STATUS_INDEX

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class IndexPage:
    """Jobs read from the index, and the FileIDs of items that are not valid jobs."""

    jobs: list[FileJob]
    unreadable: list[str]


def _request(status: JobStatus, cutoff_ms: int, now_s: int) -> dict[str, Any]:
    return {
        "IndexName": STATUS_INDEX,
        "KeyConditionExpression": "#status = :status AND #updated < :cut",
        # DynamoDB deletes expired items lazily: leave out those past their TTL.
        "FilterExpression": "attribute_not_exists(#ttl) OR #ttl >= :now_s",
        "ExpressionAttributeNames": {
            "#status": "Status",
            "#updated": "StatusUpdatedAt",
            "#ttl": "TTL",
        },
        "ExpressionAttributeValues": {
            ":status": {"S": str(status)},
            ":cut": {"N": str(cutoff_ms)},
            ":now_s": {"N": str(now_s)},
        },
        "ScanIndexForward": True,
    }


def stale_jobs(
    client: DynamoDBClient,
    table: str,
    status: JobStatus,
    *,
    cutoff_ms: int,
    now_ms: int,
    limit: int | None,
) -> IndexPage:
    """Jobs in `status` last changed before `cutoff_ms`, oldest first; bad items set aside."""
    jobs: list[FileJob] = []
    unreadable: list[str] = []
    request = _request(status, cutoff_ms, now_ms // 1000)
    # No Limit on the query itself: unreadable items must not use up the caller's limit.
    for item in dynamo.paginate_query(client, table, request):
        try:
            jobs.append(job_from_item(item))
        except (TypeError, KeyError, ValueError) as exc:
            file_id = str(item.get("FileID", {}).get("S", "?"))
            get_logger(component="ops").warning(
                "ops.unreadable_item", file_id=file_id, error=str(exc)
            )
            unreadable.append(file_id)
        if limit is not None and len(jobs) >= limit:
            break
    return IndexPage(jobs, unreadable)

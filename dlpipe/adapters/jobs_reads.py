"""data-download-jobs: every read of a file's job (GetItem, BatchGetItem, indexed Queries).

Reads never write and never scan; an item past its TTL reads as absent, an unreadable one is
reported and skipped so it cannot hide the good ones. The conditional writes are
jobs_writes.py's; JobsTable (jobs_table.py) is both on one client.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from dlpipe.adapters import dynamo
from dlpipe.adapters.items import (
    JOB_ATTRIBUTES,
    expression_names,
    job_from_item,
    job_key,
    job_status_from_item,
)
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.errors import (
    CorruptRecordError,
    NotFoundError,
    StoreUnavailableError,
    UnreadableHandler,
)
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.rules import ttl_expired
from dlpipe.domain.schema import BATCH_INDEX, STATUS_INDEX
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = get_logger(component="records")
_BATCH_GET_MAX = 100
# Items a Query page evaluates at most (its Limit). With job items of ~1-1.5 KB, DynamoDB's
# own 1 MB page cap binds first (~700-1,000 items), so on AWS the pages, and the capacity
# each rounds up, are what they would be without it. It is there for DynamoDB Local, which
# reads every remaining row of the partition for each page when a Query has no Limit
# (a page costs O(rows left), so a count is quadratic in the partition: 100,000 jobs counted
# in 108 s; measured by bench/dynamodb_local_paging.py, figures in BENCHMARKS.md).
QUERY_PAGE_ITEMS = 1000
# One end of the StatusIndex: a few items a page, so expired (TTL) items first cost little.
EDGE_PAGE_ITEMS = 10
# Every attribute an expression names, by placeholder and record field (a placeholder for
# each: Status and TTL are reserved words).
JOB_NAMES = expression_names(
    JOB_ATTRIBUTES,
    id="file_id",
    status="status",
    updated="status_updated_at_ms",
    owner="lease_owner",
    lease="lease_expires_at_ms",
    attempts="attempts",
    error="error_message",
    completed="completed_at",
    bytes="byte_count",
    sha="sha256",
    dest="destination_key",
    url="presigned_url",
    urlexp="url_expires_at",
    batch="batch_id",
    ttl="ttl_epoch_s",
    listidx="listing_index",
    listedby="listed_by",
    finishedby="finished_by",
)


def job_names(expression: str) -> dict[str, str]:
    """The ExpressionAttributeNames `expression` uses."""
    return {k: v for k, v in JOB_NAMES.items() if k in expression}


@dataclass
class ReadMeter:
    """Read capacity units DynamoDB reported (ReturnConsumedCapacity=TOTAL) for index reads."""

    read_capacity_units: float = 0.0
    pages: int = 0

    def add(self, page: dict[str, Any]) -> None:
        """Account one Query page."""
        self.pages += 1
        self.read_capacity_units += float(
            page.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0)
        )


class UnprocessedKeysError(StoreUnavailableError):
    """BatchGetItem kept returning unprocessed keys (throttling)."""


class JobReads:
    """The reads of data-download-jobs; what its index reads cost lands in `meter`."""

    def __init__(self, client: DynamoDBClient, table_name: str, clock: Clock | None = None):
        self._client = client
        self.table_name = table_name
        self._clock = clock or SystemClock()
        self.meter = ReadMeter()  # what BatchIndex reads cost, for the poll's log and tests

    def _live(self, item: dict[str, Any] | None) -> FileJob | None:
        if not item:
            return None
        job = job_from_item(item)
        return None if ttl_expired(job.ttl_epoch_s, self._clock.now_ms() // 1000) else job

    def get(self, file_id: str, *, consistent: bool = True) -> FileJob | None:
        """The job for `file_id`, or None (absent or past its TTL)."""
        response = dynamo.call(
            self.table_name,
            self._client.get_item,
            Key=job_key(file_id),
            ConsistentRead=consistent,
        )
        return self._live(response.get("Item"))

    def require(self, file_id: str) -> FileJob:
        """The job for `file_id`, or NotFoundError."""
        job = self.get(file_id)
        if job is None:
            raise NotFoundError(f"no job {file_id!r} in {self.table_name}")
        return job

    def batch_get(
        self,
        file_ids: Iterable[str],
        *,
        consistent: bool = False,
        on_unreadable: UnreadableHandler | None = None,
    ) -> dict[str, FileJob]:
        """Jobs by FileID via BatchGetItem (100 keys a call, unprocessed keys retried)."""
        unique = sorted(set(file_ids))
        found: dict[str, FileJob] = {}
        for start in range(0, len(unique), _BATCH_GET_MAX):
            chunk = unique[start : start + _BATCH_GET_MAX]
            for item in self._batch_get_chunk(chunk, consistent):
                job = self._readable(item, on_unreadable)
                if job is not None:
                    found[job.file_id] = job
        return found

    def _readable(
        self, item: dict[str, Any], on_unreadable: UnreadableHandler | None
    ) -> FileJob | None:
        """The live job in `item`; None (reported, logged) when the item is not a valid job."""
        try:
            return self._live(item)
        except CorruptRecordError as exc:
            # One bad item must not hide the good ones from an operator or the poller.
            log.warning("record.unreadable", table=self.table_name, file_id=exc.key, error=str(exc))
            if on_unreadable is not None:
                on_unreadable(exc)
            return None

    def _batch_get_chunk(self, file_ids: list[str], consistent: bool) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            self.table_name: {
                "Keys": [job_key(f) for f in file_ids],
                "ConsistentRead": consistent,
            }
        }

        @retry(
            stop=stop_after_attempt(8),
            wait=wait_random_exponential(multiplier=0.05, max=2),
            retry=retry_if_exception_type(UnprocessedKeysError),
            reraise=True,
        )
        def fetch() -> None:
            nonlocal request
            try:
                response = self._client.batch_get_item(RequestItems=request)
            except (ClientError, BotoCoreError) as exc:
                dynamo.raise_store_error(exc, self.table_name)
            items.extend(response.get("Responses", {}).get(self.table_name, []))
            unprocessed = response.get("UnprocessedKeys") or {}
            if unprocessed:
                request = dict(unprocessed)
                raise UnprocessedKeysError(f"{self.table_name}: unprocessed keys remain")

        fetch()
        return items

    def query_by_status(
        self,
        status: JobStatus,
        *,
        older_than_ms: int | None = None,
        limit: int | None = None,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """Jobs in `status` (StatusIndex), oldest first; only those last changed before `older_than_ms`."""
        key = "#status = :status"
        values: dict[str, Any] = {":status": {"S": str(status)}}
        if older_than_ms is not None:
            key += " AND #updated < :cut"
            values[":cut"] = {"N": str(older_than_ms)}
        yield from self._query(STATUS_INDEX, key, values, limit, on_unreadable)

    def edge_by_status(self, status: JobStatus, *, newest: bool = False) -> FileJob | None:
        """The job in `status` changed longest ago (or, `newest`, most recently): StatusIndex
        in key order, EDGE_PAGE_ITEMS a page, stopping at the first live, readable job."""
        request = self._request(STATUS_INDEX, "#status = :status", {":status": {"S": str(status)}})
        request.update(ScanIndexForward=not newest, Limit=EDGE_PAGE_ITEMS)
        for item in dynamo.paginate_query(
            self._client, self.table_name, request, on_page=self.meter.add
        ):
            job = self._readable(item, None)
            if job is not None:
                return job
        return None

    def query_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int | None = None,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """Jobs of `batch_id` (BatchIndex), optionally only those in `status`."""
        key = "#batch = :batch"
        values: dict[str, Any] = {":batch": {"S": batch_id}}
        if status is not None:
            key += " AND #status = :status"
            values[":status"] = {"S": str(status)}
        yield from self._query(BATCH_INDEX, key, values, limit, on_unreadable)

    def page_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int,
        start: dict[str, str] | None = None,
    ) -> tuple[list[FileJob], dict[str, str] | None]:
        """One page of `batch_id`'s jobs (BatchIndex order), at most `limit`, after `start`
        (the key a previous page returned); the jobs, and the key to go on from (None: the
        end). Limit bounds each Query's read, so no page reads past what it returns."""
        key = "#batch = :batch"
        values: dict[str, Any] = {":batch": {"S": batch_id}}
        if status is not None:
            key += " AND #status = :status"
            values[":status"] = {"S": str(status)}
        request = self._request(BATCH_INDEX, key, values)
        found: list[FileJob] = []
        start_key = {k: {"S": v} for k, v in start.items()} if start else None
        while len(found) < limit:
            asked = dict(request, Limit=min(QUERY_PAGE_ITEMS, limit - len(found)))
            if start_key:
                asked["ExclusiveStartKey"] = start_key
            page = dynamo.call(self.table_name, self._client.query, **asked)
            self.meter.add(dict(page))
            found += [j for i in page.get("Items", []) if (j := self._readable(i, None))]
            start_key = page.get("LastEvaluatedKey")
            if not start_key:
                break
        after = {k: str(v.get("S", "")) for k, v in start_key.items()} if start_key else None
        return found, after

    def count_by_batch(self, batch_id: str, status: JobStatus) -> int:
        """How many jobs of `batch_id` are in `status`: BatchIndex, Select=COUNT, paged.

        Costs what the matching index items weigh (ceil(bytes / 4 KB) x 0.5 RCU a page),
        not what the batch weighs; the cost lands in `meter`.
        """
        request = self._request(
            BATCH_INDEX,
            "#batch = :batch AND #status = :status",
            {":batch": {"S": batch_id}, ":status": {"S": str(status)}},
        )
        counted: list[int] = []

        def count_page(page: dict[str, Any]) -> None:
            self.meter.add(page)
            counted.append(int(page.get("Count", 0)))

        request["Select"] = "COUNT"
        for _ in dynamo.paginate_query(self._client, self.table_name, request, on_page=count_page):
            pass
        return sum(counted)

    def batch_file_ids(self, batch_id: str) -> dict[str, JobStatus | None]:
        """FileID -> status of every job of `batch_id` (BatchIndex, FileID and Status only).

        None for a status that is not one (an unreadable item). For a small day only: it
        reads the whole batch.
        """
        request = self._request(BATCH_INDEX, "#batch = :batch", {":batch": {"S": batch_id}})
        request["ProjectionExpression"] = "#id, #status"
        request["ExpressionAttributeNames"] = job_names(
            "#id #status " + request["KeyConditionExpression"] + request["FilterExpression"]
        )
        found: dict[str, JobStatus | None] = {}
        for item in dynamo.paginate_query(
            self._client, self.table_name, request, on_page=self.meter.add
        ):
            file_id, status = job_status_from_item(item)
            found[file_id] = status
        return found

    def _request(self, index: str, key: str, values: dict[str, Any]) -> dict[str, Any]:
        # Items past their TTL may linger (DynamoDB deletes lazily): filter them out.
        filter_expression = "attribute_not_exists(#ttl) OR #ttl >= :now_s"
        return {
            "IndexName": index,
            "KeyConditionExpression": key,
            "FilterExpression": filter_expression,
            "ExpressionAttributeNames": job_names(key + filter_expression),
            "ExpressionAttributeValues": {
                **values,
                ":now_s": {"N": str(self._clock.now_ms() // 1000)},
            },
            "ScanIndexForward": True,
            "Limit": QUERY_PAGE_ITEMS,
            "ReturnConsumedCapacity": "TOTAL",
        }

    def _query(
        self,
        index: str,
        key: str,
        values: dict[str, Any],
        limit: int | None,
        on_unreadable: UnreadableHandler | None,
    ) -> Iterator[FileJob]:
        request = self._request(index, key, values)
        yielded = 0
        # The caller's limit is not the Query's Limit (a page size): unreadable items cannot
        # use it up.
        for item in dynamo.paginate_query(
            self._client, self.table_name, request, on_page=self.meter.add
        ):
            job = self._readable(item, on_unreadable)
            if job is None:
                continue
            yield job
            yielded += 1
            if limit is not None and yielded >= limit:
                return

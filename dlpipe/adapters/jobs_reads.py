"""data-download-jobs: the reads of a file's job by key (GetItem, BatchGetItem); the indexed
Queries are jobs_index.py's.

Reads never write and never scan; an item past its TTL reads as absent, an unreadable one is
reported and skipped so it cannot hide the good ones. The conditional writes are
jobs_writes.py's; JobsTable (jobs_table.py) is both on one client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
)
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.errors import (
    CorruptRecordError,
    NotFoundError,
    StoreUnavailableError,
    UnreadableHandler,
)
from dlpipe.domain.model import FileJob
from dlpipe.domain.rules import ttl_expired
from dlpipe.domain.schema import (
    BATCH_SHARD_ATTRIBUTE,
    STATUS_SHARD_ATTRIBUTE,
)
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = get_logger(component="records")
_BATCH_GET_MAX = 100
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
    # A restatement's revise and withdraw (jobs_revision_writes.py), and the worker's record
    # of the version a revision replaced.
    aeskey="encrypted_aes_key",
    aesiv="encoded_aes_iv",
    cipher="cipher",
    expsize="expected_size",
    expsha="expected_sha256",
    revision="revision",
    revisedas="revised_as",
    prevver="previous_version_id",
    prevsha="previous_sha256",
    prevsize="previous_size",
    withdrawnby="withdrawn_by",
) | {"#sshard": STATUS_SHARD_ATTRIBUTE, "#bshard": BATCH_SHARD_ATTRIBUTE}


def job_names(expression: str) -> dict[str, str]:
    """The ExpressionAttributeNames `expression` uses."""
    return {k: v for k, v in JOB_NAMES.items() if k in expression}


@dataclass
class ReadMeter:
    """Read capacity units DynamoDB reported (ReturnConsumedCapacity=TOTAL) for index reads
    and the fetches by key that follow them (jobs_index.py)."""

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
        return self._batch_get(file_ids, consistent, on_unreadable, None)

    def fetch_jobs(
        self, file_ids: Iterable[str], on_unreadable: UnreadableHandler | None
    ) -> dict[str, FileJob]:
        """The jobs an index read named, by key (eventually consistent, as the index read
        was); what the fetch costs lands in `meter` with the index read's."""
        return self._batch_get(file_ids, False, on_unreadable, self.meter.add)

    def _batch_get(
        self,
        file_ids: Iterable[str],
        consistent: bool,
        on_unreadable: UnreadableHandler | None,
        on_response: Callable[[dict[str, Any]], None] | None,
    ) -> dict[str, FileJob]:
        unique = sorted(set(file_ids))
        found: dict[str, FileJob] = {}
        for start in range(0, len(unique), _BATCH_GET_MAX):
            chunk = unique[start : start + _BATCH_GET_MAX]
            for item in self._batch_get_chunk(chunk, consistent, on_response):
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

    def _batch_get_chunk(
        self,
        file_ids: list[str],
        consistent: bool,
        on_response: Callable[[dict[str, Any]], None] | None,
    ) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            self.table_name: {
                "Keys": [job_key(f) for f in file_ids],
                "ConsistentRead": consistent,
            }
        }
        metered: dict[str, Any] = {"ReturnConsumedCapacity": "TOTAL"} if on_response else {}

        @retry(
            stop=stop_after_attempt(8),
            wait=wait_random_exponential(multiplier=0.05, max=2),
            retry=retry_if_exception_type(UnprocessedKeysError),
            reraise=True,
        )
        def fetch() -> None:
            nonlocal request
            try:
                response = self._client.batch_get_item(RequestItems=request, **metered)
            except (ClientError, BotoCoreError) as exc:
                dynamo.raise_store_error(exc, self.table_name)
            if on_response is not None:
                used = sum(
                    c.get("CapacityUnits", 0.0) for c in response.get("ConsumedCapacity", [])
                )
                on_response({"ConsumedCapacity": {"CapacityUnits": used}})
            items.extend(response.get("Responses", {}).get(self.table_name, []))
            unprocessed = response.get("UnprocessedKeys") or {}
            if unprocessed:
                request = dict(unprocessed)
                raise UnprocessedKeysError(f"{self.table_name}: unprocessed keys remain")

        fetch()
        return items

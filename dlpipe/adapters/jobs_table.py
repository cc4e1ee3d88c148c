"""data-download-jobs: every read and conditional write of a file's job lives here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
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
    job_to_item,
    serialize,
)
from dlpipe.adapters.status_conditions import StatusClause, any_of, status_in
from dlpipe.domain.clock import Clock, SystemClock, iso_from_ms, normalized_iso
from dlpipe.domain.errors import (
    ClaimRefusedError,
    CorruptRecordError,
    JobExistsError,
    LeaseLostError,
    ListedTwiceError,
    NotFoundError,
    RequeueRefusedError,
    StoreUnavailableError,
)
from dlpipe.domain.model import FileJob, JobStatus, listed_by
from dlpipe.domain.rules import lease_expiry_ms, ttl_expired
from dlpipe.domain.schema import BATCH_INDEX, STATUS_INDEX
from dlpipe.domain.statuses import LEASED_JOB_STATUSES, UNSUCCESSFUL_JOB_STATUSES
from dlpipe.domain.transitions import is_own_job_write, job_sources
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = get_logger(component="records")
UnreadableHandler = Callable[[CorruptRecordError], None]
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
# A claim's lease ran out strictly before now, or it never had one (rule: lease_expired).
_EXPIRED = "(attribute_not_exists(#lease) OR #lease < :now)"
# Every ConditionExpression below mirrors one rule of dlpipe/domain/transitions.py, named
# next to it; tests/property/test_conditions.py checks each pair on generated states. Their
# status lists come from the status table (dlpipe/domain/statuses.py), never written out.


def _unheld(sources: frozenset[JobStatus]) -> StatusClause:
    """A job in `sources` that nobody holds: a leased status only once its lease ran out."""
    free = sources.difference(LEASED_JOB_STATUSES)
    leased = sources.intersection(LEASED_JOB_STATUSES)
    clauses = [status_in(free)] if free else []
    if leased:
        held = status_in(leased)
        clauses.append(StatusClause(f"{held.expression} AND {_EXPIRED}", held.values))
    return any_of(*clauses)


# Claim: an available job, or a takeover of a claim whose lease ran out. Rule: may_claim.
_CLAIMABLE = _unheld(job_sources(JobStatus.DOWNLOADING))
# Requeue and adopt: a job nobody holds and that is not done (failed, error, available, or a
# claim whose lease ran out) goes back to available; `force` also takes a live claim.
# Rule: may_requeue (force: may_requeue(force=True)).
_REQUEUABLE = _unheld(job_sources(JobStatus.AVAILABLE))
_FORCE_REQUEUABLE = status_in(job_sources(JobStatus.AVAILABLE))
# A claim held under a lease (whoever holds it). Rule: holds_claim.
_HELD = status_in(LEASED_JOB_STATUSES)
_BACK_TO_AVAILABLE = (
    "#status = :available, #updated = :now REMOVE #owner, #lease, #error, #completed"
)
# Every attribute an expression names, by placeholder and record field (a placeholder for
# each: Status and TTL are reserved words).
_NAMES = expression_names(
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


def _names(expression: str) -> dict[str, str]:
    return {k: v for k, v in _NAMES.items() if k in expression}


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


class JobsTable:
    """Repository of FileJob records in data-download-jobs."""

    def __init__(self, client: DynamoDBClient, table_name: str, clock: Clock | None = None):
        self._client = client
        self.table_name = table_name
        self._clock = clock or SystemClock()
        self.meter = ReadMeter()  # what BatchIndex reads cost, for the poll's log and tests

    # ---- reads -------------------------------------------------------------------------

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
        request["ExpressionAttributeNames"] = _names(
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
            "ExpressionAttributeNames": _names(key + filter_expression),
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

    # ---- writes ------------------------------------------------------------------------

    def _update(
        self,
        file_id: str,
        *,
        update: str,
        condition: str,
        values: dict[str, Any],
        error: type[ClaimRefusedError | LeaseLostError | ListedTwiceError | RequeueRefusedError],
        rule: str,
        own: Callable[[FileJob], bool] | None = None,
    ) -> FileJob:
        """The conditional write; a refusal whose stored job is this very write, applied by
        an earlier send of it (`own`: a domain rule), is its success, not an error."""
        return dynamo.conditional_update(
            self._client,
            self.table_name,
            job_key(file_id),
            update=update,
            condition=condition,
            names=_names(update + condition),
            values={k: serialize(v) for k, v in values.items()},
            parse=job_from_item,
            refused=lambda state, current: error(
                f"{rule} refused for {file_id}: {state}", condition=rule, current=current
            ),
            own=own,
            rule=rule,
        )

    def create(self, job: FileJob) -> FileJob:
        """Write a new job; JobExistsError (with the stored job) if the FileID exists."""
        # Race: a replayed or concurrent poller writing the same day's file. The first
        # write wins; the loser learns what is stored without a second read.
        # Rule: may_create.
        try:
            dynamo.call(
                self.table_name,
                self._client.put_item,
                Item=job_to_item(job),
                ConditionExpression="attribute_not_exists(#id)",
                ExpressionAttributeNames=_names("#id"),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not dynamo.is_condition_failure(exc):
                raise
            old = dynamo.old_item(exc)
            current = job_from_item(old) if old else None
            raise JobExistsError(
                f"job {job.file_id} exists already",
                condition=f"attribute_not_exists({_NAMES['#id']})",
                current=current,
            ) from exc
        return job

    def claim(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        """available -> downloading (or take over an expired lease), owned by `owner`."""
        now_ms = self._clock.now_ms()
        # Race: two workers got the same message, or a stale one arrives after completion.
        # Only an available job, or one whose holder's lease ran out, can be claimed.
        # Rule: may_claim.
        condition = f"attribute_exists(#id) AND ({_CLAIMABLE.expression})"
        update = (
            "SET #status = :downloading, #owner = :owner, #lease = :expiry, #updated = :now,"
            " #attempts = if_not_exists(#attempts, :zero) + :one REMOVE #finishedby"
        )
        values = {
            **_CLAIMABLE.values,
            ":downloading": str(JobStatus.DOWNLOADING),
            ":owner": owner,
            ":expiry": lease_expiry_ms(now_ms, lease_seconds),
            ":now": now_ms,
            ":zero": 0,
            ":one": 1,
        }
        return self._update(
            file_id,
            update=update,
            condition=condition,
            values=values,
            error=ClaimRefusedError,
            rule="claim",
            # A retried claim is refused by its own first send (the lease is live now).
            # Rule: is_own_job_write.
            own=lambda current: is_own_job_write(current, owner, JobStatus.DOWNLOADING),
        )

    # Race for every owner-conditioned write: a worker whose lease expired and was taken
    # over must not overwrite the result of the worker that holds the claim now.
    # Rule: holds_claim.
    _OWNED = f"{_HELD.expression} AND #owner = :owner"
    # What completing a job sets; shared by the owner's completion and the sweeper's repair.
    _COMPLETE = (
        "SET #status = :completed, #updated = :now, #completed = :at, #bytes = :bytes,"
        " #sha = :sha, #dest = :dest REMOVE #owner, #lease, #error"
    )

    # What a write that ends the claim adds: whose it was (a retry of it finds it there).
    _FINISHED_BY = "#finishedby = :owner"

    def _owned_update(
        self,
        file_id: str,
        owner: str,
        update: str,
        values: dict[str, Any],
        rule: str,
        *,
        ends_in: JobStatus | None = None,
    ) -> FileJob:
        """An owner-conditioned write; one that ends the claim in `ends_in` marks FinishedBy,
        and its retry, refused because the first send ended the claim, is its success."""
        values = {**_HELD.values, ":owner": owner, **values}
        own = None
        if ends_in is not None:
            set_part, _, remove_part = update.partition(" REMOVE ")
            update = f"{set_part}, {self._FINISHED_BY} REMOVE {remove_part}"

            def own(current: FileJob | None) -> bool:  # Rule: is_own_job_write.
                return is_own_job_write(current, owner, ends_in)

        return self._update(
            file_id,
            update=update,
            condition=self._OWNED,
            values=values,
            error=LeaseLostError,
            rule=rule,
            own=own,
        )

    def extend_lease(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        """Push the lease of a claim we still own further out."""
        now_ms = self._clock.now_ms()
        values = {
            ":expiry": lease_expiry_ms(now_ms, lease_seconds),
        }
        return self._owned_update(file_id, owner, "SET #lease = :expiry", values, "extend lease")

    def update_url(self, file_id: str, owner: str, url: str, url_expires_at: str | None) -> FileJob:
        """Store a freshly signed URL for a claim we own."""
        update = "SET #url = :url" + (", #urlexp = :urlexp" if url_expires_at else "")
        values: dict[str, Any] = {":url": url}
        if url_expires_at:
            values[":urlexp"] = normalized_iso(url_expires_at)
        return self._owned_update(file_id, owner, update, values, "update url")

    def complete(
        self, file_id: str, owner: str, *, byte_count: int, sha256: str, destination_key: str
    ) -> FileJob:
        """downloading -> completed with the verified object's facts, if we still own it."""
        values = self._completion_values(byte_count, sha256, destination_key)
        return self._owned_update(
            file_id, owner, self._COMPLETE, values, "complete", ends_in=JobStatus.COMPLETED
        )

    def _completion_values(
        self, byte_count: int, sha256: str, destination_key: str
    ) -> dict[str, Any]:
        now_ms = self._clock.now_ms()
        return {
            ":completed": str(JobStatus.COMPLETED),
            ":now": now_ms,
            ":at": iso_from_ms(now_ms),
            ":bytes": byte_count,
            ":sha": sha256,
            ":dest": destination_key,
        }

    def finish_unsuccessfully(
        self, file_id: str, owner: str, status: JobStatus, error_message: str
    ) -> FileJob:
        """downloading -> failed (transient, retries used up) or error (permanent), if owned."""
        if status not in UNSUCCESSFUL_JOB_STATUSES:
            takes = " or ".join(UNSUCCESSFUL_JOB_STATUSES)
            raise ValueError(f"finish_unsuccessfully takes {takes}, not {status}")
        update = "SET #status = :final, #updated = :now, #error = :message REMOVE #owner, #lease"
        values = {
            ":final": str(status),
            ":now": self._clock.now_ms(),
            ":message": error_message[:1000],
        }
        return self._owned_update(file_id, owner, update, values, str(status), ends_in=status)

    def release(self, file_id: str, owner: str) -> FileJob:
        """downloading -> available: give a claim back (clean shutdown), if owned."""
        update = "SET #status = :available, #updated = :now REMOVE #owner, #lease"
        values = {
            ":available": str(JobStatus.AVAILABLE),
            ":now": self._clock.now_ms(),
        }
        return self._owned_update(
            file_id, owner, update, values, "release", ends_in=JobStatus.AVAILABLE
        )

    def requeue(self, file_id: str, *, force: bool = False) -> FileJob:
        """Operator recovery: failed, error, available or an expired claim -> available.

        A live claim is refused unless `force`; a completed job never goes back.
        """
        # Race: a worker may finish or renew the claim between the operator's look and
        # this write; the condition re-checks at write time.
        clause = _FORCE_REQUEUABLE if force else _REQUEUABLE
        update = f"SET {_BACK_TO_AVAILABLE}"
        return self._update(
            file_id,
            update=update,
            condition=clause.expression,
            values=self._requeue_values(clause),
            error=RequeueRefusedError,
            rule="requeue",
        )

    def _requeue_values(self, clause: StatusClause) -> dict[str, Any]:
        return {
            **clause.values,
            ":available": str(JobStatus.AVAILABLE),
            ":now": self._clock.now_ms(),
        }

    def adopt(self, file_id: str, batch_id: str, listing_index: int | None = None) -> FileJob:
        """Move an unfinished job of an earlier batch into `batch_id`, as available (and at
        `listing_index` of the new batch's listing, when given).

        Refused (RequeueRefusedError) when the job completed or is held under a live lease.
        """
        # Race: the old batch's worker may still finish it, or a concurrent rerun may adopt
        # it first; only a job that nobody holds and that is not done moves.
        # Rule: may_adopt.
        condition = f"#batch <> :batch AND ({_REQUEUABLE.expression})"
        values: dict[str, Any] = {":batch": batch_id, **self._requeue_values(_REQUEUABLE)}
        at_index = ""
        if listing_index is not None:
            at_index = "#listidx = :listidx, "
            values[":listidx"] = listing_index
        update = f"SET #batch = :batch, {at_index}{_BACK_TO_AVAILABLE}"
        return self._update(
            file_id,
            update=update,
            condition=condition,
            values=values,
            error=RequeueRefusedError,
            rule="adopt",
        )

    def mark_listed(self, file_id: str, batch_id: str, listing_index: int) -> FileJob:
        """Mark another batch's job, which a rerun could not adopt, as named by entry
        `listing_index` of `batch_id`'s listing (ListedBy); nothing else of it changes.

        Refused (ListedTwiceError, with the job) when another entry of that listing marked it.
        """
        # Race: a later copy of an entity in the rerun's listing; no put or adopt of it can
        # tell, since the job is another batch's. A replay of the entry writes the same value.
        # Rule: may_mark_listed.
        condition = (
            "attribute_exists(#id) AND (attribute_not_exists(#listedby)"
            " OR NOT begins_with(#listedby, :thislisting) OR #listedby = :listedby)"
        )
        return self._update(
            file_id,
            update="SET #listedby = :listedby",
            condition=condition,
            values={
                ":thislisting": listed_by(batch_id, 0)[:-1],
                ":listedby": listed_by(batch_id, listing_index),
            },
            error=ListedTwiceError,
            rule="mark listed",
        )

    def complete_abandoned(
        self, file_id: str, owner: str, *, byte_count: int, sha256: str, destination_key: str
    ) -> FileJob:
        """downloading -> completed for a claim `owner` abandoned after publishing its file.

        The sweeper's repair: the verified object is in place, only the completion is missing.
        """
        # Race: the owner may come back (frozen, not dead) and renew or complete, or another
        # worker may take the claim over meanwhile; only the same owner's claim, still
        # expired at write time, is completed here, so no live claim's result is overwritten.
        # Rule: may_complete_abandoned.
        condition = f"{_HELD.expression} AND #owner = :owner AND {_EXPIRED}"
        update = self._COMPLETE
        values = {
            **_HELD.values,
            ":owner": owner,
            **self._completion_values(byte_count, sha256, destination_key),
        }
        return self._update(
            file_id,
            update=update,
            condition=condition,
            values=values,
            error=LeaseLostError,
            rule="complete abandoned",
        )

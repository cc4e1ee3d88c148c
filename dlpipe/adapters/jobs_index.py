"""data-download-jobs: the indexed reads (StatusIndex, BatchIndex), one Query per shard.

Both indexes are write-sharded (dlpipe/domain/shards.py) and carry keys, TTL and little more,
so a read queries every shard of its key, merges the shards' index items in key order, and
fetches the jobs those name by key (BatchGetItem, 100 a call), keeping only those that still
match what was asked: an index lags the table, and a job may have moved on since it was
indexed. Counts, a batch's FileID -> status and the manifest's rows (BatchIndex projects what
a manifest entry names) read the index items alone. StatusIndex also carries
BatchID, so a batch's stale pending jobs (the sweeper's candidates) are filtered to the batch
before any fetch.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from dlpipe.adapters import dynamo
from dlpipe.adapters.items import job_row_from_index_item
from dlpipe.adapters.jobs_reads import JobReads, job_names
from dlpipe.domain.errors import UnreadableHandler
from dlpipe.domain.job_row import JobRow
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.schema import (
    BATCH_INDEX,
    BATCH_SHARD_ATTRIBUTE,
    FILE_ID_ATTRIBUTE,
    STATUS_ATTRIBUTE,
    STATUS_INDEX,
    STATUS_UPDATED_AT_ATTRIBUTE,
)
from dlpipe.domain.shards import batch_shard_number, batch_shards, status_shards
from dlpipe.domain.statuses import PENDING_JOB_STATUSES

_BATCH_GET_MAX = 100
# Items a Query page evaluates at most (its Limit). Index items are ~150 B, so a full page is
# ~150 KB, under DynamoDB's own 1 MB cap. It is there for DynamoDB Local, which
# reads every remaining row of the partition for each page when a Query has no Limit
# (a page costs O(rows left), so a count is quadratic in the partition: 100,000 jobs counted
# in 108 s; measured by bench/dynamodb_local_paging.py, figures in BENCHMARKS.md).
QUERY_PAGE_ITEMS = 1000
# One end of each StatusIndex shard: a few items a page, so expired (TTL) items cost little.
EDGE_PAGE_ITEMS = 10
IndexItem = dict[str, Any]


def _updated(item: IndexItem) -> int:
    return int(item[STATUS_UPDATED_AT_ATTRIBUTE]["N"])


def _status(item: IndexItem) -> str:
    return str(item.get(STATUS_ATTRIBUTE, {}).get("S", ""))


def _file_id(item: IndexItem) -> str:
    return str(item[FILE_ID_ATTRIBUTE]["S"])


def _runs(statuses: set[JobStatus]) -> list[list[JobStatus]]:
    """`statuses` in BatchIndex's Status order, cut where a status not asked for sits between."""
    runs: list[list[JobStatus]] = [[]]
    for status in sorted(JobStatus, key=str):
        if status in statuses:
            runs[-1].append(status)
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r]


class JobIndexReads(JobReads):
    """StatusIndex and BatchIndex reads; what their Queries and fetches cost lands in `meter`."""

    def _shard_items(
        self, request: dict[str, Any], limit: int | None = None
    ) -> Iterator[IndexItem]:
        return dynamo.paginate_query(
            self._client, self.table_name, request, limit=limit, on_page=self.meter.add
        )

    def _fetch(
        self,
        items: Iterable[IndexItem],
        keep: Callable[[FileJob], bool],
        on_unreadable: UnreadableHandler | None,
        chunk: int = _BATCH_GET_MAX,
    ) -> Iterator[FileJob]:
        """The jobs `items` name, in their order, `chunk` keys a BatchGetItem; those `keep`
        refuses (moved on since they were indexed) and those gone are left out."""
        stream = iter(items)
        while ids := [_file_id(i) for i in islice(stream, chunk)]:
            found = self.fetch_jobs(ids, on_unreadable)
            for file_id in ids:
                job = found.get(file_id)
                if job is not None and keep(job):
                    yield job

    # StatusIndex: pending jobs only, by "<Status>#<nn>" and StatusUpdatedAt.

    def _status_items(
        self, status: JobStatus, older_than_ms: int | None, newest: bool, page: int
    ) -> Iterator[IndexItem]:
        if status not in PENDING_JOB_STATUSES:
            raise ValueError(f"StatusIndex holds pending jobs only, not {status}")
        shards = []
        for shard in status_shards(status):
            key = "#sshard = :shard"
            values: dict[str, Any] = {":shard": {"S": shard}}
            if older_than_ms is not None:
                key += " AND #updated < :cut"
                values[":cut"] = {"N": str(older_than_ms)}
            request = self._index_request(STATUS_INDEX, key, values)
            request.update(ScanIndexForward=not newest, Limit=page)
            shards.append(self._shard_items(request))
        return heapq.merge(*shards, key=_updated, reverse=newest)

    def query_by_status(
        self,
        status: JobStatus,
        *,
        older_than_ms: int | None = None,
        limit: int | None = None,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """Pending jobs in `status` (StatusIndex, every shard merged), oldest first; only those
        last changed before `older_than_ms`."""
        page = min(QUERY_PAGE_ITEMS, limit) if limit else QUERY_PAGE_ITEMS

        def keep(job: FileJob) -> bool:
            changed_before = older_than_ms is None or job.status_updated_at_ms < older_than_ms
            return job.status is status and changed_before

        items = self._status_items(status, older_than_ms, False, page)
        chunk = min(_BATCH_GET_MAX, limit) if limit else _BATCH_GET_MAX
        jobs = self._fetch(items, keep, on_unreadable, chunk)
        yield from jobs if limit is None else islice(jobs, limit)

    def stale_of_batch(
        self,
        batch_id: str,
        status: JobStatus,
        *,
        older_than_ms: int,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """`batch_id`'s jobs in pending `status` last changed before `older_than_ms`
        (StatusIndex, every shard, filtered by the BatchID it projects), fetched by key;
        oldest first. Costs the index items older than the cut, deployment-wide (about 150 B
        each), and a fetch of each of the batch's."""

        def keep(job: FileJob) -> bool:
            old = job.status_updated_at_ms < older_than_ms
            return job.batch_id == batch_id and job.status is status and old

        shards = []
        for shard in status_shards(status):
            request = self._index_request(
                STATUS_INDEX,
                "#sshard = :shard AND #updated < :cut",
                {
                    ":shard": {"S": shard},
                    ":cut": {"N": str(older_than_ms)},
                    ":batch": {"S": batch_id},
                },
                extra_filter="#batch = :batch",
            )
            shards.append(self._shard_items(request))
        items = heapq.merge(*shards, key=_updated)
        yield from self._fetch(items, keep, on_unreadable)

    def edge_by_status(self, status: JobStatus, *, newest: bool = False) -> FileJob | None:
        """The job in `status` changed longest ago (or, `newest`, most recently): each shard's
        end of StatusIndex, EDGE_PAGE_ITEMS a page, stopping at the first live, readable job."""
        items = self._status_items(status, None, newest, EDGE_PAGE_ITEMS)
        jobs = self._fetch(items, lambda job: job.status is status, None, EDGE_PAGE_ITEMS)
        return next(jobs, None)

    # BatchIndex: every job, by "<BatchID>#<nn>" and Status.

    def _batch_request(self, shard: str, status: JobStatus | None) -> dict[str, Any]:
        key = "#bshard = :shard"
        values: dict[str, Any] = {":shard": {"S": shard}}
        if status is not None:
            key += " AND #status = :status"
            values[":status"] = {"S": str(status)}
        return self._index_request(BATCH_INDEX, key, values)

    @staticmethod
    def _of_batch(batch_id: str, status: JobStatus | None) -> Callable[[FileJob], bool]:
        return lambda job: job.batch_id == batch_id and status in (None, job.status)

    def query_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int | None = None,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """Jobs of `batch_id` (BatchIndex, every shard merged in Status order), optionally
        only those in `status`."""
        shards = [self._shard_items(self._batch_request(s, status)) for s in batch_shards(batch_id)]
        items = heapq.merge(*shards, key=_status)
        chunk = min(_BATCH_GET_MAX, limit) if limit else _BATCH_GET_MAX
        jobs = self._fetch(items, self._of_batch(batch_id, status), on_unreadable, chunk)
        yield from jobs if limit is None else islice(jobs, limit)

    def rows_by_batch(self, batch_id: str, status: JobStatus) -> Iterator[JobRow]:
        """The BatchIndex items of `batch_id`'s jobs in `status`, every shard, as JobRows:
        what the day's manifest names of each, read without fetching a job (index items of
        ~250 B: ~16 to the 0.5 RCU an eventually consistent 4 KB costs)."""
        for shard in batch_shards(batch_id):
            for item in self._shard_items(self._batch_request(shard, status)):
                yield job_row_from_index_item(item, status)

    def page_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int,
        start: dict[str, str] | None = None,
    ) -> tuple[list[FileJob], dict[str, str] | None]:
        """One page of `batch_id`'s jobs, at most `limit`, after `start` (the key a previous
        page returned): the shards one after another, each in BatchIndex order; the jobs, and
        the key to go on from (None: the end). Limit bounds each Query's read, so no page
        reads past what it returns."""
        shards = batch_shards(batch_id)
        shard = batch_shard_number(start[BATCH_SHARD_ATTRIBUTE], batch_id) if start else 0
        shard = shard or 0
        start_key = {k: {"S": v} for k, v in start.items()} if start else None
        found: list[FileJob] = []
        last: IndexItem | None = None
        while len(found) < limit and shard < len(shards):
            asked = self._batch_request(shards[shard], status)
            asked["Limit"] = min(QUERY_PAGE_ITEMS, limit - len(found))
            if start_key:
                asked["ExclusiveStartKey"] = start_key
            page = dynamo.call(self.table_name, self._client.query, **asked)
            self.meter.add(dict(page))
            items = page.get("Items", [])
            found += self._fetch(items, self._of_batch(batch_id, status), None)
            last = items[-1] if items else last
            start_key = page.get("LastEvaluatedKey")
            if not start_key:
                shard += 1
        if start_key is None and shard < len(shards) and last is not None:
            # The page filled as a shard ended: go on from its last key (the next page finds
            # that shard done and moves to the next).
            start_key = {
                k: last[k] for k in (FILE_ID_ATTRIBUTE, BATCH_SHARD_ATTRIBUTE, STATUS_ATTRIBUTE)
            }
        after = {k: str(v.get("S", "")) for k, v in start_key.items()} if start_key else None
        return found, after

    def count_by_batch(self, batch_id: str, status: JobStatus) -> int:
        """How many jobs of `batch_id` are in `status`: BatchIndex, Select=COUNT, every shard.

        Costs what the matching index items weigh (ceil(bytes / 4 KB) x 0.5 RCU a page, 0.5
        RCU at least for each shard's Query), not what the batch weighs; the cost lands in
        `meter`.
        """
        return sum(self._count(self._batch_request(s, status)) for s in batch_shards(batch_id))

    def counts_by_batch(self, batch_id: str, statuses: Iterable[JobStatus]) -> dict[JobStatus, int]:
        """How many jobs of `batch_id` are in each of `statuses`: BatchIndex, every shard, one
        Query a shard for each run of them that sits side by side in Status order (index items
        only: Select=COUNT for a run of one, the Status attribute alone for a longer run, which
        reads the same bytes). Pending + unsuccessful is two runs, `available` and
        `downloading`..`failed`: 2 Queries a shard."""
        counts = dict.fromkeys(statuses, 0)
        for run in _runs(set(counts)):
            for shard in batch_shards(batch_id):
                if len(run) == 1:
                    counts[run[0]] += self._count(self._batch_request(shard, run[0]))
                    continue
                request = self._batch_range_request(shard, run[0], run[-1])
                for item in self._shard_items(request):
                    status = _status(item)
                    if status in set(JobStatus) and JobStatus(status) in counts:
                        counts[JobStatus(status)] += 1
        return counts

    def _count(self, request: dict[str, Any]) -> int:
        counted: list[int] = []

        def count_page(page: dict[str, Any]) -> None:
            self.meter.add(page)
            counted.append(int(page.get("Count", 0)))

        request["Select"] = "COUNT"
        for _ in dynamo.paginate_query(self._client, self.table_name, request, on_page=count_page):
            pass
        return sum(counted)

    def _batch_range_request(self, shard: str, first: JobStatus, last: JobStatus) -> dict[str, Any]:
        request = self._index_request(
            BATCH_INDEX,
            "#bshard = :shard AND #status BETWEEN :first AND :last",
            {":shard": {"S": shard}, ":first": {"S": str(first)}, ":last": {"S": str(last)}},
        )
        request["ProjectionExpression"] = "#status"
        return request

    def batch_file_ids(self, batch_id: str) -> dict[str, JobStatus | None]:
        """FileID -> status of every job of `batch_id` (BatchIndex items alone, every shard).

        None for a status that is not one (an unreadable item). For a small day only: it
        reads the whole batch's index items.
        """
        found: dict[str, JobStatus | None] = {}
        for shard in batch_shards(batch_id):
            for item in self._shard_items(self._batch_request(shard, None)):
                status = _status(item)
                found[_file_id(item)] = JobStatus(status) if status in set(JobStatus) else None
        return found

    def _index_request(
        self, index: str, key: str, values: dict[str, Any], extra_filter: str | None = None
    ) -> dict[str, Any]:
        # Items past their TTL may linger (DynamoDB deletes lazily): filter them out (both
        # indexes project TTL for this).
        filter_expression = "(attribute_not_exists(#ttl) OR #ttl >= :now_s)"
        if extra_filter:
            filter_expression += f" AND {extra_filter}"
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

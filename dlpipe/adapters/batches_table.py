"""data-download-batches: every read and conditional write of a daily batch lives here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from dlpipe.adapters import dynamo
from dlpipe.adapters.batch_counts import counts_update
from dlpipe.adapters.batch_marks import BatchMarks
from dlpipe.adapters.items import (
    BATCH_ATTRIBUTES,
    batch_from_item,
    batch_key,
    batch_to_item,
    expression_names,
    serialize,
    stored_error,
)
from dlpipe.adapters.status_conditions import status_in
from dlpipe.domain.clock import Clock, SystemClock, iso_from_ms
from dlpipe.domain.errors import (
    BatchExistsError,
    BatchTransitionRefusedError,
    CorruptRecordError,
    NotFoundError,
)
from dlpipe.domain.model import SETS_MAX_FILES, Batch, BatchStatus
from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.domain.rules import ttl_expired
from dlpipe.domain.schema import POLLING_DATE_INDEX
from dlpipe.domain.statuses import BATCH_OPEN
from dlpipe.domain.transitions import (
    batch_sources,
    is_own_batch_create,
    is_own_batch_write,
    mark_queued_sources,
)
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = get_logger(component="records")
# Every attribute an expression names, by placeholder and record field.
_NAMES = expression_names(
    BATCH_ATTRIBUTES,
    id="batch_id",
    status="status",
    date="polling_date",
    updated="updated_at",
    expected="expected_files",
    done="completed_files",
    failed="failed_files",
    timeout="timeout_at",
    error="error_message",
    ttl="ttl_epoch_s",
    cnt_expected="expected_count",
    cnt_queued="queued_count",
    cnt_done="completed_count",
    cnt_failed="failed_count",
    cnt_error="error_count",
    truncated="sets_truncated",
    outcome="outcome",
    adopted_by="adopted_by",
)


def _names(expression: str) -> dict[str, str]:
    return {k: v for k, v in _NAMES.items() if k in expression}


def _final_counts(batch: Batch, values: dict[str, Any]) -> str:
    """The update part writing `batch`'s recorded counts and, for a day small enough to keep
    them, its outcome sets, as record_counts wrote them."""
    keep = not batch.sets_truncated
    counts, removed = counts_update(
        values,
        completed=batch.completed_count or 0,
        failed=batch.failed_count or 0,
        error=batch.error_count or 0,
        completed_files=batch.completed_files if keep else None,
        failed_files=batch.failed_files if keep else None,
    )
    return counts + (" REMOVE " + ", ".join(removed) if removed else "")


class BatchesTable(BatchMarks):
    """Repository of Batch records in data-download-batches (the hand-off's marks beside the
    status: batch_marks.py)."""

    def __init__(self, client: DynamoDBClient, table_name: str, clock: Clock | None = None):
        self._client = client
        self.table_name = table_name
        self._clock = clock or SystemClock()

    def _now_iso(self) -> str:
        return iso_from_ms(self._clock.now_ms())

    def _live(self, item: dict[str, Any] | None) -> Batch | None:
        if not item:
            return None
        batch = batch_from_item(item)
        return None if ttl_expired(batch.ttl_epoch_s, self._clock.now_ms() // 1000) else batch

    def create(self, batch: Batch) -> Batch:
        """Write a new batch; BatchExistsError if the BatchID is taken."""
        # Race: a replayed create-batch step re-putting the same BatchID must not reset it.
        # Rule: transitions.may_create (every condition here mirrors a rule of
        # dlpipe/domain/transitions.py; tests/property/test_conditions.py checks each pair).
        dynamo.conditional_put(
            self._client,
            self.table_name,
            batch_key(batch.batch_id),
            batch_to_item(batch),
            condition="attribute_not_exists(#id)",
            names=_names("#id"),
            parse=batch_from_item,
            refused=lambda _, current: BatchExistsError(
                f"batch {batch.batch_id} exists already",
                condition=f"attribute_not_exists({_NAMES['#id']})",
                current=current,
            ),
            # A retry after a lost response finds the batch its first send wrote.
            # Rule: is_own_batch_create.
            own=lambda current: is_own_batch_create(current, batch),
            rule="create",
        )
        return batch

    def get(self, batch_id: str) -> Batch | None:
        """The batch, or None (absent or past its TTL)."""
        response = dynamo.call(
            self.table_name,
            self._client.get_item,
            Key=batch_key(batch_id),
            ConsistentRead=True,
        )
        return self._live(response.get("Item"))

    def require(self, batch_id: str) -> Batch:
        """The batch, or NotFoundError."""
        batch = self.get(batch_id)
        if batch is None:
            raise NotFoundError(f"no batch {batch_id!r} in {self.table_name}")
        return batch

    def query_by_date(self, polling_date: str, status: BatchStatus | None = None) -> list[Batch]:
        """The batches of a polling date (PollingDateIndex), optionally only in `status`."""
        key = "#date = :date"
        values: dict[str, Any] = {":date": {"S": polling_date}}
        if status is not None:
            key += " AND #status = :status"
            values[":status"] = {"S": str(status)}
        request = {
            "IndexName": POLLING_DATE_INDEX,
            "KeyConditionExpression": key,
            "ExpressionAttributeNames": _names(key),
            "ExpressionAttributeValues": values,
        }
        batches = []
        for item in dynamo.paginate_query(self._client, self.table_name, request):
            try:
                batch = self._live(item)
            except CorruptRecordError as exc:
                log.warning(
                    "record.unreadable", table=self.table_name, batch_id=exc.key, error=str(exc)
                )
                continue
            if batch is not None:
                batches.append(batch)
        return sorted(batches, key=lambda b: b.start_time)

    def _update(
        self,
        batch_id: str,
        update: str,
        condition: str,
        values: dict[str, Any],
        rule: str,
        *,
        own: Callable[[Batch], bool] | None = None,
    ) -> Batch:
        return dynamo.conditional_update(
            self._client,
            self.table_name,
            batch_key(batch_id),
            update=update,
            condition=condition,
            names=_names(update + condition),
            values={k: serialize(v) for k, v in values.items()},
            parse=batch_from_item,
            refused=lambda state, current: BatchTransitionRefusedError(
                f"{rule} refused for {batch_id}: {state}", condition=rule, current=current
            ),
            own=own,
            rule=rule,
        )

    def mark_queued(
        self,
        batch_id: str,
        expected_files: Iterable[str],
        *,
        error_message: str | None = None,
        expected_count: int | None = None,
        queued_count: int | None = None,
    ) -> Batch:
        """initiated -> queued: the listing's total becomes ExpectedCount, and QueuedCount the
        jobs put on the queue (`queued_count`; the total when not given): fewer on a rerun,
        whose files completed earlier are carried, and where entries became error jobs.

        `expected_files` is the whole listing; the count is SET, not ADDed, so a replay writes
        the same value. ExpectedFiles is SET too while the day has at most SETS_MAX_FILES
        files; a larger day gets SetsTruncated and no sets. `expected_count` overrides the
        count when the caller no longer holds every FileID (a chunked fetch).
        """
        files = set(expected_files)
        count = len(files) if expected_count is None else expected_count
        # Race: a replay of fetch-and-queue after the batch already moved on (completed)
        # must not drag it back to queued. Rule: may_mark_queued.
        clause = status_in(mark_queued_sources())
        condition = clause.expression
        values: dict[str, Any] = {
            **clause.values,
            ":queued": str(BatchStatus.QUEUED),
            ":now": self._now_iso(),
            ":count": count,
            ":queued_count": count if queued_count is None else queued_count,
        }
        update = (
            "SET #status = :queued, #updated = :now, #cnt_expected = :count,"
            " #cnt_queued = :queued_count"
        )
        if error_message:
            # Entries the provider listed that could not become jobs: the batch cannot
            # complete cleanly, and operators must see why.
            update += ", #error = :error"
            values[":error"] = stored_error(error_message)
        if count <= SETS_MAX_FILES and len(files) == count:
            if files:
                update += ", #expected = :files"
                values[":files"] = files
            update += " REMOVE #truncated" + ("" if files else ", #expected")
        else:
            update += ", #truncated = :true REMOVE #expected, #done, #failed"
            values[":true"] = True
        return self._update(batch_id, update, condition, values, "mark queued")

    def record_counts(
        self,
        batch_id: str,
        *,
        completed: int,
        failed: int,
        error: int,
        completed_files: Iterable[str] | None = None,
        failed_files: Iterable[str] | None = None,
    ) -> Batch:
        """SET the finished counts (and, for a small day, the outcome sets) in one UpdateItem.

        Written by the poller once per poll, never per file by the workers: the batch item
        is no hot key however many files finish at once.
        """
        values: dict[str, Any] = {":now": self._now_iso()}
        counts, removed = counts_update(
            values,
            completed=completed,
            failed=failed,
            error=error,
            completed_files=completed_files,
            failed_files=failed_files,
        )
        update = f"SET #updated = :now, {counts}"
        if removed:
            update += " REMOVE " + ", ".join(removed)
        # Race: two pollers of one batch (a repeated run attaches to a running batch and
        # polls it too): the slower one's counts, read before the other finished the batch,
        # must not overwrite the final counts; a refusal carries the stored batch (ALL_OLD).
        # Also never creates an item for a batch deleted meanwhile. Rule: may_record_counts.
        clause = status_in(BATCH_OPEN)
        values.update(clause.values)
        condition = f"attribute_exists(#id) AND {clause.expression}"
        return self._update(batch_id, update, condition, values, "record counts")

    def finish(
        self,
        batch_id: str,
        status: BatchStatus,
        *,
        timeout_at: str | None = None,
        error_message: str | None = None,
        outcome: OutcomeSummary | None = None,
        counts_of: Batch | None = None,
    ) -> Batch:
        """Move the batch to a final status, if the status machine allows it from where it is;
        `outcome` (bounded, dlpipe/domain/outcome.py) lands in the same write, so a replay
        that finds the batch finished finds its summary too. `counts_of`: the counts (and a
        small day's sets) the deciding poll recorded, written again with the status, so a
        slower poller's progress counts that landed between that poll's record and this
        write do not outlive the batch's end."""
        # Race: two pollers (or a replay) deciding the end; only a legal transition lands.
        # Rule: may_finish.
        sources = batch_sources(status)
        if not sources:
            raise ValueError(f"no batch status leads to {status}")
        clause = status_in(sources)
        condition = clause.expression
        update = "SET #status = :final, #updated = :now"
        values: dict[str, Any] = {**clause.values, ":final": str(status), ":now": self._now_iso()}
        if timeout_at:
            update += ", #timeout = :timeout"
            values[":timeout"] = timeout_at
        if error_message:
            update += ", #error = :error"
            values[":error"] = stored_error(error_message)
        if outcome is not None:
            update += ", #outcome = :outcome"
            values[":outcome"] = outcome.to_json()
        if counts_of is not None:
            update += ", " + _final_counts(counts_of, values)
        # A retry after a lost response is refused by its own first send (a final status is
        # left by no transition). Rule: is_own_batch_write.
        return self._update(
            batch_id,
            update,
            condition,
            values,
            f"finish {status}",
            own=lambda current: is_own_batch_write(current, status, values[":now"]),
        )

    def mark_adopted(self, batch_id: str, adopted_by: str) -> Batch:
        """Record on a finished batch that rerun `adopted_by` took over its unfinished files
        (AdoptedBy), so its page can say where they went. SET: a replay writes the same."""
        # Race: none that matters (the latest adopter wins); the condition only refuses to
        # create an item for a batch gone meanwhile. Rule: may_record.
        return self._update(
            batch_id,
            "SET #adopted_by = :adopter",
            "attribute_exists(#id)",
            {":adopter": adopted_by},
            "mark adopted",
        )

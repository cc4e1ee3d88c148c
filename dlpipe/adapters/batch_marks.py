"""The hand-off's marks on a batch item, beside its status (dlpipe/services/orchestrator/announce.py):
the outcome event as first sent, why a run withheld it, and the claim on the batch's one
`Day Late`. Each is a conditional UpdateItem that never moves UpdatedAt, which the day
manifest's header reads; BatchesTable (batches_table.py) inherits them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlpipe.adapters import dynamo
from dlpipe.adapters.items import (
    BATCH_ATTRIBUTES,
    batch_from_item,
    batch_key,
    expression_names,
    serialize,
    stored_error,
)
from dlpipe.domain.errors import BatchTransitionRefusedError
from dlpipe.domain.model import Batch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_NAMES = expression_names(
    BATCH_ATTRIBUTES,
    id="batch_id",
    status="status",
    sent_event="handoff_event",
    handoff_type="handoff_type",
    handoff_problem="handoff_problem",
    late="late_event_id",
)


class BatchMarks:
    """The hand-off's conditional writes on data-download-batches."""

    _client: DynamoDBClient
    table_name: str

    def record_handoff(self, batch_id: str, status: str, detail_type: str, event: str) -> Batch:
        """Record `event` (the outcome event's JSON) as the batch's `detail_type` event.
        BatchTransitionRefusedError, carrying the stored batch, if one is recorded already or
        the batch is no longer `status`."""
        # Race: two runs of one ended batch (an attach) both sending its event: the first
        # recorded stays, and the other re-sends it. Rule: may_record_handoff.
        return self._mark(
            batch_id,
            "SET #sent_event = :event, #handoff_type = :type",
            "#status = :status AND (attribute_not_exists(#handoff_type) OR #handoff_type <> :type)",
            {":event": event, ":type": detail_type, ":status": status},
            "record hand-off",
        )

    def record_handoff_problem(self, batch_id: str, problem: str | None) -> Batch:
        """SET why the batch's hand-off was withheld (REMOVE with None: it went out since),
        stored as an ErrorMessage is: redacted, then cut."""
        # Race: none that matters (the latest run's word wins); the condition only refuses to
        # create an item for a batch gone meanwhile. Rule: may_record.
        # (`#id = :id` holds exactly when the item exists, and gives a REMOVE a value to pass.)
        values: dict[str, Any] = {":id": batch_id}
        update = "REMOVE #handoff_problem"
        if problem is not None:
            update, values[":problem"] = "SET #handoff_problem = :problem", stored_error(problem)
        return self._mark(batch_id, update, "#id = :id", values, "record hand-off problem")

    def claim_day_late(self, batch_id: str, event_id: str) -> Batch:
        """Claim the batch's one Day Late for `event_id`; BatchTransitionRefusedError if another
        event holds it (another run, or this step before a crash, sent it or is sending it)."""
        # Race: every run attached to a running batch passes the deadline. Rule: may_claim_late.
        return self._mark(
            batch_id,
            "SET #late = :event_id",
            "attribute_exists(#id) AND attribute_not_exists(#late)",
            {":event_id": event_id},
            "claim Day Late",
        )

    def release_day_late(self, batch_id: str, event_id: str) -> Batch:
        """Give the claim back after its send failed, so a later poll may send Day Late;
        BatchTransitionRefusedError if `event_id` does not hold it."""
        # Rule: may_release_late.
        return self._mark(
            batch_id,
            "REMOVE #late",
            "#late = :event_id",
            {":event_id": event_id},
            "release Day Late",
        )

    def _mark(
        self, batch_id: str, update: str, condition: str, values: dict[str, Any], rule: str
    ) -> Batch:
        return dynamo.conditional_update(
            self._client,
            self.table_name,
            batch_key(batch_id),
            update=update,
            condition=condition,
            names={k: v for k, v in _NAMES.items() if k in update + condition},
            values={k: serialize(v) for k, v in values.items()},
            parse=batch_from_item,
            refused=lambda state, current: BatchTransitionRefusedError(
                f"{rule} refused for {batch_id}: {state}", condition=rule, current=current
            ),
            rule=rule,
        )

"""`dlpipe run`'s summary from the batch's stored figures: what the run's own result cannot say.

The result's `rerun` is the event's flag (`--rerun` / `{"rerun": true}`); a run for a date whose
batches all ended makes a new batch that adopts their unfinished files without that flag. So
the summary reads the batch item once the run has returned: the files it queued (QueuedCount,
the listed files it sent, not those already completed) and the batches whose files it adopted
(their AdoptedBy), and says `rerun` when it made a new batch over the date's earlier ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import chosen, record_feed


def stored_figures(ops: OpsContext, result: Mapping[str, Any]) -> dict[str, Any]:
    """`result` with `expected` and `queued` from its batch item, `adopted_from` (the date's
    batches that name it in AdoptedBy) and `rerun` true when its batch came after others of the
    date and feed; unchanged when the result names no batch (a run that failed before one)."""
    batch_id, day = result.get("batch_id"), result.get("date")
    if not batch_id or not day:
        return dict(result)
    batches = ops.batches()
    batch = batches.require(str(batch_id))
    day_batches = chosen(record_feed(batch), batches.query_by_date(str(day)))
    earlier = [b for b in day_batches if b.created_at < batch.created_at]
    return {
        **result,
        "expected": batch.expected,
        "queued": batch.queued_count,
        "adopted_from": [b.batch_id for b in day_batches if b.adopted_by == batch_id],
        "rerun": bool(result.get("rerun")) or bool(earlier),
    }

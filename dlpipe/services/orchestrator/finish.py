"""The end of a batch: its final status and outcome written once (a refused write means another
poller or a replay ended it first), and its metrics emitted."""

from __future__ import annotations

from dlpipe import metrics
from dlpipe.domain.clock import iso_from_ms, ms_from_iso
from dlpipe.domain.errors import BatchTransitionRefusedError
from dlpipe.domain.model import Batch, BatchStatus
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.outcome import (
    final_cause,
    summarize_failure,
    summarize_outcome,
)
from dlpipe.services.orchestrator.store_ports import FlowStores

log = get_logger(component="orchestrator")


def finish(flow: FlowStores, batch: Batch, status: BatchStatus, pending: int) -> Batch:
    """End `batch` (as the deciding poll recorded it: its counts are written again with the
    status, so another poller's progress counts cannot outlive the end) in `status`."""
    timeout_at = iso_from_ms(flow.clock.now_ms()) if status is BatchStatus.TIMEOUT else None
    cause = final_cause(batch, status, pending)
    outcome = summarize_outcome(flow.jobs, batch.batch_id, cause)
    try:
        finished = flow.batches.finish(
            batch.batch_id, status, timeout_at=timeout_at, outcome=outcome, counts_of=batch
        )
    except BatchTransitionRefusedError as refused:
        # Another poller (or a replay) ended it first: report what it decided.
        return refused.current or batch
    _emit_finished(finished, status, flow.clock.now_ms())
    log.info(
        f"batch.{status}",
        batch_id=batch.batch_id,
        completed=finished.completed,
        failed=finished.unsuccessful,
    )
    return finished


def fail_batch(flow: FlowStores, batch_id: str, reason: str) -> None:
    """End the batch failed with `reason` (e.g. the provider stayed down)."""
    outcome = summarize_failure(flow.jobs, batch_id, reason)
    try:
        flow.batches.finish(batch_id, BatchStatus.FAILED, error_message=reason, outcome=outcome)
    except BatchTransitionRefusedError:
        log.warning("batch.fail_refused", batch_id=batch_id)
        return
    metrics.emit(
        {metrics.BATCH_FINISHED[BatchStatus.FAILED]: (1, metrics.COUNT)},
        dimensions=metrics.batch_dimensions(batch_id),
        BatchID=batch_id,
    )
    log.error("batch.failed", batch_id=batch_id, reason=reason)


def _emit_finished(batch: Batch, status: BatchStatus, now_ms: int) -> None:
    started_ms = ms_from_iso(batch.start_time)
    metrics.emit(
        {
            metrics.BATCH_FINISHED[status]: (1, metrics.COUNT),
            "FilesCompleted": (batch.completed, metrics.COUNT),
            "FilesFailed": (batch.unsuccessful, metrics.COUNT),
            "BatchDurationSeconds": (max(0, now_ms - started_ms) / 1000, metrics.SECONDS),
        },
        dimensions={metrics.FEED: batch.feed},
        BatchID=batch.batch_id,
        PollingDate=batch.polling_date,
    )

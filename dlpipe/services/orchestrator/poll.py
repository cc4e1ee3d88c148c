"""check-completion: one poll counts the batch's jobs (completion.py), sweeps its stale pending
ones (sweeper.py), records the counts and ends the batch when the rules say so (finish.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dlpipe.domain.errors import BatchTransitionRefusedError
from dlpipe.domain.model import Batch, BatchStatus, FileJob
from dlpipe.domain.rules import decide_batch_outcome
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.completion import tally
from dlpipe.services.orchestrator.finish import finish
from dlpipe.services.orchestrator.ports import CompletionCheck
from dlpipe.services.orchestrator.sweeper import Sweeper, stale_jobs

if TYPE_CHECKING:
    from dlpipe.services.orchestrator.flow import BatchFlowService

log = get_logger(component="orchestrator")


def check_completion(
    flow: BatchFlowService, batch_id: str, poll_number: int, is_last_poll: bool
) -> CompletionCheck:
    """Count the batch's jobs through BatchIndex (dlpipe/services/orchestrator/completion.py:
    cost per poll bounded by the pending jobs' index items), sweep the candidates StatusIndex
    names, record the counts, end the batch when due."""
    batch = flow.batches.require(batch_id)
    if batch.is_terminal and not (batch.status is BatchStatus.TIMEOUT and batch.pending):
        return _check(batch, str(batch.status))
    found = tally(
        flow.jobs,
        flow.batches,
        batch,
        lambda on_unreadable: flow.sweep(
            batch_id,
            stale_jobs(
                flow.jobs,
                batch_id,
                flow.clock.now_ms(),
                lease_seconds=flow.lease_seconds,
                resend_after_seconds=flow.resend_after_seconds,
                on_unreadable=on_unreadable,
            ),
        ),
        is_last_poll=is_last_poll,
    )
    # One UpdateItem per poll, by the poller alone: workers never write the batch item,
    # so it is no hot key however many files finish at once.
    try:
        batch = flow.batches.record_counts(
            batch_id,
            completed=found.counts.completed,
            failed=found.failed,
            error=found.error,
            completed_files=found.completed_files,
            failed_files=found.failed_files,
        )
    except BatchTransitionRefusedError as refused:
        if refused.current is None:
            raise
        # Another poller of this batch (a repeated run attached to it) finished it while
        # this one counted: its counts stand, and this poll reports them.
        log.info("batch.record_refused", batch_id=batch_id, status=str(refused.current.status))
        return _check(refused.current, str(refused.current.status))
    status = decide_batch_outcome(found.counts, is_last_poll=is_last_poll)
    if status is BatchStatus.COMPLETED and batch.error_message:
        status = BatchStatus.FAILED  # the provider listed entries we could not accept
    if status is None or (status is BatchStatus.TIMEOUT and batch.status is BatchStatus.TIMEOUT):
        log.info(
            "batch.polled",
            batch_id=batch_id,
            poll=poll_number,
            pending=found.counts.pending,
            unaccounted=max(0, found.counts.expected - found.counts.accounted),
            read_capacity_units=found.read_capacity_units,
        )
        return _check(batch, None if status is None else str(status), found.counts.pending)
    return _check(finish(flow, batch, status, found.counts.pending), None)


def sweep(flow: BatchFlowService, batch_id: str, pending_jobs: Iterable[FileJob]) -> int:
    """Finish or requeue jobs whose worker died, re-send idle ones; how many it completed."""
    return Sweeper(
        flow.jobs,
        flow.queue,
        flow.clock,
        requeue=flow.sweep_requeue,
        resend_after_seconds=flow.resend_after_seconds,
        published=flow.published,
    ).sweep(batch_id, pending_jobs)


def _check(batch: Batch, status: str | None, pending: int | None = None) -> CompletionCheck:
    final = status if status is not None else (str(batch.status) if batch.is_terminal else None)
    # `failed` and `error` as the jobs table says them (an item without FailedCount and
    # ErrorCount has only FailedFiles, which holds both).
    legacy = batch.failed_count is None and batch.error_count is None
    outcome = batch.outcome if final is not None and batch.is_terminal else None
    return CompletionCheck(
        status=final,
        completed=batch.completed,
        failed=batch.unsuccessful if legacy else batch.failed_count or 0,
        pending=max(batch.pending, pending or 0),
        error=0 if legacy else batch.error_count or 0,
        outcome=None if outcome is None else outcome.to_dict(),
    )

"""fetch-and-queue-files: one chunk of the day's listing read, its jobs written (placement.py)
and sent; the chunk that ends the listing marks the batch queued (fanout.py says why chunks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlpipe import metrics
from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.errors import QueueSendError
from dlpipe.domain.model import Batch, BatchStatus, FileJob
from dlpipe.domain.provider_errors import ProviderRefusedError, ProviderUnavailableError
from dlpipe.domain.routing import Route
from dlpipe.domain.text import one_line
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.fanout import (
    Entry,
    ExpectedFiles,
    ListingPosition,
    Refusals,
    in_parallel,
    open_listing,
)
from dlpipe.services.orchestrator.placement import write_jobs
from dlpipe.services.orchestrator.ports import FetchFailed, ProviderOutage, QueueResult

if TYPE_CHECKING:
    from dlpipe.services.orchestrator.flow import BatchFlowService

log = get_logger(component="orchestrator")
# Jobs per send_jobs call on one thread: one SendMessageBatch, SQS's limit of 10 entries.
SEND_GROUP = 10


def fetch_and_queue(
    flow: BatchFlowService, batch_id: str, polling_date: str, resume: QueueResult | None = None
) -> QueueResult:
    """Write and queue the next chunk of the listing, from `resume` (the previous chunk's
    result) or the start; the chunk that ends the listing marks the batch queued.
    Replay-safe: conditional puts, and this batch's still-available jobs are sent again."""
    batch = flow.batches.require(batch_id)
    if batch.is_terminal or batch.status is BatchStatus.QUEUED:
        # Queued is marked after the last chunk's sends succeeded: a run attached to it
        # (a repeated schedule) only watches, instead of re-reading the whole listing and
        # paying a refused put for every job; a message lost since is the sweeper's.
        return QueueResult(
            expected=batch.expected,
            sent=0,
            already_present=batch.expected,
            unchanged=batch.is_terminal,
        )
    before = resume or QueueResult(expected=0, sent=0, already_present=0, done=False)
    try:
        position, start, chunk = _next_chunk(flow, batch, polling_date, before)
        to_send, present = write_jobs(flow, batch_id, chunk, start, position)
        sent = _send(flow, to_send)
    except BaseException:
        flow.listing = None  # its place in the stream is unknown now: reopen on a retry
        raise
    result = QueueResult(
        expected=position.expected.count,
        sent=before.sent + sent,
        already_present=before.already_present + present,
        offset=position.offset,
        done=position.ended,
        refused=position.refusals.count,
        refusals_shown=tuple(position.refusals.shown),
        ended_at_ms=flow.clock.now_ms(),
    )
    log.info(
        "batch.chunk_queued",
        batch_id=batch_id,
        offset=position.offset,
        entries=len(chunk),
        sent=sent,
        to_large_queue=sum(flow.queue.route(j.expected_size) is Route.LARGE for j in to_send),
        already_present=present,
    )
    if position.ended:
        flow.listing = None
        _record_queued(flow, batch_id, position, result)
        _report_queued(flow, batch_id, polling_date, position, result)
    return result


def _next_chunk(
    flow: BatchFlowService, batch: Batch, polling_date: str, before: QueueResult
) -> tuple[ListingPosition, int, list[Entry]]:
    """The stream at the checkpoint's offset (kept from the previous chunk, or reopened,
    skipped to and given the checkpoint's tallies), the offset of its next chunk, and the
    chunk."""
    offset = before.offset
    try:
        position = flow.listing
        if position is None or not position.at(batch.batch_id, polling_date, offset):
            position = ListingPosition(
                batch.batch_id,
                polling_date,
                open_listing(flow.provider, polling_date),
                expected=ExpectedFiles.resumed(before.expected),
                refusals=Refusals(before.refused, list(before.refusals_shown)),
                feed=batch.feed,
                revision=batch.revision,
            )
            if not position.skip_to(offset):
                raise FetchFailed(
                    f"provider_listing_changed: the listing now ends at entry "
                    f"{position.offset}, before the {offset} entries already queued"
                )
            flow.listing = position
        return position, offset, position.take(flow.chunk_entries)
    except ProviderUnavailableError as exc:
        # Down, slow or throttling: the durable shell tries again later, within a budget.
        # The outage began after the previous chunk ended (the batch's start for the first).
        since_ms = max(ms_from_iso(batch.start_time), before.ended_at_ms)
        waited_s = max(0.0, (flow.clock.now_ms() - since_ms) / 1000)
        raise ProviderOutage(exc.reason, batch_id=batch.batch_id, elapsed_seconds=waited_s) from exc
    except ProviderRefusedError as exc:
        # 401/403/404, a malformed listing: asking again would get the same answer.
        raise FetchFailed(f"provider_refused: {exc}") from exc


def _record_queued(
    flow: BatchFlowService, batch_id: str, position: ListingPosition, result: QueueResult
) -> None:
    """The one place that hands the day's files to the batch item (its cap is the batch
    table's business); a count-only mark_queued would change this line alone. QueuedCount
    is what this batch sent: a replayed chunk's sends count once (its checkpoint is the
    previous chunk's), files carried from an earlier batch and error jobs not at all."""
    flow.batches.mark_queued(
        batch_id,
        position.expected.ids or (),
        error_message=position.refusals.summary(),
        expected_count=position.expected.count,
        queued_count=result.sent,
    )


def _report_queued(
    flow: BatchFlowService,
    batch_id: str,
    polling_date: str,
    position: ListingPosition,
    result: QueueResult,
) -> None:
    log.info(
        "batch.queued",
        batch_id=batch_id,
        expected=result.expected,
        sent=result.sent,
        already_present=result.already_present,
    )
    metrics.emit(
        {
            "FilesExpected": (result.expected, metrics.COUNT),
            "FilesQueued": (result.sent, metrics.COUNT),
            "FilesRejected": (position.refusals.count, metrics.COUNT),
        },
        dimensions=metrics.batch_dimensions(batch_id),
        BatchID=batch_id,
        PollingDate=polling_date,
    )


def _send(flow: BatchFlowService, to_send: list[FileJob]) -> int:
    """Send every job (SendMessageBatch groups on WRITE_WORKERS threads); the count sent."""
    groups = [to_send[i : i + SEND_GROUP] for i in range(0, len(to_send), SEND_GROUP)]
    refused = [
        exc
        for exc in in_parallel(lambda group: _send_group(flow, group), groups)
        if exc is not None
    ]
    if refused:
        # The jobs exist and stay available: a replay of this chunk sends them again.
        failed = sum(len(exc.failed) for exc in refused)
        outages = [exc.unavailable for exc in refused if exc.unavailable is not None]
        if len(outages) == len(refused):
            # SQS is down for now: the durable shell waits it out within its budget.
            log.warning("batch.queue_unavailable", files=failed, cause=str(outages[0]))
            raise outages[0]
        reason = one_line(str(refused[0]))  # SQS's codes: what an operator must fix
        log.error("batch.queueing_failed", files=failed, groups=len(refused), reason=reason)
        raise RuntimeError(f"queueing failed for {failed} file(s): {reason}")
    return len(to_send)


def _send_group(flow: BatchFlowService, jobs: list[FileJob]) -> QueueSendError | None:
    """Send one group; what the queue refused of it, if anything."""
    try:
        flow.queue.send_jobs(jobs)  # each to the queue its size routes it to
    except QueueSendError as exc:
        return exc
    return None

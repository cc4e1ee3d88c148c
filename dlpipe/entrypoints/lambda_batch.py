"""One SQS event source batch (the downloader Lambda): one service call per record, partial
batch failure.

Only the records that did not finish are reported in `batchItemFailures`; the event source
deletes the rest. The Lambda handler (downloader/handler.py) only builds the Runtime once per
execution environment (`build_runtime`, on dlpipe.bootstrap.download's wiring) and
calls `handle_event`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from structlog.contextvars import bound_contextvars

from dlpipe.adapters.download_queue import EventQueues, Received, batch_response, event_records
from dlpipe.bootstrap.download import build_lambda_wiring
from dlpipe.domain.routing import TimeBudget
from dlpipe.entrypoints.dispatch import dispatch, receive_visibility_s
from dlpipe.log import get_logger
from dlpipe.services.download.service import DownloadService

log = get_logger()
# Time kept back from the Lambda timeout to release a claim and return its message.
DEADLINE_MARGIN_S = 20.0


@dataclass
class Runtime:
    """What the handler keeps between invocations of one execution environment."""

    service: DownloadService
    queues: EventQueues


def build_runtime() -> Runtime:
    """The runtime from the environment's settings (once per execution environment)."""
    service, queues = build_lambda_wiring()
    return Runtime(service, queues)


def handle_event(event: dict[str, Any], runtime: Runtime, context: Any = None) -> dict[str, Any]:
    """Process an SQS event's records in order; report the ones that did not finish."""
    stop = runtime.service.deps.stop
    stop.clear()
    unfinished: list[Received] = []
    budget = invocation_budget(context)
    records = event_records(event)
    with _deadline(context, stop):
        for index, record in enumerate(records):
            # The event source delivers with the queue's visibility (6x the Lambda timeout):
            # bring this record and those behind it to lease + margin, so the records of an
            # invocation that crashes or times out come back soon, not after an hour.
            _hide_waiting(records[index:], runtime)
            if not _handle_record(record, runtime, stop, budget):
                unfinished.append(record)
    return batch_response(unfinished)


def _hide_waiting(records: list[Received], runtime: Runtime) -> None:
    by_queue: dict[str, list[Received]] = {}
    for record in records:
        by_queue.setdefault(record.source_arn, []).append(record)
    seconds = receive_visibility_s(runtime.service)
    for arn, waiting in by_queue.items():
        try:
            queue = runtime.queues.queue_for(arn)
        except Exception as exc:  # noqa: BLE001 - the record itself reports this below
            log.warning("message.visibility_failed", error_type=type(exc).__name__)
            continue
        queue.hide(waiting, seconds)


def _handle_record(
    record: Received,
    runtime: Runtime,
    stop: threading.Event,
    budget: TimeBudget | None = None,
) -> bool:
    with bound_contextvars(message_id=record.message_id):
        if stop.is_set():
            return False  # out of time: leave the record to a later invocation
        try:
            queue = runtime.queues.queue_for(record.source_arn)
        except Exception as exc:  # one record must not fail the batch
            log.exception("message.failed", error_type=type(exc).__name__, error=str(exc))
            return False
        visibility = queue.visibility(record)
        return dispatch(runtime.service, record.body, visibility, budget, record.receive_count)


def invocation_budget(context: Any) -> TimeBudget | None:
    """This invocation's time for a file: what was left when it started (about the function's
    timeout), and what is left now; both less the margin kept to release a claim."""
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if remaining_ms is None:
        return None
    return TimeBudget(
        full_s=remaining_ms() / 1000 - DEADLINE_MARGIN_S,
        remaining_s=lambda: remaining_ms() / 1000 - DEADLINE_MARGIN_S,
    )


@contextmanager
def _deadline(context: Any, stop: threading.Event) -> Iterator[None]:
    """Set `stop` shortly before the invocation times out, so claims are released in time."""
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if remaining_ms is None:
        yield
        return
    delay_s = remaining_ms() / 1000 - DEADLINE_MARGIN_S
    if delay_s <= 0:
        stop.set()
        yield
        return
    timer = threading.Timer(delay_s, stop.set)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()

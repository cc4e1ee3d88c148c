"""One SQS event source batch (the downloader Lambda): one service call per record, partial
batch failure.

Only the records that did not finish are reported in `batchItemFailures`; the event source
deletes the rest. The Lambda handler (downloader/handler.py) only builds the Runtime once per
execution environment (dlpipe.bootstrap.download) and calls `handle_event`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from structlog.contextvars import bound_contextvars

from dlpipe.domain.routing import TimeBudget
from dlpipe.log import get_logger
from dlpipe.services.download.dispatch import (
    MessageVisibility,
    dispatch,
    hide_messages,
    receive_visibility_s,
)
from dlpipe.services.download.service import DownloadService

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

log = get_logger()
# Time kept back from the Lambda timeout to release a claim and return its message.
DEADLINE_MARGIN_S = 20.0


class QueueRouter(Protocol):
    """Names the queue a message of a file of `size_bytes` goes to (JobQueue fits)."""

    def queue_url_for(self, size_bytes: int | None) -> str:
        """The queue URL for a file of that size."""
        ...


@dataclass
class Runtime:
    """What the handler keeps between invocations of one execution environment."""

    service: DownloadService
    sqs: SQSClient
    queue_url: str | None
    queue_urls: dict[str, str] = field(default_factory=dict)
    router: QueueRouter | None = None  # routes the delayed copy of a message by the file's size

    def queue_url_for(self, arn: str) -> str:
        """The queue URL for an event source ARN (arn:aws:sqs:region:account:name)."""
        if self.queue_url:
            return self.queue_url
        if arn not in self.queue_urls:
            _, _, _, _, account, name = arn.split(":", 5)
            response = self.sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)
            self.queue_urls[arn] = response["QueueUrl"]
        return self.queue_urls[arn]


def handle_event(event: dict[str, Any], runtime: Runtime, context: Any = None) -> dict[str, Any]:
    """Process an SQS event's records in order; report the ones that did not finish."""
    stop = runtime.service.deps.stop
    stop.clear()
    failures: list[dict[str, str]] = []
    budget = invocation_budget(context)
    records = event.get("Records", [])
    with _deadline(context, stop):
        for index, record in enumerate(records):
            # The event source delivers with the queue's visibility (6x the Lambda timeout):
            # bring this record and those behind it to lease + margin, so the records of an
            # invocation that crashes or times out come back soon, not after an hour.
            _hide_waiting(records[index:], runtime)
            if not _handle_record(record, runtime, stop, budget):
                failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def _hide_waiting(records: list[dict[str, Any]], runtime: Runtime) -> None:
    by_queue: dict[str, list[str]] = {}
    for record in records:
        by_queue.setdefault(record.get("eventSourceARN", ""), []).append(
            record.get("receiptHandle", "")
        )
    seconds = receive_visibility_s(runtime.service)
    for arn, handles in by_queue.items():
        try:
            queue_url = runtime.queue_url_for(arn)
        except Exception as exc:  # noqa: BLE001 - the record itself reports this below
            log.warning("message.visibility_failed", error_type=type(exc).__name__)
            continue
        hide_messages(runtime.sqs, queue_url, handles, seconds)


def _handle_record(
    record: dict[str, Any],
    runtime: Runtime,
    stop: threading.Event,
    budget: TimeBudget | None = None,
) -> bool:
    with bound_contextvars(message_id=record.get("messageId")):
        if stop.is_set():
            return False  # out of time: leave the record to a later invocation
        try:
            queue_url = runtime.queue_url_for(record.get("eventSourceARN", ""))
        except Exception as exc:  # one record must not fail the batch
            log.exception("message.failed", error_type=type(exc).__name__, error=str(exc))
            return False
        copy_to = runtime.router.queue_url_for if runtime.router else None
        receipt = record.get("receiptHandle", "")
        visibility = MessageVisibility(runtime.sqs, queue_url, receipt, copy_to)
        return dispatch(runtime.service, record.get("body", ""), visibility, budget)


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

"""One SQS message through the service, shared by the Lambda handler and the worker.

A copy that meets another worker's live claim (BUSY) is replaced by a fresh copy delayed
until that claim ends, so duplicates never climb towards maxReceiveCount.
A malformed body can never succeed, so it is acknowledged and logged (`message.rejected`,
with a short preview) rather than redelivered until the DLQ: retries would only burn
receives, and the log keeps the evidence. An exception, on the other hand, is never
acknowledged: SQS redelivers the message and, after maxReceiveCount, dead-letters it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.domain.messages import MalformedMessageError, decode_message
from dlpipe.domain.routing import TimeBudget
from dlpipe.log import get_logger
from dlpipe.services.download.service import DownloadService, Outcome

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

log = get_logger()
_PREVIEW_CHARS = 200
_MAX_DELAY_S = 900
_MAX_VISIBILITY_S = 43_200  # SQS's limit
_VISIBILITY_BATCH_MAX = 10  # ChangeMessageVisibilityBatch's limit


class MessageVisibility:
    """Sets one received message's visibility timeout; failures are logged, never raised.

    `copy_to(size_bytes)` names the queue a fresh copy goes to (JobQueue.queue_url_for, so
    a copy is routed like every other send); without it, the queue the message came from.
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        receipt_handle: str,
        copy_to: Callable[[int | None], str] | None = None,
    ) -> None:
        self._sqs, self._queue_url, self._receipt = sqs, queue_url, receipt_handle
        self._copy_to = copy_to

    def __call__(self, seconds: int) -> None:
        """Hide the message for `seconds` from now (0: visible again at once)."""
        try:
            self._sqs.change_message_visibility(
                QueueUrl=self._queue_url, ReceiptHandle=self._receipt, VisibilityTimeout=seconds
            )
        except (ClientError, BotoCoreError) as exc:
            # The message then reappears at its old timeout; the job's claim still guards it.
            log.warning("message.visibility_failed", error_type=type(exc).__name__)

    def send_copy_later(self, body: str, delay_s: int, size_bytes: int | None = None) -> bool:
        """Queue a fresh copy of `body`, visible after `delay_s` (SQS allows 900 at most)."""
        queue_url = self._copy_to(size_bytes) if self._copy_to else self._queue_url
        try:
            self._sqs.send_message(
                QueueUrl=queue_url,
                MessageBody=body,
                DelaySeconds=max(0, min(delay_s, _MAX_DELAY_S)),
            )
        except (ClientError, BotoCoreError) as exc:
            log.warning("message.defer_failed", error_type=type(exc).__name__)
            return False
        return True


def receive_visibility_s(service: DownloadService) -> int:
    """Lease + margin: how long a received message stays hidden before its heartbeat starts.

    Never the queue's default (6x the Lambda timeout): a message received by a process that
    then dies comes back after this, not after an hour.
    """
    lease_s = service.deps.lease_seconds
    return min(lease_s + service.deps.tuning.margin_s(lease_s), _MAX_VISIBILITY_S)


def hide_messages(
    sqs: SQSClient, queue_url: str, receipt_handles: Sequence[str], seconds: int
) -> None:
    """Hide received messages for `seconds` from now (batches of 10); failures are logged."""
    for start in range(0, len(receipt_handles), _VISIBILITY_BATCH_MAX):
        chunk = receipt_handles[start : start + _VISIBILITY_BATCH_MAX]
        entries: list[Any] = [
            {"Id": str(n), "ReceiptHandle": handle, "VisibilityTimeout": seconds}
            for n, handle in enumerate(chunk)
        ]
        try:
            response = sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)
        except (ClientError, BotoCoreError) as exc:
            # They then return at the visibility they were received with; claims still guard.
            log.warning("message.visibility_failed", error_type=type(exc).__name__)
            continue
        for failed in response.get("Failed", []):
            log.warning("message.visibility_failed", error_code=failed.get("Code", "?"))


def dispatch(
    service: DownloadService,
    body: str,
    visibility: MessageVisibility,
    budget: TimeBudget | None = None,
) -> bool:
    """Process one message body; True when the message is done with and may be deleted."""
    try:
        message = decode_message(body)
    except MalformedMessageError as exc:
        log.warning("message.rejected", reason=str(exc), body_preview=body[:_PREVIEW_CHARS])
        return True
    try:
        result = service.process(message.file_id, on_heartbeat=visibility, budget=budget)
    except Exception as exc:  # any failure must become a redelivery, never an ack
        log.exception("message.failed", error_type=type(exc).__name__, error=str(exc))
        return False
    if result.outcome is Outcome.BUSY and result.retry_after_s is not None:
        # Every return of the same message is a new receive, so a duplicate of a long but
        # healthy download would reach the DLQ. A fresh copy, delayed until the claim ends,
        # comes back just the same with its receive count at zero; the old one is deleted.
        if visibility.send_copy_later(body, result.retry_after_s, result.size_bytes):
            log.info("message.deferred", delay_s=result.retry_after_s)
            return True
        visibility(result.retry_after_s)  # fallback: back when the live claim ends
    elif result.outcome in (Outcome.RELEASED, Outcome.NO_TIME):
        visibility(0)  # another worker (or a fresh invocation) may take it at once
    return result.acknowledge

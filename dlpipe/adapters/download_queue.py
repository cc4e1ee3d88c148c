"""The download queues as their consumers see them: receive, delete, hide, defer a copy.

The SQS wire stays here: request shapes, receipt handles, batch limits, the Lambda event's
records and its `batchItemFailures` answer. The worker and the Lambda handler
(dlpipe.entrypoints) see `Received` messages and these methods. A receive SQS refuses raises
QueueUnavailableError; every other call logs its failure and carries on, because the job's
claim, not the message, guards the work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.domain.download_errors import QueueUnavailableError
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

log = get_logger()
_MAX_DELAY_S = 900
_VISIBILITY_BATCH_MAX = 10  # ChangeMessageVisibilityBatch's limit


@dataclass(frozen=True)
class Received:
    """One received message: what identifies it to SQS, and its body."""

    message_id: str
    receipt_handle: str
    body: str
    source_arn: str = ""  # the queue's ARN, in a Lambda event's records
    receive_count: int | None = None  # SQS's ApproximateReceiveCount; None: not given


# The queue a delayed copy of a message goes to, from its file's size and the message's body
# (whose FileID names the feed, and so the size threshold, that routed the original).
CopyRoute = Callable[[int | None, str], str]


class MessageVisibility:
    """Sets one received message's visibility timeout; failures are logged, never raised.

    `copy_to(size_bytes, body)` names the queue a fresh copy goes to (routed by the file's
    feed's threshold, as the orchestrator's send was); without it, the queue it came from.
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        receipt_handle: str,
        copy_to: CopyRoute | None = None,
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
        queue_url = self._copy_to(size_bytes, body) if self._copy_to else self._queue_url
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


class DownloadQueue:
    """One download queue (main or large-file), as the long-poll worker consumes it.

    `copy_to` routes a delayed copy of a message by the file's size and feed (CopyRoute).
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        copy_to: CopyRoute | None = None,
    ) -> None:
        self._sqs, self.queue_url, self._copy_to = sqs, queue_url, copy_to

    def receive(self, *, max_messages: int, wait_s: int, visibility_s: int) -> list[Received]:
        """Up to `max_messages`, each hidden for `visibility_s`; QueueUnavailableError if SQS
        refuses or cannot be reached."""
        try:
            response = self._sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=max_messages,
                WaitTimeSeconds=wait_s,
                VisibilityTimeout=visibility_s,
                # What a Lambda event's records carry too: the bound of a job of an unknown feed.
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
        except (ClientError, BotoCoreError) as exc:
            raise QueueUnavailableError(f"ReceiveMessage failed: {type(exc).__name__}") from exc
        return [
            Received(
                m["MessageId"],
                m["ReceiptHandle"],
                m.get("Body", ""),
                receive_count=_receive_count(m.get("Attributes", {})),
            )
            for m in response.get("Messages", [])
        ]

    def delete(self, message: Received) -> None:
        """Acknowledge `message`; a failure is logged (it comes back and is acknowledged again,
        its job being terminal by then)."""
        try:
            self._sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message.receipt_handle)
        except (ClientError, BotoCoreError) as exc:
            log.warning("message.delete_failed", error_type=type(exc).__name__)

    def hide(self, messages: Sequence[Received], seconds: int) -> None:
        """Hide `messages` for `seconds` from now; failures are logged."""
        hide_messages(self._sqs, self.queue_url, [m.receipt_handle for m in messages], seconds)

    def visibility(self, message: Received) -> MessageVisibility:
        """The visibility of one received message (heartbeat, hand-back, delayed copy)."""
        return MessageVisibility(self._sqs, self.queue_url, message.receipt_handle, self._copy_to)


class EventQueues:
    """The queues an SQS event source's records come from, found by their ARN (the Lambda).

    A record of the queue `queue_url` names is taken to come from it (no GetQueueUrl call);
    another feed's queue is found by its ARN (GetQueueUrl, once). `copy_to` routes delayed
    copies (CopyRoute).
    """

    def __init__(
        self, sqs: SQSClient, queue_url: str | None, copy_to: CopyRoute | None = None
    ) -> None:
        self._sqs, self._queue_url, self._copy_to = sqs, queue_url, copy_to
        self._urls: dict[str, str] = {}

    def queue_for(self, arn: str) -> DownloadQueue:
        """The queue of an event source ARN (arn:aws:sqs:region:account:name); an error if
        GetQueueUrl fails."""
        return DownloadQueue(self._sqs, self._url_for(arn), self._copy_to)

    def _url_for(self, arn: str) -> str:
        name = arn.rsplit(":", 1)[-1]
        if self._queue_url and (not arn or self._queue_url.rstrip("/").endswith(f"/{name}")):
            return self._queue_url
        if arn not in self._urls:
            _, _, _, _, account, name = arn.split(":", 5)
            response = self._sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)
            self._urls[arn] = response["QueueUrl"]
        return self._urls[arn]


def event_records(event: dict[str, Any]) -> list[Received]:
    """The messages of an SQS event source's event, in order."""
    return [
        Received(
            message_id=record.get("messageId", ""),
            receipt_handle=record.get("receiptHandle", ""),
            body=record.get("body", ""),
            source_arn=record.get("eventSourceARN", ""),
            receive_count=_receive_count(record.get("attributes", {})),
        )
        for record in event.get("Records", [])
    ]


def _receive_count(attributes: Any) -> int | None:
    """ApproximateReceiveCount from a message's attributes (a numeral); None if absent."""
    value = attributes.get("ApproximateReceiveCount") if isinstance(attributes, dict) else None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def batch_response(unfinished: Sequence[Received]) -> dict[str, Any]:
    """The partial batch answer: the records the event source must deliver again."""
    return {"batchItemFailures": [{"itemIdentifier": m.message_id} for m in unfinished]}

"""Look at SQS messages without consuming them: receive, then give them back or delete them.

A call SQS refuses (a queue that does not exist, access denied) raises AwsRequestError."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.adapters.aws_errors import queue_name, raise_request_error
from dlpipe.domain.messages import JobMessage, MalformedMessageError, decode_message
from dlpipe.domain.queued import QueuedMessage

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

_BATCH_MAX = 10  # ReceiveMessage / ChangeMessageVisibilityBatch / DeleteMessageBatch limit


def _parse(raw: Any) -> QueuedMessage:
    attributes = raw.get("Attributes", {})
    job: JobMessage | None = None
    problem: str | None = None
    try:
        job = decode_message(raw.get("Body", ""))
    except MalformedMessageError as exc:
        problem = str(exc)
    return QueuedMessage(
        message_id=raw["MessageId"],
        receipt_handle=raw["ReceiptHandle"],
        receive_count=int(attributes.get("ApproximateReceiveCount", 0)),
        sent_at_ms=int(attributes.get("SentTimestamp", 0)),
        job=job,
        problem=problem,
    )


def receive(
    sqs: SQSClient, url: str, limit: int, visibility_s: int, wait_s: int
) -> list[QueuedMessage]:
    """Receive up to `limit` messages, each hidden for `visibility_s` until given back."""
    seen: dict[str, QueuedMessage] = {}
    while len(seen) < limit:
        try:
            response = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(_BATCH_MAX, limit - len(seen)),
                VisibilityTimeout=visibility_s,
                WaitTimeSeconds=wait_s,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            )
        except (ClientError, BotoCoreError) as exc:
            raise_request_error(exc, "SQS", "ReceiveMessage", queue_name(url))
        new = [_parse(m) for m in response.get("Messages", []) if m["MessageId"] not in seen]
        if not new:
            break
        seen.update((m.message_id, m) for m in new)
    return list(seen.values())


def _chunks(messages: Sequence[QueuedMessage]) -> list[Sequence[QueuedMessage]]:
    return [messages[i : i + _BATCH_MAX] for i in range(0, len(messages), _BATCH_MAX)]


def give_back(sqs: SQSClient, url: str, messages: Sequence[QueuedMessage]) -> None:
    """Make `messages` visible again at once (visibility timeout 0)."""
    for chunk in _chunks(messages):
        try:
            sqs.change_message_visibility_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m.receipt_handle, "VisibilityTimeout": 0}
                    for i, m in enumerate(chunk)
                ],
            )
        except (ClientError, BotoCoreError) as exc:
            raise_request_error(exc, "SQS", "ChangeMessageVisibilityBatch", queue_name(url))


def delete(sqs: SQSClient, url: str, messages: Sequence[QueuedMessage]) -> list[str]:
    """Delete `messages` from the queue; return the MessageIds SQS did not delete."""
    failed: list[str] = []
    for chunk in _chunks(messages):
        try:
            response = sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(chunk)
                ],
            )
        except (ClientError, BotoCoreError) as exc:
            raise_request_error(exc, "SQS", "DeleteMessageBatch", queue_name(url))
        failed.extend(chunk[int(f["Id"])].message_id for f in response.get("Failed", []))
    return failed


class SqsMessages:
    """The functions above on one SQS client: what the DLQ commands look at messages with."""

    def __init__(self, sqs: SQSClient) -> None:
        self._sqs = sqs

    def receive(self, url: str, limit: int, visibility_s: int, wait_s: int) -> list[QueuedMessage]:
        """Receive up to `limit` messages, each hidden for `visibility_s` until given back."""
        return receive(self._sqs, url, limit, visibility_s, wait_s)

    def give_back(self, url: str, messages: Sequence[QueuedMessage]) -> None:
        """Make `messages` visible again at once."""
        give_back(self._sqs, url, messages)

    def delete(self, url: str, messages: Sequence[QueuedMessage]) -> list[str]:
        """Delete `messages`; the MessageIds SQS did not delete."""
        return delete(self._sqs, url, messages)

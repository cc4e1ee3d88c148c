"""The download queue: sending job messages in batches of ten, failed entries retried."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from downloader.messages import JobMessage, encode_message

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

SEND_BATCH_MAX = 10  # SendMessageBatch's limit


class QueueSendError(RuntimeError):
    """Some messages could not be sent after retries; `failed` lists their FileIDs."""

    def __init__(self, message: str, failed: Sequence[str]) -> None:
        super().__init__(message)
        self.failed = list(failed)


class _PartialSend(Exception):
    def __init__(self, remaining: list[JobMessage], reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.remaining = remaining


class JobQueue:
    """Sends JobMessages to one SQS queue."""

    def __init__(self, sqs: SQSClient, queue_url: str, max_attempts: int = 6) -> None:
        self._sqs = sqs
        self.queue_url = queue_url
        self._max_attempts = max_attempts

    def send(self, messages: Sequence[JobMessage]) -> int:
        """Send every message (10 a call); return how many were sent, or raise QueueSendError."""
        for start in range(0, len(messages), SEND_BATCH_MAX):
            self._send_chunk(list(messages[start : start + SEND_BATCH_MAX]))
        return len(messages)

    def _send_chunk(self, chunk: list[JobMessage]) -> None:
        pending = chunk

        @retry(
            stop=stop_after_attempt(self._max_attempts),
            wait=wait_random_exponential(multiplier=0.2, max=5),
            retry=retry_if_exception_type((_PartialSend, BotoCoreError, ClientError)),
            reraise=True,
        )
        def attempt() -> None:
            nonlocal pending
            entries: list[Any] = [
                {"Id": str(i), "MessageBody": encode_message(m)} for i, m in enumerate(pending)
            ]
            response = self._sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            failed = response.get("Failed", [])
            if failed:
                # Only the failed entries are sent again: the others are already queued.
                pending = [pending[int(f["Id"])] for f in failed]
                raise _PartialSend(pending, [f.get("Code", "?") for f in failed])

        try:
            attempt()
        except (_PartialSend, BotoCoreError, ClientError) as exc:
            raise QueueSendError(
                f"could not queue {len(pending)} message(s): {exc}", [m.file_id for m in pending]
            ) from exc

    def depth(self) -> int:
        """Approximate number of visible messages."""
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessages", 0))

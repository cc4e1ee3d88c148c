"""The download queues: sending job messages in batches of ten, failed entries retried.

Every (re)send of a job goes through `JobQueue.send_jobs`, which routes each job by its
size (dlpipe.domain.routing): the main queue, or the large-file queue only the long-poll worker
consumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from dlpipe.adapters.aws_errors import is_transient, queue_name, raise_request_error
from dlpipe.domain.errors import DependencyUnavailableError, QueueSendError
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.routing import DEFAULT_LARGE_FILE_THRESHOLD_BYTES, Route, route_for
from dlpipe.domain.text import one_line

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlpipe.config import Settings
    from dlpipe.domain.model import FileJob

SEND_BATCH_MAX = 10  # SendMessageBatch's limit


class _PartialSend(Exception):
    def __init__(self, remaining: list[JobMessage], reasons: list[str], transient: bool) -> None:
        super().__init__("; ".join(reasons))
        self.remaining = remaining
        self.transient = transient  # every failed entry was SQS's fault, not ours


class JobQueue:
    """Sends JobMessages to the main SQS queue, and large files' to the large-file queue."""

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        max_attempts: int = 6,
        *,
        large_queue_url: str | None = None,
        large_file_threshold_bytes: int = DEFAULT_LARGE_FILE_THRESHOLD_BYTES,
    ) -> None:
        self._sqs = sqs
        self.queue_url = queue_url
        self._max_attempts = max_attempts
        self.large_queue_url = large_queue_url
        self.large_file_threshold_bytes = large_file_threshold_bytes

    @classmethod
    def from_settings(cls, sqs: SQSClient, settings: Settings) -> JobQueue:
        """The queues `settings` name (ConfigError if DLPIPE_QUEUE_URL is unset)."""
        return cls(
            sqs,
            settings.require("queue_url"),
            large_queue_url=settings.large_queue_url,
            large_file_threshold_bytes=settings.large_file_threshold_bytes,
        )

    def route(self, size_bytes: int | None) -> Route:
        """Which queue a file of `size_bytes` goes to."""
        has_large = self.large_queue_url is not None
        return route_for(size_bytes, self.large_file_threshold_bytes, has_large)

    def queue_url_for(self, size_bytes: int | None) -> str:
        """The URL of the queue a file of `size_bytes` goes to."""
        # route() says LARGE only when there is a large queue.
        if self.route(size_bytes) is Route.LARGE and self.large_queue_url:
            return self.large_queue_url
        return self.queue_url

    def send_jobs(self, jobs: Sequence[FileJob]) -> int:
        """Send one message per job to the queue its size routes it to; QueueSendError lists
        every job that could not be sent, whichever queue it was meant for."""
        by_queue: dict[str, list[JobMessage]] = {}
        for job in jobs:
            url = self.queue_url_for(job.expected_size)
            by_queue.setdefault(url, []).append(JobMessage(job.file_id, job.batch_id))
        refused: list[QueueSendError] = []
        for url, messages in by_queue.items():
            try:
                self._send_to(url, messages)
            except QueueSendError as exc:
                refused.append(exc)
        if refused:
            outages = [exc.unavailable for exc in refused]
            raise QueueSendError(
                "; ".join(str(exc) for exc in refused),
                [file_id for exc in refused for file_id in exc.failed],
                outages[0] if None not in outages else None,
            )
        return len(jobs)

    def _send_to(self, queue_url: str, messages: Sequence[JobMessage]) -> int:
        """Send every message (10 a call); how many were sent, or QueueSendError."""
        for start in range(0, len(messages), SEND_BATCH_MAX):
            self._send_chunk(queue_url, list(messages[start : start + SEND_BATCH_MAX]))
        return len(messages)

    def _send_chunk(self, queue_url: str, chunk: list[JobMessage]) -> None:
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
            response = self._sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
            failed = response.get("Failed", [])
            if failed:
                # Only the failed entries are sent again: the others are already queued.
                pending = [pending[int(f["Id"])] for f in failed]
                server_side = not any(f.get("SenderFault", True) for f in failed)
                raise _PartialSend(pending, [f.get("Code", "?") for f in failed], server_side)

        try:
            attempt()
        except (_PartialSend, BotoCoreError, ClientError) as exc:
            transient = exc.transient if isinstance(exc, _PartialSend) else is_transient(exc)
            unavailable = (
                DependencyUnavailableError(
                    f"SQS SendMessageBatch on {queue_name(queue_url)!r}: {one_line(str(exc), 200)}",
                    dependency="SQS",
                )
                if transient
                else None
            )
            raise QueueSendError(
                f"could not queue {len(pending)} message(s): {exc}",
                [m.file_id for m in pending],
                unavailable,
            ) from exc

    def depth_and_in_flight(self) -> tuple[int, int]:
        """Approximate visible and in-flight (received, not yet deleted) messages."""
        try:
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=self.queue_url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                ],
            )["Attributes"]
        except (ClientError, BotoCoreError) as exc:
            raise_request_error(exc, "SQS", "GetQueueAttributes", queue_name(self.queue_url))
        return (
            int(attributes.get("ApproximateNumberOfMessages", 0)),
            int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        )

    def depth(self) -> int:
        """Approximate number of visible messages; AwsRequestError (one line) if SQS refuses."""
        try:
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]
        except (ClientError, BotoCoreError) as exc:
            raise_request_error(exc, "SQS", "GetQueueAttributes", queue_name(self.queue_url))
        return int(attributes.get("ApproximateNumberOfMessages", 0))

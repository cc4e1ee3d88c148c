"""What the operator use cases need from the stores and queues (ports: the adapters fit them
structurally, `dlpipe.bootstrap.ops` builds them; tests may pass in-memory fakes).

Every AWS refusal reaches the use cases as a domain error (dlpipe.domain.errors), never as
a botocore type: the adapters translate at their edge."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from dlpipe.domain.errors import CorruptRecordError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus
from dlpipe.domain.queued import QueuedMessage

UnreadableHandler = Callable[[CorruptRecordError], None]


class OpsJobs(Protocol):
    """The jobs table as operators read and repair it (GetItem and indexed Queries only)."""

    def get(self, file_id: str, *, consistent: bool = True) -> FileJob | None:
        """The job, or None."""
        ...

    def require(self, file_id: str) -> FileJob:
        """The job, or NotFoundError."""
        ...

    def batch_get(
        self,
        file_ids: Iterable[str],
        *,
        consistent: bool = False,
        on_unreadable: UnreadableHandler | None = None,
    ) -> dict[str, FileJob]:
        """Jobs by FileID (absent ones left out)."""
        ...

    def requeue(self, file_id: str, *, force: bool = False) -> FileJob:
        """Back to available unless completed or held under a live lease; RequeueRefusedError."""
        ...

    def query_by_status(
        self,
        status: JobStatus,
        *,
        older_than_ms: int | None = None,
        limit: int | None = None,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """Jobs in `status` (StatusIndex), oldest first, optionally unchanged since a time."""
        ...

    def edge_by_status(self, status: JobStatus, *, newest: bool = False) -> FileJob | None:
        """The oldest (or newest) readable job in `status`."""
        ...

    def query_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int | None = None,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """Jobs of `batch_id` (BatchIndex), optionally only those in `status`."""
        ...

    def page_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int,
        start: dict[str, str] | None = None,
    ) -> tuple[list[FileJob], dict[str, str] | None]:
        """One page of `batch_id`'s jobs after `start`, and the key to go on from."""
        ...

    def count_by_batch(self, batch_id: str, status: JobStatus) -> int:
        """How many jobs of `batch_id` are in `status`."""
        ...


class OpsBatches(Protocol):
    """The batches table as operators read it."""

    def require(self, batch_id: str) -> Batch:
        """The batch, or NotFoundError."""
        ...

    def query_by_date(self, polling_date: str, status: BatchStatus | None = None) -> list[Batch]:
        """The batches of a polling date (PollingDateIndex), oldest first."""
        ...


class JobSender(Protocol):
    """The download queues: each job sent to the queue its size routes it to."""

    def send_jobs(self, jobs: Sequence[FileJob]) -> int:
        """Send one message per job; QueueSendError (naming the unsent) if some failed."""
        ...


class QueueGauge(Protocol):
    """One queue's approximate depth (AwsRequestError if SQS refuses)."""

    def depth(self) -> int:
        """Visible messages."""
        ...

    def depth_and_in_flight(self) -> tuple[int, int]:
        """Visible and in-flight (received, not yet deleted) messages."""
        ...


class MessagePeeker(Protocol):
    """Looks at a queue's messages without consuming them (AwsRequestError if SQS refuses)."""

    def receive(self, url: str, limit: int, visibility_s: int, wait_s: int) -> list[QueuedMessage]:
        """Up to `limit` messages, each hidden for `visibility_s` until given back."""
        ...

    def give_back(self, url: str, messages: Sequence[QueuedMessage]) -> None:
        """Make `messages` visible again at once."""
        ...

    def delete(self, url: str, messages: Sequence[QueuedMessage]) -> list[str]:
        """Delete `messages`; the MessageIds that were not deleted."""
        ...


class Starter(Protocol):
    """Starts the poller for one date (the orchestrator Lambda, or a local runner)."""

    def start(self, polling_date: str, rerun: bool, feed: str = DEFAULT_FEED_NAME) -> str:
        """Start `feed`'s run of the date; return a short note on what was started."""
        ...

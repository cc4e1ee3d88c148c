"""What the operator use cases need from the stores and queues (ports: the adapters fit them
structurally, `dlpipe.bootstrap.ops` builds them; tests may pass in-memory fakes).

Every AWS refusal reaches the use cases as a domain error (dlpipe.domain.errors), never as
a botocore type: the adapters translate at their edge. What the other services ask of the
same stores too (a batch's jobs, a requeue, the batches by date, the queue's send) is written
once in dlpipe/services/shared_ports.py and taken in here."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from dlpipe.domain.errors import UnreadableHandler
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.job_row import JobRow
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.queued import QueuedMessage
from dlpipe.services.shared_ports import BatchJobReads, BatchReads, JobRequeue


class OpsJobs(BatchJobReads, JobRequeue, Protocol):
    """The jobs table as operators read and repair it (GetItem and indexed Queries only)."""

    def get(self, file_id: str, *, consistent: bool = True) -> FileJob | None:
        """The job, or None."""
        ...

    def require(self, file_id: str) -> FileJob:
        """The job, or NotFoundError."""
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

    def rows_by_batch(self, batch_id: str, status: JobStatus) -> Iterator[JobRow]:
        """What BatchIndex holds of `batch_id`'s jobs in `status` (index items only): a
        revision's withdrawn files are found by their mark on them."""
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


class OpsBatches(BatchReads, Protocol):
    """The batches table as operators read it: by BatchID and by polling date."""


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

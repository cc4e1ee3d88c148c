"""The store and queue operations that more than one service asks for, each written once.

A service's own ports (services/ops/ports.py, services/orchestrator/store_ports.py and
sweep_ports.py) are made of these and of what only that service uses; the adapters fit them
structurally (dlpipe.bootstrap wires them), tests pass the fakes of tests/fakes/. AWS
refusals arrive as the domain's errors: the adapters translate at their edge. This module
belongs to no one service, so the three stay independent of one another.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from dlpipe.domain.errors import UnreadableHandler
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus


class JobRequeue(Protocol):
    """The jobs table's repair: a job given back to the downloaders."""

    def requeue(self, file_id: str, *, force: bool = False) -> FileJob:
        """Back to available unless completed or held under a live lease; RequeueRefusedError."""
        ...


class BatchJobReads(Protocol):
    """The jobs table read by batch (BatchIndex) and by FileID."""

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

    def count_by_batch(self, batch_id: str, status: JobStatus) -> int:
        """How many jobs of `batch_id` are in `status`."""
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


class BatchReads(Protocol):
    """The batches table read by BatchID and by polling date."""

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

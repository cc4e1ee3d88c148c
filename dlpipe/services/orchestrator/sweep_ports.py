"""What the poller's sweeper needs from the jobs table, the download queues and the bucket
(ports: the adapters fit them structurally, `dlpipe.bootstrap.orchestrator` wires them; the
flow's own JobStore and JobSender are wider and fit too). AWS refusals arrive as the
domain's errors: the adapters translate at their edge."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from dlpipe.domain.model import FileJob, JobStatus, Verified

# (destination key, verified object) when a job's file is already published, else None. A HEAD
# that fails answers None: not knowing costs only a download.
PublishedCheck = Callable[[FileJob], "tuple[str, Verified] | None"]


class SweepJobs(Protocol):
    """The jobs table's conditional writes and the BatchIndex read the sweeper uses."""

    def requeue(self, file_id: str, *, force: bool = False) -> FileJob:
        """Back to available unless completed or held under a live lease; RequeueRefusedError."""
        ...

    def complete_abandoned(
        self, file_id: str, owner: str, *, byte_count: int, sha256: str, destination_key: str
    ) -> FileJob:
        """Complete `owner`'s expired claim whose file is published; LeaseLostError."""
        ...

    def query_by_batch(self, batch_id: str, status: JobStatus | None = None) -> Iterator[FileJob]:
        """Jobs of `batch_id` (BatchIndex), optionally only those in `status`."""
        ...


class SweepQueue(Protocol):
    """The download queues as the sweeper re-sends to them."""

    def send_jobs(self, jobs: Sequence[FileJob]) -> int:
        """Send one message per job to the queue its size routes it to; QueueSendError."""
        ...

    def depth(self) -> int:
        """Messages visible now (a backlog estimate); AwsRequestError if SQS refuses."""
        ...

"""What the poller's sweeper needs from the jobs table, the download queues and the bucket
(ports: the adapters fit them structurally, `dlpipe.bootstrap.orchestrator` wires them; the
flow's own JobStore and DownloadQueues in store_ports.py extend them). AWS refusals arrive as
the domain's errors: the adapters translate at their edge."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from dlpipe.domain.errors import UnreadableHandler
from dlpipe.domain.model import FileJob, JobStatus, Published
from dlpipe.services.shared_ports import JobRequeue, JobSender

# The file published at the job's key, else None. A HEAD that fails answers None: not knowing
# costs only a download.
PublishedCheck = Callable[[FileJob], "Published | None"]


class SweepJobs(JobRequeue, Protocol):
    """The jobs table's conditional writes and the StatusIndex read the sweeper uses."""

    def complete_abandoned(
        self,
        file_id: str,
        owner: str,
        *,
        byte_count: int,
        sha256: str,
        destination_key: str,
        previous_version_id: str | None = None,
    ) -> FileJob:
        """Complete `owner`'s expired claim whose file is published (a revision's with the
        version it replaced); LeaseLostError."""
        ...

    def stale_of_batch(
        self,
        batch_id: str,
        status: JobStatus,
        *,
        older_than_ms: int,
        on_unreadable: UnreadableHandler | None = None,
    ) -> Iterator[FileJob]:
        """`batch_id`'s jobs in pending `status` last changed before `older_than_ms`
        (StatusIndex), oldest first."""
        ...


class SweepQueue(JobSender, Protocol):
    """The download queues as the sweeper re-sends to them."""

    def depth(self) -> int:
        """Messages visible now (a backlog estimate); AwsRequestError if SQS refuses."""
        ...

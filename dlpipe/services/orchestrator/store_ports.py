"""The stores the batch flow needs: the jobs table, the batches table and the download queues
(ports: dlpipe.adapters.jobs_table / batches_table / queue fit them structurally,
`dlpipe.bootstrap.orchestrator` wires them; tests pass the in-memory fakes of tests/fakes/).
AWS refusals arrive as the domain's errors: the adapters translate at their edge. What the
operator services ask of the same stores too is dlpipe/services/shared_ports.py's, and what
the sweeper asks is sweep_ports.py's: the ports here add what only the flow uses."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from dlpipe.domain.clock import Clock
from dlpipe.domain.job_row import JobRow
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus
from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.domain.routing import Route
from dlpipe.services.orchestrator.sweep_ports import SweepJobs, SweepQueue
from dlpipe.services.shared_ports import BatchJobReads, BatchReads


class ReadCost(Protocol):
    """Read capacity the index reads consumed so far (what a poll logs)."""

    @property
    def read_capacity_units(self) -> float:
        """RCU consumed since the store was built."""
        ...


class JobStore(BatchJobReads, SweepJobs, Protocol):
    """The jobs table as the batch flow, its completion check and its sweeper use it.
    Each write is conditional: refusals raise the domain's errors (JobExistsError, ...)."""

    @property
    def meter(self) -> ReadCost:
        """What index reads cost."""
        ...

    def create(self, job: FileJob) -> FileJob:
        """Write a new job; JobExistsError (with the stored job) if the FileID exists."""
        ...

    def adopt(self, file_id: str, batch_id: str, listing_index: int | None = None) -> FileJob:
        """Move an unfinished job of another batch into `batch_id` (at `listing_index` of its
        listing, when given); RequeueRefusedError."""
        ...

    def mark_listed(self, file_id: str, batch_id: str, listing_index: int) -> FileJob:
        """Mark another batch's job as named by entry `listing_index` of `batch_id`'s listing;
        ListedTwiceError if another entry of it did."""
        ...

    def revise(
        self, current: FileJob, listed: FileJob, *, revision: int, revised_as: str
    ) -> FileJob:
        """Give `current`, a completed job of an earlier batch, back as available in
        `listed.batch_id` at `revision`, from what the listing says now; RequeueRefusedError
        unless it is still that completed job."""
        ...

    def withdraw(self, file_id: str, batch_id: str, by_batch: str) -> FileJob:
        """Mark a completed job the vendor withdrew (WithdrawnBy); RequeueRefusedError."""
        ...

    def batch_file_ids(self, batch_id: str) -> dict[str, JobStatus | None]:
        """FileID -> status of every job of `batch_id` (None: unreadable)."""
        ...

    def counts_by_batch(self, batch_id: str, statuses: Iterable[JobStatus]) -> dict[JobStatus, int]:
        """How many jobs of `batch_id` are in each of `statuses` (index items only)."""
        ...

    def rows_by_batch(self, batch_id: str, status: JobStatus) -> Iterator[JobRow]:
        """What BatchIndex holds of `batch_id`'s jobs in `status` (index items only): what a
        manifest entry names of each."""
        ...


class BatchStore(BatchReads, Protocol):
    """The batches table as the batch flow uses it; refused transitions raise
    BatchTransitionRefusedError (with the stored batch)."""

    def create(self, batch: Batch) -> Batch:
        """Write a new batch; BatchExistsError if the BatchID is taken."""
        ...

    def mark_queued(
        self,
        batch_id: str,
        expected_files: Iterable[str],
        *,
        error_message: str | None = None,
        expected_count: int | None = None,
        queued_count: int | None = None,
    ) -> Batch:
        """initiated -> queued with the listing's FileIDs (and how many jobs were queued)."""
        ...

    def record_counts(
        self,
        batch_id: str,
        *,
        completed: int,
        failed: int,
        error: int,
        completed_files: Iterable[str] | None = None,
        failed_files: Iterable[str] | None = None,
    ) -> Batch:
        """Record one poll's counts (and, for a small day, the outcome sets)."""
        ...

    def finish(
        self,
        batch_id: str,
        status: BatchStatus,
        *,
        timeout_at: str | None = None,
        error_message: str | None = None,
        outcome: OutcomeSummary | None = None,
        counts_of: Batch | None = None,
    ) -> Batch:
        """Move the batch to a final status (with its outcome summary, and the counts
        `counts_of` recorded), if the status machine allows it."""
        ...

    def mark_adopted(self, batch_id: str, adopted_by: str) -> Batch:
        """Record that rerun `adopted_by` took over the batch's unfinished files."""
        ...

    def record_handoff(self, batch_id: str, status: str, detail_type: str, event: str) -> Batch:
        """Record the outcome event (`event`, its JSON) unless one of `detail_type` is recorded
        or the batch left `status`: BatchTransitionRefusedError carrying the stored batch."""
        ...

    def record_handoff_problem(self, batch_id: str, problem: str | None) -> Batch:
        """Record why the hand-off was withheld (None: clear it)."""
        ...

    def claim_day_late(self, batch_id: str, event_id: str) -> Batch:
        """Claim the batch's one Day Late; BatchTransitionRefusedError if another event has."""
        ...

    def release_day_late(self, batch_id: str, event_id: str) -> Batch:
        """Give back the claim `event_id` holds; BatchTransitionRefusedError if it holds none."""
        ...


class DownloadQueues(SweepQueue, Protocol):
    """The download queues as the flow uses them: it also asks which queue a file goes to."""

    def route(self, size_bytes: int | None) -> Route:
        """Which queue a file of `size_bytes` goes to."""
        ...


class FlowStores(Protocol):
    """The two tables and the clock, as a step of the flow reads them from it (BatchFlowService
    fits): a step module asks for these and what else it uses, not for the whole flow."""

    @property
    def jobs(self) -> JobStore: ...

    @property
    def batches(self) -> BatchStore: ...

    @property
    def clock(self) -> Clock: ...

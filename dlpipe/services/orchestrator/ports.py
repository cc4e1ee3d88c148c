"""What the durable shell needs from the batch flow, the small results it checkpoints, and the
stores the flow needs (ports: the adapters fit them structurally; tests pass in-memory fakes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TypeVar

from dlpipe.domain.errors import CorruptRecordError
from dlpipe.domain.model import TERMINAL_BATCH_STATUSES, Batch, BatchStatus, FileJob, JobStatus
from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.domain.routing import Route

_T = TypeVar("_T")

# Final batch statuses a completion check may report (the status table's ended rows).
FINAL_STATUSES: frozenset[str] = TERMINAL_BATCH_STATUSES


class FetchFailed(Exception):
    """The fetch failed for good (the provider refused us, or an outage outlasted its budget):
    the batch must end failed, with this message as its ErrorMessage.

    The durable shell never retries it; raise this class itself, or a subclass.
    """


class OutageBudgetSpent(FetchFailed):
    """The provider stayed unavailable for the whole outage budget: the batch must end failed."""


class ProviderOutage(Exception):
    """The provider is unavailable for now (connection errors, timeouts, 5xx, 429): transient.

    The durable shell retries the fetch step with a long, suspended backoff until the outage
    budget is used up. `elapsed_seconds` is how long the batch has waited so far, as measured
    by the flow's clock (it counts the time the attempts themselves took).
    """

    def __init__(self, cause: str, *, batch_id: str, elapsed_seconds: float = 0.0) -> None:
        super().__init__(cause)
        self.batch_id = batch_id
        self.elapsed_seconds = elapsed_seconds


class DependencyBudgetSpent(RuntimeError):
    """SQS or DynamoDB stayed unavailable for the whole dependency budget: the step fails for
    good and the batch ends failed with this message (it names the dependency and the time)."""


class StepFailed(RuntimeError):
    """A step failed for good (its retries used up); the message names the step and the cause."""


class FlowContractError(RuntimeError):
    """The flow broke its contract, e.g. reported no final status on the last poll."""


@dataclass(frozen=True)
class QueueResult:
    """Outcome of fetch-and-queue up to a chunk: files expected so far, messages sent, jobs
    already there (all cumulative), the listing offset reached, whether it was the last, and
    the entries refused so far (their count, and the first few lines the batch will show)."""

    expected: int
    sent: int
    already_present: int
    offset: int = 0  # listing entries read up to the end of this chunk
    done: bool = True  # the listing ended in this chunk: the batch is queued
    refused: int = 0
    refusals_shown: tuple[str, ...] = ()  # at most fanout.SHOWN_REFUSALS lines, each cut short
    # When this chunk ended (the flow's clock): the next chunk's provider outage is timed from
    # here, not from the batch's start, so a long fan-out does not eat the outage budget.
    ended_at_ms: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, as checkpointed (a few numbers and at most ~1 KB of refusal lines,
        whatever the day's size)."""
        data = asdict(self)
        data["refusals_shown"] = list(self.refusals_shown)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueueResult:
        """Rebuild from `to_dict` output (a checkpoint; one written before chunking is done)."""
        return cls(
            int(data["expected"]),
            int(data["sent"]),
            int(data["already_present"]),
            offset=int(data.get("offset", 0)),
            done=bool(data.get("done", True)),
            refused=int(data.get("refused", 0)),
            refusals_shown=tuple(str(line) for line in data.get("refusals_shown", ())),
            ended_at_ms=int(data.get("ended_at_ms", 0)),
        )


@dataclass(frozen=True)
class CompletionCheck:
    """One completion poll: `status` is None while files are pending, else the final batch status."""

    status: str | None
    completed: int
    failed: int  # jobs `failed` (transient, retries used up): the jobs table's word
    pending: int
    error: int = 0  # jobs `error` (permanent)
    # The final batch's outcome summary (dlpipe/domain/outcome.py, at most 4 KB), once final.
    outcome: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in FINAL_STATUSES:
            raise FlowContractError(f"check_completion returned unknown status {self.status!r}")

    @property
    def is_final(self) -> bool:
        """True once the batch has reached completed, failed or timeout."""
        return self.status is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, as checkpointed."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompletionCheck:
        """Rebuild from `to_dict` output (a checkpoint)."""
        status = data["status"]
        return cls(
            status=None if status is None else str(status),
            completed=int(data["completed"]),
            failed=int(data["failed"]),
            pending=int(data["pending"]),
            error=int(data.get("error", 0)),
            outcome=data.get("outcome"),
        )


@dataclass(frozen=True)
class BatchRunResult:
    """What one orchestrator run returns: counts and IDs only, small enough for any response."""

    batch_id: str
    date: str
    status: str
    completed: int
    failed: int
    pending: int
    polls: int
    rerun: bool = False
    error: int = 0
    # Why it ended so: {"cause": ..., "codes": [{"code", "count", "files"}]} (bounded).
    outcome: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, the handler's return value."""
        return asdict(self)


class BatchFlow(Protocol):
    """The batch logic in plain Python. Each method is one durable step, so it must be
    safe to run again after a crash (at-least-once); clock reads and UUIDs happen in here."""

    def create_batch(self, polling_date: str, rerun: bool = False) -> str:
        """Create the day's batch (status initiated), or attach to the date's live one; its BatchID."""
        ...

    def fetch_and_queue(
        self, batch_id: str, polling_date: str, resume: QueueResult | None = None
    ) -> QueueResult:
        """Write and queue the next chunk of the provider's listing, after `resume` (the
        previous chunk's result; None: the first chunk). `done` in the result ends the loop.

        Raise ProviderOutage while the provider is unavailable, FetchFailed if it refused.
        """
        ...

    def check_completion(
        self, batch_id: str, poll_number: int, is_last_poll: bool
    ) -> CompletionCheck:
        """Count the batch's files; finalise the batch when done, or as timeout on the last poll."""
        ...

    def fail_batch(self, batch_id: str, reason: str) -> None:
        """End the batch as failed with `reason` as its ErrorMessage."""
        ...


class StepRunner(Protocol):
    """Runs named steps and waits: durably under the SDK, or inline for tests and tools."""

    def step(self, name: str, func: Callable[[], _T]) -> _T:
        """Run `func` once as the step `name` and return its (JSON-serialisable) result."""
        ...

    def wait(self, name: str, seconds: int) -> None:
        """Pause for `seconds` (whole seconds) before the next step."""
        ...


# ---- the flow's stores (dlpipe.adapters.jobs_table / batches_table / queue fit them) --------

UnreadableHandler = Callable[[CorruptRecordError], None]


class ReadCost(Protocol):
    """Read capacity the index reads consumed so far (what a poll logs)."""

    @property
    def read_capacity_units(self) -> float:
        """RCU consumed since the store was built."""
        ...


class JobStore(Protocol):
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

    def requeue(self, file_id: str, *, force: bool = False) -> FileJob:
        """Back to available unless completed or held under a live lease; RequeueRefusedError."""
        ...

    def complete_abandoned(
        self, file_id: str, owner: str, *, byte_count: int, sha256: str, destination_key: str
    ) -> FileJob:
        """Complete `owner`'s expired claim whose file is published; LeaseLostError."""
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

    def count_by_batch(self, batch_id: str, status: JobStatus) -> int:
        """How many jobs of `batch_id` are in `status`."""
        ...

    def batch_file_ids(self, batch_id: str) -> dict[str, JobStatus | None]:
        """FileID -> status of every job of `batch_id` (None: unreadable)."""
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


class BatchStore(Protocol):
    """The batches table as the batch flow uses it; refused transitions raise
    BatchTransitionRefusedError (with the stored batch)."""

    def create(self, batch: Batch) -> Batch:
        """Write a new batch; BatchExistsError if the BatchID is taken."""
        ...

    def require(self, batch_id: str) -> Batch:
        """The batch, or NotFoundError."""
        ...

    def query_by_date(self, polling_date: str, status: BatchStatus | None = None) -> list[Batch]:
        """The batches of a polling date, oldest first."""
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
    ) -> Batch:
        """Move the batch to a final status (with its outcome summary), if the status machine
        allows it."""
        ...

    def mark_adopted(self, batch_id: str, adopted_by: str) -> Batch:
        """Record that rerun `adopted_by` took over the batch's unfinished files."""
        ...


class JobSender(Protocol):
    """The download queues: each job sent to the queue its size routes it to."""

    def route(self, size_bytes: int | None) -> Route:
        """Which queue a file of `size_bytes` goes to."""
        ...

    def send_jobs(self, jobs: Sequence[FileJob]) -> int:
        """Send one message per job; QueueSendError (naming the unsent) if some failed."""
        ...

    def depth(self) -> int:
        """Messages visible in the queues now (a backlog estimate)."""
        ...

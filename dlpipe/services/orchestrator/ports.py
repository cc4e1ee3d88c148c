"""What the durable shell needs from the batch flow, and the small results it checkpoints (the
stores the flow needs are its ports in store_ports.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TypeVar

from dlpipe.domain.statuses import TERMINAL_BATCH_STATUSES

_T = TypeVar("_T")


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
    """SSM, SQS or DynamoDB stayed unavailable for the whole dependency budget: the step fails
    for good and the batch ends failed with this message (it names the dependency and the
    time); in the feed lookup, before any batch exists, the execution fails with it."""


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
    # The batch had ended before this run (an attach to a completed day): nothing was queued
    # or written, and the run hands off what it handed off before.
    unchanged: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, as checkpointed (a few numbers and at most ~1 KB of refusal lines,
        whatever the day's size)."""
        data = asdict(self)
        data["refusals_shown"] = list(self.refusals_shown)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueueResult:
        """Rebuild from `to_dict` output (a checkpoint); a field it lacks takes its default,
        so a checkpoint without `offset` and `done` is a listing read whole in one step."""
        return cls(
            int(data["expected"]),
            int(data["sent"]),
            int(data["already_present"]),
            offset=int(data.get("offset", 0)),
            done=bool(data.get("done", True)),
            refused=int(data.get("refused", 0)),
            refusals_shown=tuple(str(line) for line in data.get("refusals_shown", ())),
            ended_at_ms=int(data.get("ended_at_ms", 0)),
            unchanged=bool(data.get("unchanged", False)),
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
        # A completion check reports an ended batch status, or none yet.
        if self.status is not None and self.status not in TERMINAL_BATCH_STATUSES:
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
    # The write-manifest step's ManifestRef.to_dict() (dlpipe/domain/manifest.py), or None.
    manifest: dict[str, Any] | None = None
    # Why the hand-off was withheld ("manifest_tampered: ..."; announce.py), or None.
    handoff_problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, the handler's return value (`handoff_problem` only when there is
        one: a run whose hand-off went out returns what it always did)."""
        result = asdict(self)
        if result["handoff_problem"] is None:
            del result["handoff_problem"]
        return result


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

    def recheck_day(
        self, polling_date: str, start: Callable[[str], str] | None = None
    ) -> dict[str, Any]:
        """Compare an earlier, delivered day's listing with what it published; if the vendor
        restated it, `start` its run (recheck.py). Writes nothing to the tables."""
        ...

    def check_completion(
        self, batch_id: str, poll_number: int, is_last_poll: bool
    ) -> CompletionCheck:
        """Count the batch's files; finalise the batch when done, or as timeout on the last poll."""
        ...

    def fail_batch(self, batch_id: str, reason: str) -> None:
        """End the batch as failed with `reason` as its ErrorMessage."""
        ...

    def write_manifest(self, batch_id: str) -> dict[str, Any] | None:
        """Write the ended batch's manifest (ManifestRef.to_dict()), or None if none is
        written; a replay verifies the stored one and writes nothing new."""
        ...

    def record_handoff_problem(self, batch_id: str, problem: str) -> None:
        """Record on the batch why its hand-off was withheld."""
        ...

    def publish_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """Put the batch's hand-off event on the bus (the one recorded first, else this one,
        HandoffEvent.to_dict()); what went out, with `problem` when it was withheld."""
        ...

    def publish_if_late(self, event: dict[str, Any], deadline_at_ms: int) -> bool:
        """Put the `Day Late` event on the bus if the flow's clock is past the deadline."""
        ...


class StepRunner(Protocol):
    """Runs named steps and waits: durably under the SDK, or inline for tests and tools."""

    def step(self, name: str, func: Callable[[], _T]) -> _T:
        """Run `func` once as the step `name` and return its (JSON-serialisable) result."""
        ...

    def wait(self, name: str, seconds: int) -> None:
        """Pause for `seconds` (whole seconds) before the next step."""
        ...

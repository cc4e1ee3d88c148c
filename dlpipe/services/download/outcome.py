"""How processing one message ended, what the entry points do with the message for each
outcome, and which status and outcome a download fault ends a job with."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from dlpipe.domain.download_errors import PermanentError, TransientError
from dlpipe.domain.model import JobStatus


class Outcome(StrEnum):
    """How processing one message ended."""

    COMPLETED = "completed"
    ALREADY_DONE = "already_done"  # terminal before we came: a stale or duplicate message
    # Another worker holds a live lease: hide the message until it runs out. Also a wrong_key
    # met before the key's next re-read: the job `available` again, back at that re-read.
    BUSY = "busy"
    FAILED = "failed"  # transient faults outlasted the retries: job `failed`
    ERROR = "error"  # permanent fault: job `error`
    RELEASED = "released"  # shutdown: the job is `available` again, the message must return
    LEASE_LOST = "lease_lost"  # another worker took the claim over; its result stands
    NOT_FOUND = "not_found"  # no such job (or past its TTL)
    NO_TIME = "no_time"  # not claimed: fits a fresh invocation, not what is left of this one
    FEED_UNKNOWN = "feed_unknown"  # not claimed: the message returns after retry_after_s
    SLOW = (
        "slow"  # below the stall floor: `available` again, the message returns after retry_after_s
    )
    # DynamoDB (or another of our AWS dependencies) unavailable past the client's retries:
    # nothing decided, no claim kept; the message returns after retry_after_s (short, growing)
    UNAVAILABLE = "unavailable"


_ACKNOWLEDGED = frozenset(
    {Outcome.COMPLETED, Outcome.ALREADY_DONE, Outcome.FAILED, Outcome.ERROR}
    | {Outcome.LEASE_LOST, Outcome.NOT_FOUND}
)


@dataclass(frozen=True)
class ProcessResult:
    """An outcome, and for BUSY, FEED_UNKNOWN, SLOW and UNAVAILABLE how long the message
    should stay hidden (UNAVAILABLE: `dependency` names what could not be reached)."""

    outcome: Outcome
    retry_after_s: int | None = None
    size_bytes: int | None = None  # the job's size, for routing a delayed copy of its message
    dependency: str | None = None

    @property
    def acknowledge(self) -> bool:
        """True when the message is done with and should be deleted."""
        return self.outcome in _ACKNOWLEDGED


def fault_status(exc: PermanentError | TransientError) -> JobStatus:
    """The status a fault ends its job with: `error` for a permanent one, `failed` for a
    transient one that outlasted the retries."""
    return JobStatus.ERROR if isinstance(exc, PermanentError) else JobStatus.FAILED


def ended_outcome(status: JobStatus) -> Outcome:
    """The outcome of a job ended unsuccessfully with `status` (`failed` or `error`)."""
    return Outcome.FAILED if status is JobStatus.FAILED else Outcome.ERROR

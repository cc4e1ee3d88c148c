"""How long a day waits out an outage at fetch time: the backoff schedules, pure Python.

An unavailable provider is tried again after 30 s doubling to at most 10 min, jittered, until
the next delay would pass its budget; SSM, SQS or DynamoDB unavailable to the poller get
DEPENDENCY_BACKOFF (15 s doubling to 2 min within 15 min). The jitter is drawn from a seed and
the attempt number, so attempt n knows the backoff already spent without a clock or memory:
docs/ARCHITECTURE.md, "Why outages are waited out on a seeded schedule".
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DEFAULT_OUTAGE_BUDGET_SECONDS = 7200
DEFAULT_DEPENDENCY_BUDGET_SECONDS = 900
# rate ** exponent stays a finite float: past this many doublings every delay is at its cap.
_MAX_EXPONENT = 64


@dataclass(frozen=True)
class OutageBackoff:
    """Delays between fetch attempts while the provider is unavailable, within a total budget."""

    budget_seconds: int = DEFAULT_OUTAGE_BUDGET_SECONDS
    initial_delay_seconds: int = 30
    max_delay_seconds: int = 600
    backoff_rate: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.budget_seconds < 0:
            raise ValueError(f"the outage budget must not be negative, got {self}")
        if not 1 <= self.initial_delay_seconds <= self.max_delay_seconds:
            raise ValueError(f"delays must satisfy 1 <= initial <= max, got {self}")
        if not 1 <= self.backoff_rate <= 10 or not 0 <= self.jitter < 1:
            raise ValueError(f"need 1 <= backoff_rate <= 10 and 0 <= jitter < 1, got {self}")

    def delay_seconds(self, attempt: int, seed: str) -> int:
        """The delay after failed attempt `attempt` (1-based); whole seconds, at least 1."""
        exponent = min(attempt - 1, _MAX_EXPONENT)
        base = min(self.initial_delay_seconds * self.backoff_rate**exponent, self.max_delay_seconds)
        # Not for security: spreads the retries of many executions (a backfill) apart.
        draw = random.Random(f"{seed}:{attempt}").random()  # noqa: S311
        return max(1, round(base * (1 - self.jitter * draw)))

    def backoff_before(self, attempt: int, seed: str) -> int:
        """Seconds of backoff spent before attempt `attempt`: the earlier delays summed."""
        return sum(self.delay_seconds(n, seed) for n in range(1, attempt))

    def spent_seconds(self, attempt: int, seed: str, elapsed_seconds: float) -> float:
        """The outage so far: the backoff before `attempt`, or the measured time if longer."""
        return max(float(self.backoff_before(attempt, seed)), elapsed_seconds)

    def next_delay(self, attempt: int, seed: str, elapsed_seconds: float = 0.0) -> int | None:
        """The delay before trying again after failed attempt `attempt`, or None when the
        budget is used up. `elapsed_seconds`: the outage as measured (counts slow attempts)."""
        delay = self.delay_seconds(attempt, seed)
        if self.spent_seconds(attempt, seed, elapsed_seconds) + delay > self.budget_seconds:
            return None
        return delay

    def delays_while_down(self, seed: str) -> list[int]:
        """Every delay taken when the provider never comes back (attempts = len + 1)."""
        delays: list[int] = []
        while (delay := self.next_delay(len(delays) + 1, seed)) is not None:
            delays.append(delay)
        return delays


def dependency_backoff(budget_seconds: int = DEFAULT_DEPENDENCY_BUDGET_SECONDS) -> OutageBackoff:
    """The schedule for our own AWS dependencies: an SQS or DynamoDB outage is usually minutes,
    so the first retries come sooner (15 s doubling to 2 min) than the provider's."""
    return OutageBackoff(
        budget_seconds=budget_seconds, initial_delay_seconds=15, max_delay_seconds=120
    )


DEPENDENCY_BACKOFF = dependency_backoff()


# A downloader that cannot reach its own DynamoDB or SQS: the message returns, and the worker
# tries again, after 1 s doubling to at most WORKER_RETRY_MAX_S; never a lease + margin.
WORKER_RETRY_MAX_S = 30


def worker_retry_s(failures: int) -> int:
    """Seconds before trying again after `failures` (1-based) consecutive calls found a
    dependency unavailable: 1, 2, 4, 8, 16, then WORKER_RETRY_MAX_S."""
    exponent = min(max(failures, 1) - 1, 5)
    return int(min(2**exponent, WORKER_RETRY_MAX_S))


def dependency_exhausted_message(
    dependency: str, cause: str, attempts: int, spent_seconds: float
) -> str:
    """The batch's ErrorMessage when SQS or DynamoDB stayed unavailable past the budget."""
    plural = "" if attempts == 1 else "s"
    return (
        f"dependency_unavailable: {dependency} unavailable ({cause}) after {attempts} "
        f"attempt{plural} over {_duration(spent_seconds)}"
    )


def exhausted_message(cause: str, attempts: int, spent_seconds: float) -> str:
    """The batch's ErrorMessage when the outage outlasted the budget."""
    plural = "" if attempts == 1 else "s"
    return (
        f"provider_unavailable: {cause} after {attempts} attempt{plural} "
        f"over {_duration(spent_seconds)}"
    )


def _duration(seconds: float) -> str:
    return f"{round(seconds)} s" if seconds < 120 else f"{round(seconds / 60)} min"

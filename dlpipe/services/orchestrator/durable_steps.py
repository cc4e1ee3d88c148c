"""The StepRunner on the durable SDK: each step's retry policy, and what a step that failed for
good becomes (dlpipe/services/orchestrator/durable.py says what the SDK does and why)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from aws_durable_execution_sdk_python import DurableContext, StepError
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import (
    RetryDecision,
    RetryStrategyConfig,
    create_retry_strategy,
)

from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.domain.manifest import ManifestConflictError
from dlpipe.domain.outage import OutageBackoff, dependency_exhausted_message, exhausted_message
from dlpipe.domain.redaction import redact_exception
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.ports import (
    DependencyBudgetSpent,
    FetchFailed,
    FlowContractError,
    OutageBudgetSpent,
    ProviderOutage,
    StepFailed,
)
from dlpipe.services.orchestrator.step_names import is_fetch_step

if TYPE_CHECKING:
    from aws_durable_execution_sdk_python.types import StepContext

log = get_logger(component="orchestrator")

_T = TypeVar("_T")

# The flow retries I/O blips itself (tenacity, seconds). A durable retry is for what outlasts
# that: it suspends the execution between attempts, so a minutes-long backoff costs nothing.
_TRANSIENT_RETRY = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=3,
        initial_delay=Duration.from_seconds(30),
        max_delay=Duration.from_minutes(2),
        backoff_rate=2,
    )
)
# Retrying these cannot help: the provider said no for good, an outage outlasted its budget,
# the flow broke its contract, or the batch's manifest exists with other bytes.
_PERMANENT_ERRORS = (FetchFailed, DependencyBudgetSpent, FlowContractError, ManifestConflictError)


def step_retry_strategy(error: Exception, attempts_made: int) -> RetryDecision:
    """Retry a failed step a few times with backoff, except for permanent errors."""
    if isinstance(error, _PERMANENT_ERRORS):
        return RetryDecision.no_retry()
    return _TRANSIENT_RETRY(error, attempts_made)


class Backoffs(NamedTuple):
    """How long and how often to retry through a provider outage, and through an SQS /
    DynamoDB one."""

    provider: OutageBackoff
    dependency: OutageBackoff


# A hand-rolled loop of wait + step "check-completion-{n}" rather than wait_for_condition:
# wait_for_condition runs its first check at once (no wait first), fails terminally when the
# check raises (no retry strategy, so one DynamoDB outage would end the day's run), and
# raises instead of returning when its attempts run out. The loop costs two small operations
# per poll (about 100 bytes each, far below the 256 KB checkpoint limit), names each poll in the
# execution history, and replays deterministically: names depend only on the poll number, and
# max_polls is fixed per function version.
class DurableSteps:
    """StepRunner on a DurableContext: retries the fetch through provider outages and any step
    through SQS / DynamoDB outages, and turns a step that failed for good into FetchFailed
    (fetch) or StepFailed (any other step)."""

    def __init__(self, context: DurableContext, backoffs: Backoffs) -> None:
        self._context = context
        self._outage = backoffs.provider
        self._dependency = backoffs.dependency
        # Stable across replays and unique per execution: the jitter's seed.
        self._seed = context.execution_context.durable_execution_arn
        self._config = StepConfig(retry_strategy=self._retry_strategy)

    def step(self, name: str, func: Callable[[], _T]) -> _T:
        is_fetch = is_fetch_step(name)

        def body(step_context: StepContext) -> _T:
            try:
                return self._attempt(name, func, step_context.attempt)
            except Exception as exc:
                # The SDK logs and checkpoints what the step raised, its message and traceback.
                redact_exception(exc)
                raise

        try:
            return self._context.step(body, name=name, config=self._config)
        except StepError as exc:
            if exc.error_type in _wire_names(DependencyBudgetSpent):
                reason = exc.message or f"{name}: dependency unavailable"
                raise (FetchFailed if is_fetch else StepFailed)(reason) from exc
            if exc.error_type in _wire_names(FetchFailed):
                raise FetchFailed(exc.message or f"{name} failed") from exc
            if is_fetch:
                # Any other cause that outlasted the step's retries (SQS refusing every send,
                # DynamoDB down) also ends the day: fail-batch records why on the batch item,
                # instead of leaving it `initiated` with no word of what happened.
                raise FetchFailed(f"{name} failed: {exc.error_type}: {exc.message}") from exc
            raise StepFailed(f"{name} failed: {exc.error_type}: {exc.message}") from exc

    def wait(self, name: str, seconds: int) -> None:
        self._context.wait(Duration.from_seconds(seconds), name=name)

    def _attempt(self, name: str, func: Callable[[], _T], attempt: int) -> _T:
        """Run one attempt. An outage (the provider's, in a fetch step; SQS's or DynamoDB's,
        in any step) escapes for the retry strategy's suspended delay while the next delay
        fits in its budget; past it, the attempt raises the budget's permanent error."""
        started_s = time.monotonic()
        try:
            return func()
        except (ProviderOutage, DependencyUnavailableError) as outage:
            # The outage so far: the provider's as the flow measured it; SQS / DynamoDB's, the
            # suspended delays before this attempt and this attempt.
            if isinstance(outage, ProviderOutage):
                if not is_fetch_step(name):
                    raise  # a provider outage outside the fetch: the ordinary retries
                backoff, elapsed_s = self._outage, outage.elapsed_seconds
            else:
                backoff = self._dependency
                waited_s = backoff.backoff_before(attempt, self._seed)
                elapsed_s = waited_s + time.monotonic() - started_s
            spent_s = backoff.spent_seconds(attempt, self._seed, elapsed_s)
            delay_s = backoff.next_delay(attempt, self._seed, elapsed_s)
            if delay_s is None:
                raise _budget_spent(outage, attempt, spent_s) from outage
            event, names = _outage_event(outage, name)
            log.warning(
                event,
                **names,
                attempt=attempt,
                outage_s=round(spent_s),
                retry_in_s=delay_s,
                budget_s=backoff.budget_seconds,
                cause=str(outage),
            )
            raise

    def _retry_strategy(self, error: Exception, attempts_made: int) -> RetryDecision:
        # _attempt and _fetch_attempt let an outage escape only while the next delay fits.
        if isinstance(error, ProviderOutage):
            backoff = self._outage
        elif isinstance(error, DependencyUnavailableError):
            backoff = self._dependency
        else:
            return step_retry_strategy(error, attempts_made)
        return RetryDecision.retry(
            Duration.from_seconds(backoff.delay_seconds(attempts_made, self._seed))
        )


def _budget_spent(
    outage: ProviderOutage | DependencyUnavailableError, attempts: int, spent_s: float
) -> Exception:
    """The permanent error of an outage that outlasted its budget, saying so in one line."""
    if isinstance(outage, ProviderOutage):
        return OutageBudgetSpent(exhausted_message(str(outage), attempts, spent_s))
    message = dependency_exhausted_message(outage.dependency, str(outage), attempts, spent_s)
    return DependencyBudgetSpent(message)


def _outage_event(
    outage: ProviderOutage | DependencyUnavailableError, step: str
) -> tuple[str, dict[str, object]]:
    """The warning of one retried attempt: its event and what names the outage."""
    if isinstance(outage, ProviderOutage):
        return "batch.provider_unavailable", {"batch_id": outage.batch_id}
    return "batch.dependency_unavailable", {"step": step, "dependency": outage.dependency}


def _wire_names(error_class: type[Exception]) -> set[str]:
    """The checkpoint's error_type for `error_class` and every subclass of it."""
    names = {f"{error_class.__module__}.{error_class.__qualname__}"}
    for subclass in error_class.__subclasses__():
        names |= _wire_names(subclass)
    return names

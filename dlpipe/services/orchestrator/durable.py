"""Durable shell: the batch sequence (inline.run_batch) on the SDK's durable steps and waits.

Behaviour measured with aws-durable-execution-sdk-python 3.0.0 and its local runner
(DurableFunctionTestRunner, testing package 1.4.0); tests/unit/test_orchestrator_durable.py
pins the parts we rely on:
- Every resume re-runs the handler from the top; a step with a stored result returns it
  without running its function. Waits and step-retry delays suspend the execution (no compute)
  and, with skip_time=True, pass in virtual time.
- A step that raises is retried by its StepConfig.retry_strategy: a RETRY checkpoint, a
  suspension, then a fresh invocation that replays and runs the step again (attempt 2, ...).
  When the strategy declines, the step fails for good and the handler sees StepError whose
  error_type is the escaped exception's "module.QualName"; the original object is not kept.
- A plain exception raised in the handler body (outside any step) fails the execution at
  once, without retry. Only InvocationError subclasses escape the handler so that Lambda
  re-invokes it; the local runner then replays after 5 real seconds
  (Executor.RETRY_BACKOFF_SECONDS) and fails the execution after 5 consecutive failures.
  Such a crash inside a step leaves no result checkpoint, so the step runs again on replay
  (steps are at-least-once: every flow method must be idempotent).
- The local runner arms the execution timeout in real seconds, never in virtual time.
- A step's retry strategy is called with the live exception object and the number of the
  attempt that failed (SDK operation/step.py, retry_handler); the step function gets that
  attempt number as StepContext.attempt (1-based), restored from the checkpoint.

Fan-out. fetch-and-queue runs as one step per chunk of the listing (`fetch-and-queue-files`,
`fetch-and-queue-files-2`, ...; dlpipe/services/orchestrator/fanout.py says why and how big): each checkpoints
a few counts and its listing offset, so a replay re-runs only the first unfinished chunk, and
every chunk step has the fetch's outage retry strategy below (the stream may break anywhere).

Provider outages. fetch-and-queue-files raises ProviderOutage while the provider is down,
slow or throttling (after the provider client's own short retries, seconds); the step's
retry strategy then schedules the next attempt after an OutageBackoff delay (30 s doubling
to 10 min, jittered): a RETRY checkpoint and a suspension, so the hours of an outage cost
no compute. Each retried attempt logs `batch.provider_unavailable` (batch, attempt, delay,
cause). Once the next delay would pass the budget (DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS,
2 h by default), the attempt raises OutageBudgetSpent instead, and the batch ends failed with
`provider_unavailable: <cause> after N attempts over M min` (BatchFailed metric). A refusal
(401/403/404, a malformed listing) is FetchFailed: no retry, the batch fails at once. The
replay of a retried fetch never runs create-batch again (its result is checkpointed), and
fetch-and-queue is idempotent (conditional puts, re-sends this batch's available jobs).

Our own AWS dependencies. A step (the fan-out's chunks and the completion checks above all)
that finds SQS or DynamoDB unavailable (DependencyUnavailableError: throttling, 5xx, timeouts,
connection errors, classified at the adapter edge after the clients' own retries) is retried
the same way on its own, shorter schedule (domain/outage.py DEPENDENCY_BACKOFF: 15 s doubling
to 2 min, jittered, within DLPIPE_AWS_OUTAGE_BUDGET_SECONDS, 15 min by default). Each retry
logs `batch.dependency_unavailable` at warning level; once the budget is spent the step raises
DependencyBudgetSpent and the batch ends failed with `dependency_unavailable: SQS unavailable
(<cause>) after N attempts over M min` (`check_failed: ...` before it for a check).

Failed checks. A check-completion step (its sweeper included) whose retries are used up ends
the batch failed with `check_failed: <step> failed: <error type>: <message>`, the BatchFailed
metric, and a normal result, instead of failing the execution with the batch left queued.

The execution timeout must hold the polling, both outage budgets and the setup margin:
assert_polling_fits checks it, as the precondition in terraform/lambda_orchestrator.tf does.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from aws_durable_execution_sdk_python import DurableContext, StepError, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import (
    RetryDecision,
    RetryStrategyConfig,
    create_retry_strategy,
)

from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.domain.events import parse_event
from dlpipe.domain.outage import (
    DEPENDENCY_BACKOFF,
    OutageBackoff,
    dependency_exhausted_message,
    exhausted_message,
)
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.inline import PollingPlan, is_fetch_step, run_batch
from dlpipe.services.orchestrator.ports import (
    BatchFlow,
    DependencyBudgetSpent,
    FetchFailed,
    FlowContractError,
    OutageBudgetSpent,
    ProviderOutage,
    StepFailed,
)
from dlpipe.services.orchestrator.sdk_logs import quiet_sdk_retry_logs

if TYPE_CHECKING:
    from aws_durable_execution_sdk_python.types import LambdaContext, StepContext

log = get_logger(component="orchestrator")

_T = TypeVar("_T")

# Time for everything but the waits: create and fetch (a big listing, chunks of puts), each
# check's own run time, and step-retry backoffs. Without it the last check, the one that
# marks the batch timeout, could be cut off by the execution timeout. Same default as
# terraform's durable_setup_margin_seconds.
DEFAULT_MARGIN_SECONDS = 1800

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
# or the flow broke its contract.
_PERMANENT_ERRORS = (FetchFailed, DependencyBudgetSpent, FlowContractError)


def step_retry_strategy(error: Exception, attempts_made: int) -> RetryDecision:
    """Retry a failed step a few times with backoff, except for permanent errors."""
    if isinstance(error, _PERMANENT_ERRORS):
        return RetryDecision.no_retry()
    return _TRANSIENT_RETRY(error, attempts_made)


class PollingBudgetError(ValueError):
    """The polling plan does not fit in the durable execution's timeout."""


def assert_polling_fits(
    poll_interval_seconds: int,
    max_polls: int,
    execution_timeout_seconds: int,
    *,
    margin_seconds: int = DEFAULT_MARGIN_SECONDS,
    outage_budget_seconds: int = 0,
    dependency_budget_seconds: int = 0,
) -> None:
    """Raise PollingBudgetError unless polls x interval + outage budgets + margin fits in the
    execution timeout (a day may wait out a whole provider outage and one of SQS or DynamoDB,
    then poll to its last check)."""
    needed_seconds = (
        poll_interval_seconds * max_polls
        + outage_budget_seconds
        + dependency_budget_seconds
        + margin_seconds
    )
    if needed_seconds > execution_timeout_seconds:
        aws = f" + {dependency_budget_seconds}s AWS outage budget" * bool(dependency_budget_seconds)
        raise PollingBudgetError(
            f"{max_polls} polls x {poll_interval_seconds}s + {outage_budget_seconds}s outage "
            f"budget{aws} + {margin_seconds}s margin = {needed_seconds}s exceeds the execution "
            f"timeout of {execution_timeout_seconds}s: raise the timeout or lower "
            "DLPIPE_MAX_POLLS / DLPIPE_POLL_INTERVAL_SECONDS / DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS"
            " / DLPIPE_AWS_OUTAGE_BUDGET_SECONDS"
        )


def build_durable_handler(
    flow_factory: Callable[[], BatchFlow],
    poll_interval_seconds: int,
    max_polls: int,
    *,
    date_offset_days: int = 1,
    outage: OutageBackoff | None = None,
    dependency_outage: OutageBackoff = DEPENDENCY_BACKOFF,
) -> Callable[[Any, LambdaContext], Any]:
    """Return the Lambda handler that runs one day's batch as a durable execution.

    `flow_factory` is called at most once per invocation, inside the first step that runs.
    `outage`: how long and how often to retry the fetch while the provider is unavailable;
    `dependency_outage`: any step while SQS or DynamoDB is.
    """
    plan = PollingPlan(poll_interval_seconds, max_polls)
    backoffs = _Backoffs(outage or OutageBackoff(), dependency_outage)
    quiet_sdk_retry_logs()

    @durable_execution
    def orchestrate(event: Any, context: DurableContext) -> dict[str, Any]:
        # An invalid event raises InvalidEventError here, in the body: the SDK fails the
        # execution with that error and does not retry it.
        request = parse_event(event, date_offset_days)
        # Built lazily inside a step, so a failure to build it (a secret read, say) is a step
        # failure that gets retried, and pure replays build nothing.
        flow = functools.cache(flow_factory)
        return run_batch(_DurableSteps(context, backoffs), flow, request, plan).to_dict()

    return orchestrate


# A hand-rolled loop of wait + step "check-completion-{n}" rather than wait_for_condition:
# wait_for_condition runs its first check at once (no wait first), fails terminally when the
# check raises (no retry strategy, so one DynamoDB outage would end the day's run), and
# raises instead of returning when its attempts run out. The loop costs two small operations
# per poll (about 100 bytes each, far below the 256 KB checkpoint limit), names each poll in the
# execution history, and replays deterministically: names depend only on the poll number, and
# max_polls is fixed per function version.
class _Backoffs(NamedTuple):
    provider: OutageBackoff
    dependency: OutageBackoff


class _DurableSteps:
    """StepRunner on a DurableContext: retries the fetch through provider outages and any step
    through SQS / DynamoDB outages, and turns a step that failed for good into FetchFailed
    (fetch) or StepFailed (any other step)."""

    def __init__(self, context: DurableContext, backoffs: _Backoffs) -> None:
        self._context = context
        self._outage = backoffs.provider
        self._dependency = backoffs.dependency
        # Stable across replays and unique per execution: the jitter's seed.
        self._seed = context.execution_context.durable_execution_arn
        self._config = StepConfig(retry_strategy=self._retry_strategy)

    def step(self, name: str, func: Callable[[], _T]) -> _T:
        is_fetch = is_fetch_step(name)

        def body(step_context: StepContext) -> _T:
            return self._attempt(name, func, step_context.attempt)

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
        """Run one attempt; past its budget, an SQS / DynamoDB outage becomes permanent."""
        started_s = time.monotonic()
        try:
            return self._fetch_attempt(func, attempt) if is_fetch_step(name) else func()
        except DependencyUnavailableError as outage:
            # The outage so far: the suspended delays before this attempt, and this attempt.
            waited_s = self._dependency.backoff_before(attempt, self._seed)
            spent_s = waited_s + time.monotonic() - started_s
            delay_s = self._dependency.next_delay(attempt, self._seed, spent_s)
            if delay_s is None:
                message = dependency_exhausted_message(
                    outage.dependency, str(outage), attempt, spent_s
                )
                raise DependencyBudgetSpent(message) from outage
            log.warning(
                "batch.dependency_unavailable",
                step=name,
                dependency=outage.dependency,
                attempt=attempt,
                outage_s=round(spent_s),
                retry_in_s=delay_s,
                budget_s=self._dependency.budget_seconds,
                cause=str(outage),
            )
            raise

    def _fetch_attempt(self, func: Callable[[], _T], attempt: int) -> _T:
        """Run one fetch attempt; past the outage budget, a ProviderOutage becomes permanent."""
        try:
            return func()
        except ProviderOutage as outage:
            spent_s = self._outage.spent_seconds(attempt, self._seed, outage.elapsed_seconds)
            delay_s = self._outage.next_delay(attempt, self._seed, outage.elapsed_seconds)
            if delay_s is None:
                message = exhausted_message(str(outage), attempt, spent_s)
                raise OutageBudgetSpent(message) from outage
            log.warning(
                "batch.provider_unavailable",
                batch_id=outage.batch_id,
                attempt=attempt,
                outage_s=round(spent_s),
                retry_in_s=delay_s,
                budget_s=self._outage.budget_seconds,
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


def _wire_names(error_class: type[Exception]) -> set[str]:
    """The checkpoint's error_type for `error_class` and every subclass of it."""
    names = {f"{error_class.__module__}.{error_class.__qualname__}"}
    for subclass in error_class.__subclasses__():
        names |= _wire_names(subclass)
    return names

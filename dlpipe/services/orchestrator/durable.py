"""Durable shell: the batch sequence (sequence.run_batch) on the SDK's durable steps and waits.

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

Our own AWS dependencies. A step (the feed lookup, the fan-out's chunks and the completion
checks above all) that finds SSM, SQS or DynamoDB unavailable (DependencyUnavailableError:
throttling, 5xx, timeouts, connection errors, classified at the adapter edge after the clients'
own retries) is retried the same way on its own, shorter schedule (domain/outage.py
DEPENDENCY_BACKOFF: 15 s doubling to 2 min, jittered, within DLPIPE_AWS_OUTAGE_BUDGET_SECONDS,
15 min by default). Each retry logs `batch.dependency_unavailable` at warning level; once the
budget is spent the step raises DependencyBudgetSpent and the batch ends failed with
`dependency_unavailable: SQS unavailable (<cause>) after N attempts over M min`
(`check_failed: ...` before it for a check). The feed lookup (step `read-feed`, first of every
execution: feed_runs.py) has no batch yet to end: spending the budget there fails the
execution with that line, after `feed '<name>': `.

Failed checks. A check-completion step (its sweeper included) whose retries are used up ends
the batch failed with `check_failed: <step> failed: <error type>: <message>`, the BatchFailed
metric, and a normal result, instead of failing the execution with the batch left queued.

The execution timeout must hold the polling, both outage budgets and the setup margin:
assert_polling_fits checks it, as the precondition in terraform/lambda_orchestrator.tf does.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution

from dlpipe.domain.outage import DEPENDENCY_BACKOFF, OutageBackoff
from dlpipe.domain.redaction import redact, redact_data, redact_exception
from dlpipe.log import redact_stdlib_logs
from dlpipe.services.orchestrator.announce import DayDeadline
from dlpipe.services.orchestrator.durable_steps import Backoffs, DurableSteps
from dlpipe.services.orchestrator.feed_runs import (
    FeedRuns,
    PollingPlan,
    served_request,
    single_feed,
)
from dlpipe.services.orchestrator.ports import BatchFlow
from dlpipe.services.orchestrator.recheck import DayStarter
from dlpipe.services.orchestrator.sdk_logs import quiet_sdk_retry_logs
from dlpipe.services.orchestrator.sequence import run_batch

if TYPE_CHECKING:
    from aws_durable_execution_sdk_python.types import LambdaContext

# Time for everything but the waits: create and fetch (a big listing, chunks of puts), each
# check's own run time, and step-retry backoffs. Without it the last check, the one that
# marks the batch timeout, could be cut off by the execution timeout. Same default as
# terraform's durable_setup_margin_seconds.
DEFAULT_MARGIN_SECONDS = 1800
# The SDK's module loggers (and its local runner's): each gets the redacting log filter.
_SDK_LOGGERS = "aws_durable_execution_sdk_python"


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
    runs: FeedRuns | None = None,
    deadline: DayDeadline | None = None,
    starters: Callable[[Any, str], DayStarter | None] | None = None,
) -> Callable[[Any, LambdaContext], Any]:
    """Return the Lambda handler that runs one feed's day as a durable execution.

    `flow_factory` is called at most once per invocation, inside the first step that runs.
    `outage`: how long and how often to retry the fetch while the provider is unavailable;
    `dependency_outage`: any step while SQS or DynamoDB is; `deadline`: when the default
    feed's day is due (`Day Late` once it passes while the batch runs; None: never late).
    `runs`: each feed's flow, plan (its own deadline) and time zone by the event's feed
    (default: the default feed alone, on `flow_factory` and this plan). `starters` gives,
    from the invocation's Lambda context and the feed, what starts a run of an earlier day
    the restatement window finds restated (None, or a None answer: it is only logged).
    """
    plan = PollingPlan(poll_interval_seconds, max_polls, deadline)
    runs = runs or single_feed(flow_factory, plan)
    backoffs = Backoffs(outage or OutageBackoff(), dependency_outage)
    quiet_sdk_retry_logs()
    redact_stdlib_logs(_SDK_LOGGERS)  # after the retry filter: it reads the live exception

    def orchestrate(event: Any, context: DurableContext) -> dict[str, Any]:
        steps = DurableSteps(context, backoffs)
        # The feed is read in step read-feed (SSM unavailable is waited out there). An invalid
        # event or a feed no configuration names raises InvalidEventError here, in the body:
        # the SDK fails the execution with that error and does not retry it.
        request, run = served_request(steps, event, date_offset_days, runs)
        # Built lazily inside a step, so a failure to build it (a secret read, say) is a step
        # failure that gets retried, and pure replays build nothing.
        flow = functools.cache(run.flow)
        start = starters(context.lambda_context, request.feed) if starters else None
        return run_batch(steps, flow, request, run.plan, start).to_dict()

    return _redacted(durable_execution(_redacted(orchestrate)))


def _redacted(handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`handler` whose result and escaping exceptions pass the one redaction: inside the SDK
    (the result it checkpoints, the error it logs and records) and outside it (the Lambda's
    output, with the failed execution's message and stack trace)."""

    @functools.wraps(handler)
    def redacted(event: Any, context: Any) -> Any:
        try:
            return _redacted_output(handler(event, context))
        except Exception as exc:
            redact_exception(exc)
            raise

    return redacted


def _redacted_output(output: Any) -> Any:
    # The SDK's output carries the result as a JSON string: masked as data, so it stays JSON.
    if isinstance(output, dict) and isinstance(output.get("Result"), str):
        result = output["Result"]
        if redact(result) != result:
            output = {**output, "Result": json.dumps(redact_data(json.loads(result)))}
    return redact_data(output)

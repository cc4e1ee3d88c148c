"""The durable shell runs the batch sequence under the SDK's local runner, and replays it safely."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_durable_execution_sdk_python import durable_execution
from aws_durable_execution_sdk_python.exceptions import RetryableSerDesError
from aws_durable_execution_sdk_python_testing.execution import ExecutionStatus
from aws_durable_execution_sdk_python_testing.executor import Executor
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
    StepOperation,
)
from structlog.testing import capture_logs

from dlpipe.domain.events import InvalidEventError
from dlpipe.domain.outage import OutageBackoff
from dlpipe.domain.redaction import forget_secrets, register_secret
from dlpipe.local.durable_runner import LocalRunError, run_durable_locally
from dlpipe.services.orchestrator.durable import (
    PollingBudgetError,
    _redacted,
    assert_polling_fits,
    build_durable_handler,
)
from dlpipe.services.orchestrator.durable_steps import step_retry_strategy
from dlpipe.services.orchestrator.feed_runs import single_feed
from dlpipe.services.orchestrator.ports import (
    CompletionCheck,
    FetchFailed,
    FlowContractError,
    ProviderOutage,
    QueueResult,
)
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from orchestrator import handler as handler_module

EVENT = {"date": "2026-02-28"}
OUTAGE_CAUSE = "GET /v1/files: HTTP 503"
TOKEN = "tok-CANARY-0123456789abcdefghij"


def crash() -> BaseException:
    """What an invocation dying mid-step looks like to the SDK: no step checkpoint, re-invoke."""
    return RetryableSerDesError("simulated crash")


@dataclass
class FakeFlow:
    """In-process BatchFlow: records every call; `faults` raise once at (method, before|after)."""

    final_after: int = 2
    final_status: str = "completed"
    fetch_error: Exception | None = None
    fetch_outages: int = 0  # the first n fetches find the provider unavailable
    check_error: Exception | None = None  # raised by every check
    recheck_error: Exception | None = None  # raised by every restatement check
    never_final: bool = False
    faults: dict[tuple[str, str], BaseException] = field(default_factory=dict)
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def _enter(self, method: str, *args: Any) -> None:
        self.calls.append((method, *args))
        if fault := self.faults.pop((method, "before"), None):
            raise fault

    def _leave(self, method: str) -> None:
        if fault := self.faults.pop((method, "after"), None):
            raise fault

    def create_batch(self, polling_date: str, rerun: bool = False) -> str:
        self._enter("create_batch", polling_date)
        batch_id = f"batch-{polling_date}-{len(self.named('create_batch'))}"  # a fresh "uuid"
        self._leave("create_batch")
        return batch_id

    def fetch_and_queue(self, batch_id: str, polling_date: str) -> QueueResult:
        self._enter("fetch_and_queue", batch_id, polling_date)
        if self.fetch_error is not None:
            raise self.fetch_error
        if len(self.named("fetch_and_queue")) <= self.fetch_outages:
            raise ProviderOutage(OUTAGE_CAUSE, batch_id=batch_id)
        self._leave("fetch_and_queue")
        return QueueResult(expected=3, sent=3, already_present=0)

    def check_completion(
        self, batch_id: str, poll_number: int, is_last_poll: bool
    ) -> CompletionCheck:
        self._enter("check_completion", batch_id, poll_number, is_last_poll)
        if self.check_error is not None:
            raise self.check_error
        self._leave("check_completion")
        if poll_number >= self.final_after and not self.never_final:
            return CompletionCheck(self.final_status, completed=3, failed=0, pending=0)
        if is_last_poll and not self.never_final:
            return CompletionCheck("timeout", completed=1, failed=0, pending=2)
        return CompletionCheck(None, completed=1, failed=0, pending=2)

    def recheck_day(
        self, polling_date: str, start: Callable[[str], str] | None = None
    ) -> dict[str, Any]:
        self._enter("recheck_day", polling_date)
        if self.recheck_error is not None:
            raise self.recheck_error
        self._leave("recheck_day")
        return {
            "date": polling_date,
            "outcome": "restated",
            "started": start and start(polling_date),
        }

    def fail_batch(self, batch_id: str, reason: str) -> None:
        self._enter("fail_batch", batch_id, reason)
        self._leave("fail_batch")

    def write_manifest(self, batch_id: str) -> dict[str, Any] | None:
        self._enter("write_manifest", batch_id)
        self._leave("write_manifest")
        key = f"{batch_id}.json"
        ref = {"bucket": "b", "key": key, "version_id": None, "sha256": "0" * 64, "size": 2}
        return ref | {"entries": 0, "uri": f"s3://b/{key}"}

    def record_handoff_problem(self, batch_id: str, problem: str) -> None:
        self._enter("record_handoff_problem", batch_id, problem)
        self._leave("record_handoff_problem")

    def publish_event(self, event: dict[str, Any]) -> dict[str, Any]:
        self._enter("publish_event", event["detail"]["batch_id"], event["detail_type"])
        self._leave("publish_event")
        return {"sent": True}

    def publish_if_late(self, event: dict[str, Any], deadline_at_ms: int) -> bool:
        self._enter("publish_if_late", event["detail"]["batch_id"], deadline_at_ms)
        self._leave("publish_if_late")
        return False

    def named(self, method: str) -> list[tuple[Any, ...]]:
        return [call for call in self.calls if call[0] == method]


def durable_handler(flow: FakeFlow, max_polls: int = 4) -> Callable[[Any, Any], Any]:
    return build_durable_handler(lambda: flow, poll_interval_seconds=300, max_polls=max_polls)


def run(handler: Callable[[Any, Any], Any], event: object = EVENT) -> DurableFunctionTestResult:
    with DurableFunctionTestRunner(handler=handler, skip_time=True) as runner:
        outcome: DurableFunctionTestResult = runner.run(
            input=json.dumps(event), execution_timeout=30
        )
    return outcome


def result_of(outcome: DurableFunctionTestResult) -> dict[str, Any]:
    assert outcome.execution_status is ExecutionStatus.SUCCEEDED, outcome.error
    assert outcome.result is not None
    result: dict[str, Any] = json.loads(outcome.result)
    return result


def failure_of(outcome: DurableFunctionTestResult) -> tuple[str, str]:
    assert outcome.execution_status is ExecutionStatus.FAILED
    assert outcome.error is not None
    return outcome.error.type or "", outcome.error.message or ""


def names(outcome: DurableFunctionTestResult) -> list[str]:
    return [op.name or "" for op in outcome.operations]


@pytest.fixture
def fast_reinvoke(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local runner re-invokes a crashed handler after 5 real seconds; make it immediate."""
    monkeypatch.setattr(Executor, "RETRY_BACKOFF_SECONDS", 0)


def test_happy_path_completes_after_n_polls_with_the_step_sequence() -> None:
    flow = FakeFlow(final_after=2)
    outcome = run(durable_handler(flow))
    assert result_of(outcome) == {
        "batch_id": "batch-2026-02-28-1",
        "date": "2026-02-28",
        "status": "completed",
        "completed": 3,
        "failed": 0,
        "pending": 0,
        "polls": 2,
        "rerun": False,
        "error": 0,
        "outcome": None,
        "manifest": FakeFlow().write_manifest("batch-2026-02-28-1"),
    }
    assert names(outcome) == [
        "read-feed",
        "create-batch",
        "fetch-and-queue-files",
        "poll-wait-1",
        "check-completion-1",
        "poll-wait-2",
        "check-completion-2",
        "write-manifest",
        "publish-outcome-event",
    ]


def test_waits_last_the_poll_interval_in_virtual_time() -> None:
    outcome = run(durable_handler(FakeFlow(final_after=1)))
    wait = outcome.get_wait("poll-wait-1")
    assert wait.start_timestamp is not None
    assert wait.end_timestamp is not None
    assert (wait.end_timestamp - wait.start_timestamp).total_seconds() >= 300


def test_last_poll_is_flagged_and_its_timeout_status_is_the_result() -> None:
    flow = FakeFlow(final_after=99)
    result = result_of(run(durable_handler(flow, max_polls=3)))
    assert (result["status"], result["polls"], result["pending"]) == ("timeout", 3, 2)
    assert [call[3] for call in flow.named("check_completion")] == [False, False, True]


def test_fetch_failed_fails_the_batch_once_without_retry() -> None:
    flow = FakeFlow(fetch_error=FetchFailed("provider returned 503 after 5 tries"))
    outcome = run(durable_handler(flow))
    result = result_of(outcome)
    assert (result["status"], result["polls"]) == ("failed", 0)
    # The run's result says why (dlpipe run prints it on its final line).
    assert result["outcome"] == {"cause": "provider returned 503 after 5 tries", "codes": []}
    assert len(flow.named("fetch_and_queue")) == 1
    assert flow.named("fail_batch") == [
        ("fail_batch", "batch-2026-02-28-1", "provider returned 503 after 5 tries")
    ]
    assert names(outcome) == [
        "read-feed",
        "create-batch",
        "fetch-and-queue-files",
        "fail-batch",
        "write-manifest",
        "publish-outcome-event",
    ]


def test_invalid_event_fails_the_execution_with_its_error_and_builds_no_flow() -> None:
    built: list[int] = []

    def factory() -> FakeFlow:
        built.append(1)
        return FakeFlow()

    handler = build_durable_handler(factory, poll_interval_seconds=60, max_polls=2)
    error_type, message = failure_of(run(handler, {"date": "2026-02-30"}))
    assert error_type == "dlpipe.domain.events.InvalidEventError"
    assert "not a calendar date" in message
    assert built == []


def test_an_event_naming_a_feed_this_deployment_does_not_run_fails_and_builds_no_flow() -> None:
    """A feed no configuration names fails at once: it must never run the default feed's day."""
    built: list[int] = []

    def factory() -> FakeFlow:
        built.append(1)
        return FakeFlow()

    handler = build_durable_handler(factory, poll_interval_seconds=60, max_polls=2)
    error_type, message = failure_of(run(handler, {"feed": "vendor-b", "date": "2026-02-28"}))
    assert error_type == "dlpipe.domain.events.InvalidEventError"
    assert "'vendor-b'" in message
    assert built == []
    with pytest.raises(InvalidEventError, match="'vendor-b'"):
        run_inline(FakeFlow(), {"feed": "vendor-b", "date": "2026-02-28"}, PollingPlan(60, 1))


@pytest.mark.usefixtures("fast_reinvoke")
@pytest.mark.parametrize("method", ["create_batch", "fetch_and_queue", "check_completion"])
@pytest.mark.parametrize("when", ["before", "after"])
def test_crash_mid_step_replays_completed_steps_from_checkpoints(method: str, when: str) -> None:
    flow = FakeFlow(final_after=2, faults={(method, when): crash()})
    outcome = run(durable_handler(flow))
    result = result_of(outcome)
    assert result["status"] == "completed"
    # A crash is not a step failure: no retry attempt is spent on it.
    steps = [op for op in outcome.operations if isinstance(op, StepOperation)]
    assert [op.attempt for op in steps] == [1] * len(steps)
    order = ["create_batch", "fetch_and_queue", "check_completion"]
    for earlier in order[: order.index(method)]:
        assert len(flow.named(earlier)) == 1, f"{earlier} ran again on replay"
    # The interrupted step runs again in full (at-least-once), as Lambda's replay would.
    expected_runs = {"create_batch": 2, "fetch_and_queue": 2, "check_completion": 3}
    assert len(flow.named(method)) == expected_runs[method]
    # Whatever batch ID got checkpointed is the only one used from then on.
    used_ids = {call[1] for call in flow.calls if call[0] != "create_batch"}
    assert used_ids == {result["batch_id"]}


@pytest.mark.usefixtures("fast_reinvoke")
def test_crash_in_create_batch_after_its_write_leaves_the_first_batch_unused() -> None:
    flow = FakeFlow(faults={("create_batch", "after"): crash()})
    assert result_of(run(durable_handler(flow)))["batch_id"] == "batch-2026-02-28-2"


def test_transient_step_error_is_retried_by_the_sdk_after_replaying_earlier_steps() -> None:
    flow = FakeFlow(final_after=1, faults={("check_completion", "before"): ConnectionError()})
    outcome = run(durable_handler(flow))
    assert result_of(outcome)["status"] == "completed"
    assert outcome.get_step("check-completion-1").attempt == 2
    assert (len(flow.named("create_batch")), len(flow.named("fetch_and_queue"))) == (1, 1)


def test_fetch_failing_beyond_its_retries_ends_the_batch_failed_saying_why() -> None:
    """After 3 attempts, fetch-and-queue's cause becomes fail-batch's reason; status failed."""
    flow = FakeFlow(fetch_error=ConnectionError("dynamodb unreachable"))
    assert result_of(run(durable_handler(flow)))["status"] == "failed"
    assert len(flow.named("fetch_and_queue")) == 3
    ((*_, reason),) = flow.named("fail_batch")
    assert "dynamodb unreachable" in str(reason)


def test_flow_factory_failure_is_retried_inside_the_first_step() -> None:
    attempts: list[int] = []
    flow = FakeFlow(final_after=1)

    def flaky_factory() -> FakeFlow:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("secrets manager throttled")
        return flow

    handler = build_durable_handler(flaky_factory, poll_interval_seconds=60, max_polls=2)
    assert result_of(run(handler))["status"] == "completed"
    assert len(flow.named("create_batch")) == 1


def test_flow_without_a_final_status_on_the_last_poll_fails_the_execution() -> None:
    outcome = run(durable_handler(FakeFlow(never_final=True), max_polls=2))
    assert failure_of(outcome)[0] == "dlpipe.services.orchestrator.ports.FlowContractError"


@pytest.mark.parametrize(
    "make_flow",
    [
        lambda: FakeFlow(final_after=3),
        lambda: FakeFlow(final_after=2, final_status="failed"),
        lambda: FakeFlow(final_after=99),
        lambda: FakeFlow(fetch_error=FetchFailed("gone")),
    ],
    ids=["completed", "failed", "timeout", "fetch-failed"],
)
def test_inline_and_durable_runs_agree_on_result_and_sequence(
    make_flow: Callable[[], FakeFlow],
) -> None:
    steps = InlineSteps()
    inline = run_inline(make_flow(), EVENT, PollingPlan(300, 4), steps=steps)
    durable = run(durable_handler(make_flow(), max_polls=4))
    assert result_of(durable) == inline
    assert names(durable) == steps.names


def test_inline_run_raises_when_the_flow_breaks_its_contract() -> None:
    with pytest.raises(FlowContractError):
        run_inline(FakeFlow(never_final=True), EVENT, PollingPlan(1, 2))


def test_run_durable_locally_returns_the_result_dict() -> None:
    result = run_durable_locally(durable_handler(FakeFlow(final_after=1)), {**EVENT, "rerun": True})
    assert (result["status"], result["rerun"]) == ("completed", True)


def test_run_durable_locally_leaves_no_threads_behind() -> None:
    before = set(threading.enumerate())
    run_durable_locally(durable_handler(FakeFlow(final_after=1)), EVENT)
    deadline = time.monotonic() + 60
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(threading.enumerate()) - before == set()


def test_run_durable_locally_raises_with_the_error_of_a_failed_execution() -> None:
    with pytest.raises(LocalRunError, match="InvalidEventError") as caught:
        run_durable_locally(durable_handler(FakeFlow()), {"date": "20260228"})
    assert caught.value.execution_status == "FAILED"


def test_run_durable_locally_raises_when_real_time_runs_out() -> None:
    @durable_execution
    def slow(_event: Any, context: Any) -> None:
        context.step(lambda _: time.sleep(1.5), name="slow")

    with pytest.raises(LocalRunError, match="TIMED_OUT") as caught:
        run_durable_locally(slow, {}, timeout_seconds=0.5)
    assert caught.value.execution_status == "TIMED_OUT"


def test_lambda_handler_is_wired_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    flow = FakeFlow(final_after=99)
    monkeypatch.setenv("DLPIPE_MAX_POLLS", "2")
    monkeypatch.setenv("DLPIPE_DATE_OFFSET_DAYS", "0")
    monkeypatch.setattr(handler_module, "build_flow", lambda _settings: flow)
    handler_module.durable_handler.cache_clear()
    try:
        result = run_durable_locally(
            handler_module.handler, {"scheduled_time": "2026-03-01T06:00:00Z"}
        )
    finally:
        handler_module.durable_handler.cache_clear()
    assert (result["date"], result["status"], result["polls"]) == ("2026-03-01", "timeout", 2)


def test_importing_the_lambda_entry_builds_nothing_and_needs_no_flow_module() -> None:
    code = (
        "import sys, orchestrator.handler as h; "
        "assert 'dlpipe.services.orchestrator.flow' not in sys.modules; "
        "assert h.durable_handler.cache_info().currsize == 0"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_polling_plan_that_fits_the_execution_timeout_passes() -> None:
    assert_polling_fits(300, 12, execution_timeout_seconds=3600 + 1800)


@pytest.mark.parametrize(
    ("interval", "polls", "timeout", "margin"),
    [(300, 12, 3600, 900), (300, 12, 3600 + 899, 900), (60, 1, 100, 41)],
)
def test_polling_plan_longer_than_the_execution_timeout_is_rejected(
    interval: int, polls: int, timeout: int, margin: int
) -> None:
    with pytest.raises(PollingBudgetError, match=f"execution timeout of {timeout}s"):
        assert_polling_fits(interval, polls, timeout, margin_seconds=margin)


def test_polling_plan_needs_a_whole_second_interval_and_a_poll() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        build_durable_handler(FakeFlow, poll_interval_seconds=0, max_polls=3)


def test_step_retry_strategy_never_retries_permanent_errors() -> None:
    assert not step_retry_strategy(FetchFailed("down"), 1).should_retry
    assert not step_retry_strategy(FlowContractError("bad"), 1).should_retry


def test_step_retry_strategy_retries_other_errors_twice_with_a_delay() -> None:
    decisions = [step_retry_strategy(ConnectionError(), attempt) for attempt in (1, 2, 3)]
    assert [d.should_retry for d in decisions] == [True, True, False]
    assert all(d.delay_seconds >= 1 for d in decisions[:2])


# --- provider outages and checks that fail for good -----------------------------------------


def run_seeded(handler: Callable[[Any, Any], Any]) -> tuple[DurableFunctionTestResult, str]:
    """Run under virtual time; also return the execution ARN (the backoff jitter's seed)."""
    with DurableFunctionTestRunner(handler=handler, skip_time=True) as runner:
        arn = runner.run_async(input=json.dumps(EVENT), execution_timeout=60)
        outcome: DurableFunctionTestResult = runner.wait_for_result(arn, timeout=65)
    return outcome, arn


def virtual_seconds(outcome: DurableFunctionTestResult, step: str) -> float:
    """Virtual time from a step's first attempt to its last."""
    op = outcome.get_step(step)
    assert op.start_timestamp is not None
    assert op.end_timestamp is not None
    return (op.end_timestamp - op.start_timestamp).total_seconds()


def test_a_provider_outage_is_retried_after_suspended_backoffs_and_the_day_completes() -> None:
    """Four fetches find the provider down: attempt 5 lists the day after ~7.5 virtual minutes."""
    flow = FakeFlow(final_after=1, fetch_outages=4)
    backoff = OutageBackoff()
    with capture_logs() as logs:
        outcome, arn = run_seeded(build_durable_handler(lambda: flow, 300, 4, outage=backoff))
    assert result_of(outcome)["status"] == "completed"
    assert outcome.get_step("fetch-and-queue-files").attempt == 5
    delays = [backoff.delay_seconds(attempt, arn) for attempt in range(1, 5)]
    assert sum(delays) >= 15 + 30 + 60 + 120  # each delay is at least half its base
    assert virtual_seconds(outcome, "fetch-and-queue-files") >= sum(delays)
    assert (len(flow.named("create_batch")), flow.named("fail_batch")) == (1, [])
    noted = [e for e in logs if e["event"] == "batch.provider_unavailable"]
    assert [(e["attempt"], e["retry_in_s"], e["batch_id"]) for e in noted] == [
        (attempt, delay, "batch-2026-02-28-1") for attempt, delay in enumerate(delays, 1)
    ]


def test_an_outage_past_the_budget_fails_the_batch_with_provider_unavailable() -> None:
    """The provider never answers: the last attempt that fits 1 h ends the day, saying why."""
    flow = FakeFlow(fetch_outages=10_000)
    backoff = OutageBackoff(budget_seconds=3600)
    outcome, arn = run_seeded(build_durable_handler(lambda: flow, 300, 4, outage=backoff))
    result = result_of(outcome)
    delays = backoff.delays_while_down(arn)
    attempts = len(delays) + 1
    assert (result["status"], result["polls"]) == ("failed", 0)
    assert outcome.get_step("fetch-and-queue-files").attempt == attempts
    assert len(flow.named("fetch_and_queue")) == attempts
    assert 3600 - 600 < sum(delays) <= 3600
    assert virtual_seconds(outcome, "fetch-and-queue-files") >= sum(delays)
    ((*_, reason),) = flow.named("fail_batch")
    assert reason == (
        f"provider_unavailable: {OUTAGE_CAUSE} after {attempts} attempts "
        f"over {round(sum(delays) / 60)} min"
    )
    assert names(outcome) == [
        "read-feed",
        "create-batch",
        "fetch-and-queue-files",
        "fail-batch",
        "write-manifest",
        "publish-outcome-event",
    ]


def test_a_zero_outage_budget_fails_the_day_at_the_first_outage() -> None:
    """Budget 0: no durable retry; one attempt, and the reason says so."""
    flow = FakeFlow(fetch_outages=1)
    handler = build_durable_handler(lambda: flow, 300, 4, outage=OutageBackoff(budget_seconds=0))
    assert result_of(run(handler))["status"] == "failed"
    assert flow.named("fail_batch") == [
        (
            "fail_batch",
            "batch-2026-02-28-1",
            f"provider_unavailable: {OUTAGE_CAUSE} after 1 attempt over 0 s",
        )
    ]


def test_a_refusing_provider_fails_the_day_at_the_first_attempt_without_backoff() -> None:
    """FetchFailed (a 401, say) is not an outage: one attempt, no virtual time spent waiting."""
    flow = FakeFlow(fetch_error=FetchFailed("provider_refused: HTTP 401"))
    outcome = run(durable_handler(flow))
    assert result_of(outcome)["status"] == "failed"
    assert outcome.get_step("fetch-and-queue-files").attempt == 1
    assert virtual_seconds(outcome, "fetch-and-queue-files") < 5


def test_a_check_failing_for_good_ends_the_batch_failed_and_the_run_cleanly() -> None:
    """A check that raises on all 3 attempts: fail-batch with check_failed, a normal result."""
    flow = FakeFlow(check_error=ConnectionError("ProvisionedThroughputExceededException"))
    outcome = run(durable_handler(flow))
    result = result_of(outcome)
    assert (result["status"], result["polls"]) == ("failed", 1)
    assert outcome.get_step("check-completion-1").attempt == 3
    assert flow.named("fail_batch") == [
        (
            "fail_batch",
            "batch-2026-02-28-1",
            "check_failed: check-completion-1 failed: ConnectionError: "
            "ProvisionedThroughputExceededException",
        )
    ]
    assert names(outcome)[-4:] == [
        "check-completion-1",
        "fail-batch",
        "write-manifest",
        "publish-outcome-event",
    ]


class UnrecordableFlow(FakeFlow):
    """Its fail_batch can never write: the batches table is down too."""

    def fail_batch(self, batch_id: str, reason: str) -> None:
        raise ConnectionError("still down")


def test_a_failing_fail_batch_step_still_fails_the_execution() -> None:
    """Nothing is left to record the failure: the execution fails, naming the step."""
    flow = UnrecordableFlow(check_error=ConnectionError("down"))
    error_type, message = failure_of(run(durable_handler(flow)))
    assert error_type == "dlpipe.services.orchestrator.ports.StepFailed"
    assert message.startswith("fail-batch failed: ConnectionError: still down")


def test_inline_runs_end_the_day_at_the_first_provider_outage() -> None:
    """Inline steps never retry: an outage fails the batch at once with provider_unavailable."""
    flow = FakeFlow(fetch_outages=1)
    assert run_inline(flow, EVENT, PollingPlan(300, 4))["status"] == "failed"
    ((*_, reason),) = flow.named("fail_batch")
    assert str(reason).startswith(f"provider_unavailable: {OUTAGE_CAUSE} after 1 attempt")


def test_lambda_handler_reads_the_outage_budget_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS=0 makes the deployed handler give up at once."""
    flow = FakeFlow(fetch_outages=5)
    monkeypatch.setenv("DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS", "0")
    monkeypatch.setattr(handler_module, "build_flow", lambda _settings: flow)
    handler_module.durable_handler.cache_clear()
    try:
        result = run_durable_locally(handler_module.handler, EVENT)
    finally:
        handler_module.durable_handler.cache_clear()
    assert (result["status"], len(flow.named("fetch_and_queue"))) == ("failed", 1)


def test_polling_plan_must_leave_room_for_the_outage_budget() -> None:
    """12 polls x 300 s + 2 h outage + 30 min margin needs 12,600 s: 14,400 fits, 12,599 not."""
    assert_polling_fits(300, 12, 14_400, margin_seconds=1800, outage_budget_seconds=7200)
    with pytest.raises(PollingBudgetError, match="7200s outage budget"):
        assert_polling_fits(300, 12, 12_599, margin_seconds=1800, outage_budget_seconds=7200)


def windowed_handler(
    flow: FakeFlow, started: list[tuple[Any, ...]], window_days: int = 2
) -> Callable[[Any, Any], Any]:
    """A handler whose feed re-lists `window_days` earlier days; each start is recorded."""

    def starters(context: Any, feed: str) -> Callable[[str], str]:
        return lambda date: started.append((context is not None, feed, date)) or f"run of {date}"

    plan = PollingPlan(300, 4, restatement_window_days=window_days)
    return build_durable_handler(
        lambda: flow, 300, 4, runs=single_feed(lambda: flow, plan), starters=starters
    )


def test_a_scheduled_run_rechecks_its_window_in_steps_after_its_own_fan_out() -> None:
    """A schedule's event (no `date`): one restatement-check step a day back, after the
    day's own fetch and before its first wait; the starter is the invocation's, for its feed."""
    flow, started = FakeFlow(final_after=1), []
    outcome = run(windowed_handler(flow, started), {"scheduled_time": "2026-03-02T06:30:00Z"})
    assert result_of(outcome)["status"] == "completed"
    assert names(outcome)[:6] == [
        "read-feed",
        "create-batch",
        "fetch-and-queue-files",
        "restatement-check-1",
        "restatement-check-2",
        "poll-wait-1",
    ]
    assert [call[1] for call in flow.named("recheck_day")] == ["2026-02-28", "2026-02-27"]
    assert started == [(True, "default", "2026-02-28"), (True, "default", "2026-02-27")]


def test_a_run_for_an_explicit_date_rechecks_no_window() -> None:
    flow, started = FakeFlow(final_after=1), []
    outcome = run(windowed_handler(flow, started), EVENT)
    assert result_of(outcome)["status"] == "completed"
    assert flow.named("recheck_day") == []
    assert not [name for name in names(outcome) if name.startswith("restatement-check")]


def test_a_restatement_check_that_fails_for_good_never_fails_the_runs_own_day() -> None:
    """An earlier day's check that raises (past its retries) is logged; the day completes."""
    flow, started = FakeFlow(final_after=1, recheck_error=ValueError("listing broke")), []
    with capture_logs() as logs:
        outcome = run(windowed_handler(flow, started, 1), {"scheduled_time": "2026-03-02T06:30Z"})
    assert result_of(outcome)["status"] == "completed"
    failed = [e for e in logs if e["event"] == "batch.restatement_check_failed"]
    assert {e["date"] for e in failed} == {"2026-02-28"}  # once a replay of the body
    assert "listing broke" in failed[0]["cause"]


@pytest.fixture
def registered() -> Iterator[str]:
    """TOKEN registered as the process's own secret, forgotten afterwards."""
    forget_secrets()
    register_secret(TOKEN)
    yield TOKEN
    forget_secrets()


def test_the_handlers_output_is_masked_and_its_result_stays_json(registered: str) -> None:
    """What the SDK hands back (its Result a JSON string) and a plain result are masked as
    data: strings masked, keys and numbers kept, the Result still JSON."""
    result = {"batch_id": f"batch-{registered}", "outcome": {"cause": f"Bearer {registered}"}}
    masked = {"batch_id": "batch-***", "outcome": {"cause": "Bearer ***"}}
    output = _redacted(lambda _e, _c: {"Status": "SUCCEEDED", "Result": json.dumps(result)})
    sent = output({}, None)
    assert sent["Status"] == "SUCCEEDED"
    assert json.loads(sent["Result"]) == masked
    assert _redacted(lambda _e, _c: result | {"polls": 2})({}, None) == masked | {"polls": 2}


def test_an_exception_leaving_the_handler_is_masked_with_its_cause(registered: str) -> None:
    """The error the SDK logs and records, and the Lambda's failed output, name no token: the
    exception and the one it was raised from are masked in place."""

    def refused() -> None:
        raise OSError(f"refused Authorization: Bearer {registered}")

    def failing(_event: object, _context: object) -> None:
        try:
            refused()
        except OSError as exc:
            raise RuntimeError(f"step failed: {registered}") from exc

    with pytest.raises(RuntimeError) as raised:
        _redacted(failing)({}, None)
    assert str(raised.value) == "step failed: ***"
    assert registered[:12] not in str(raised.value.__cause__)
    assert "refused Authorization: ***" in str(raised.value.__cause__)

"""Our own AWS dependencies (SQS, DynamoDB) unavailable mid-day: the fan-out and the checks
wait it out durably within a budget, under the SDK's local runner in virtual time."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.execution import ExecutionStatus
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
)
from botocore.exceptions import ClientError, EndpointConnectionError
from structlog.testing import capture_logs

from dlpipe.adapters.queue import JobQueue
from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import Settings
from dlpipe.domain.errors import DependencyUnavailableError, StoreUnavailableError
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import CompletionCheck
from orchestrator import handler as handler_module
from tests.fakes.events import FakeEventBus
from tests.fakes.provider import FakeLister, descriptor
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable
from tests.support import ManualClock

DAY = "2026-02-28"
ENTITIES = ["accounts", "billing", "contacts"]
QUEUE_URL = "http://127.0.0.1:1/000000000000/downloads"
# Eight failed attempts wait at least 7.5 + 15 + 30 + 60 x 5 = 352 s under any jitter of the
# default schedule (15 s doubling to 2 min): more than 5 minutes of outage.
FIVE_MINUTES_OF_ATTEMPTS = 8


def sqs_500() -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "InternalError", "Message": "We encountered an internal error."},
            "ResponseMetadata": {"HTTPStatusCode": 500},
        },
        "SendMessageBatch",
    )


@dataclass
class DownSqs:
    """An SQS client whose SendMessageBatch fails (`fault`) for its first `down_for` calls."""

    down_for: int
    fault: Callable[[], Exception] = sqs_500
    calls: int = 0
    sent: list[str] = field(default_factory=list)

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.down_for:
            raise self.fault()
        self.sent.extend(json.loads(e["MessageBody"])["file_id"] for e in Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    def get_queue_attributes(self, **_: Any) -> dict[str, Any]:
        return {"Attributes": {"ApproximateNumberOfMessages": "0"}}  # every message lost


class Day:
    """The real batch flow on in-memory tables, a fake lister and the real JobQueue over
    `sqs`; every check first finishes whatever is available, as workers would."""

    def __init__(self, sqs: Any, batches: FakeBatchesTable | None = None) -> None:
        self.clock = ManualClock()
        self.jobs = FakeJobsTable(self.clock)
        self.batches = batches or FakeBatchesTable(self.clock)
        self.flow: BatchFlowService = build_flow(
            Settings(),
            jobs=self.jobs,
            batches=self.batches,
            provider=FakeLister([descriptor(e, DAY) for e in ENTITIES]),
            queue=JobQueue(sqs, QUEUE_URL, max_attempts=1),
            clock=self.clock,
            events=FakeEventBus(),
        )
        real_check = self.flow.check_completion

        def check(batch_id: str, poll_number: int, is_last_poll: bool) -> CompletionCheck:
            for job in list(self.jobs.items.values()):
                if job.status is JobStatus.AVAILABLE:
                    self.jobs.claim(job.file_id, "worker", 300)
                    self.jobs.complete(
                        job.file_id, "worker", byte_count=1, sha256="0" * 64, destination_key="k"
                    )
            return real_check(batch_id, poll_number, is_last_poll)

        self.flow.check_completion = check  # type: ignore[method-assign]

    def run(self, **handler_options: Any) -> DurableFunctionTestResult:
        handler = build_durable_handler(lambda: self.flow, 300, 2, **handler_options)
        with DurableFunctionTestRunner(handler=handler, skip_time=True) as runner:
            outcome: DurableFunctionTestResult = runner.run(
                input=json.dumps({"date": DAY}), execution_timeout=60
            )
        return outcome

    def reason(self) -> str:
        (batch,) = self.batches.items.values()
        return batch.error_message or ""


def result_of(outcome: DurableFunctionTestResult) -> dict[str, Any]:
    assert outcome.execution_status is ExecutionStatus.SUCCEEDED, outcome.error
    assert outcome.result is not None
    result: dict[str, Any] = json.loads(outcome.result)
    return result


def virtual_seconds(outcome: DurableFunctionTestResult, step: str) -> float:
    op = outcome.get_step(step)
    assert op.start_timestamp is not None
    assert op.end_timestamp is not None
    return (op.end_timestamp - op.start_timestamp).total_seconds()


@pytest.mark.parametrize(
    "fault",
    [sqs_500, lambda: EndpointConnectionError(endpoint_url=QUEUE_URL)],
    ids=["500", "connection refused"],
)
def test_sqs_down_for_five_minutes_across_the_fan_out_and_the_day_still_completes(
    fault: Callable[[], Exception],
) -> None:
    """Eight fan-out attempts find SQS down (> 5 virtual minutes): the ninth queues every
    file and the day completes, with the default budget; retries log warnings, no error."""
    sqs = DownSqs(down_for=FIVE_MINUTES_OF_ATTEMPTS, fault=fault)
    day = Day(sqs)
    with capture_logs() as logs:
        outcome = day.run()
    assert result_of(outcome)["status"] == "completed"
    assert outcome.get_step("fetch-and-queue-files").attempt == FIVE_MINUTES_OF_ATTEMPTS + 1
    assert virtual_seconds(outcome, "fetch-and-queue-files") >= 300
    assert sorted(sqs.sent) == sorted(f"{e}-{DAY}" for e in ENTITIES)
    waits = [e for e in logs if e["event"] == "batch.dependency_unavailable"]
    assert [(e["dependency"], e["log_level"]) for e in waits] == [
        ("SQS", "warning")
    ] * FIVE_MINUTES_OF_ATTEMPTS
    assert [e["event"] for e in logs if e["log_level"] == "error"] == []


def test_sqs_down_past_the_budget_fails_the_batch_naming_sqs_and_the_time_spent() -> None:
    """SQS never comes back: the batch ends failed with dependency_unavailable, naming SQS, the
    attempts and the time waited; only that give-up is logged as an error."""
    day = Day(DownSqs(down_for=10_000))
    with capture_logs() as logs:
        outcome = day.run()
    assert result_of(outcome)["status"] == "failed"
    attempts = outcome.get_step("fetch-and-queue-files").attempt
    waited_s = virtual_seconds(outcome, "fetch-and-queue-files")
    assert 900 - 120 < waited_s <= 900 + 60
    reason = day.reason()
    assert reason.startswith("dependency_unavailable: SQS unavailable"), reason
    assert "InternalError" in reason
    spent = re.search(rf"after {attempts} attempts over (\d+) min$", reason)
    assert spent is not None, reason
    assert abs(int(spent.group(1)) - waited_s / 60) <= 1
    (batch,) = day.batches.items.values()
    assert batch.status is BatchStatus.FAILED
    errors = [e["event"] for e in logs if e["log_level"] == "error"]
    assert errors == ["batch.failed"]


class ThrottledBatches(FakeBatchesTable):
    """The batches table throttles every record_counts for its first `down_for` calls."""

    def __init__(self, clock: ManualClock, down_for: int) -> None:
        super().__init__(clock)
        self.down_for = down_for

    def record_counts(self, batch_id: str, **counts: Any) -> Any:
        if self.down_for > 0:
            self.down_for -= 1
            raise StoreUnavailableError(
                f"DynamoDB kept refusing (ThrottlingException) on {batch_id!r}"
            )
        return super().record_counts(batch_id, **counts)


def test_dynamodb_throttling_a_check_for_five_minutes_is_waited_out() -> None:
    """The first check finds DynamoDB throttling for eight attempts: the ninth records the
    counts and the day completes at that poll."""
    day = Day(DownSqs(down_for=0))
    day.batches = ThrottledBatches(day.clock, FIVE_MINUTES_OF_ATTEMPTS)
    day.flow.batches = day.batches
    outcome = day.run()
    result = result_of(outcome)
    assert (result["status"], result["polls"]) == ("completed", 1)
    assert outcome.get_step("check-completion-1").attempt == FIVE_MINUTES_OF_ATTEMPTS + 1
    assert virtual_seconds(outcome, "check-completion-1") >= 300


def test_dynamodb_down_past_the_budget_in_a_check_fails_the_batch_naming_dynamodb() -> None:
    """A check that outlasts the budget ends the day failed: check_failed, DynamoDB, the time."""
    day = Day(DownSqs(down_for=0))
    day.batches = ThrottledBatches(day.clock, 10_000)
    day.flow.batches = day.batches
    outcome = day.run()
    assert result_of(outcome)["status"] == "failed"
    reason = day.reason()
    assert reason.startswith("check_failed: dependency_unavailable: DynamoDB unavailable"), reason
    assert re.search(r" after \d+ attempts over 1\d min$", reason), reason


def test_the_budget_comes_from_the_environment_and_zero_gives_up_at_the_first_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DLPIPE_AWS_OUTAGE_BUDGET_SECONDS=0: one attempt, then the day fails saying so."""
    monkeypatch.setenv("DLPIPE_AWS_OUTAGE_BUDGET_SECONDS", "0")
    settings = Settings.from_env()
    assert settings.aws_outage_budget_seconds == 0
    day = Day(DownSqs(down_for=10_000))
    outcome = day.run(dependency_outage=settings.aws_outage_backoff())
    assert result_of(outcome)["status"] == "failed"
    assert outcome.get_step("fetch-and-queue-files").attempt == 1
    assert day.reason().endswith("after 1 attempt over 0 s"), day.reason()


def test_the_lambda_handler_reads_the_aws_outage_budget_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DLPIPE_AWS_OUTAGE_BUDGET_SECONDS=0 makes the deployed handler give up at the first fault."""
    day = Day(DownSqs(down_for=10_000))
    monkeypatch.setenv("DLPIPE_AWS_OUTAGE_BUDGET_SECONDS", "0")
    monkeypatch.setattr(handler_module, "build_flow", lambda _settings: day.flow)
    handler_module.durable_handler.cache_clear()
    try:
        result = run_durable_locally(handler_module.handler, {"date": DAY})
    finally:
        handler_module.durable_handler.cache_clear()
    assert result["status"] == "failed"
    assert day.reason().endswith("after 1 attempt over 0 s"), day.reason()


def test_the_sdks_own_log_of_a_retried_outage_is_a_warning_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The durable SDK logs every failed step attempt at ERROR with a traceback; an attempt
    that met an outage being waited out is a warning there too, and only the give-up an error."""
    caplog.set_level(logging.INFO, logger="aws_durable_execution_sdk_python")
    outcome = Day(DownSqs(down_for=2)).run()
    assert result_of(outcome)["status"] == "completed"
    sdk = [r for r in caplog.records if r.name.startswith("aws_durable_execution_sdk_python")]
    failed = [r for r in sdk if "failed step" in r.getMessage()]
    assert [(r.levelname, r.exc_info) for r in failed] == [("WARNING", None)] * 2
    assert [r.getMessage() for r in sdk if r.levelno >= logging.ERROR] == []


def test_a_sweepers_resend_that_meets_sqs_down_is_an_outage_of_the_check() -> None:
    """The check's sweeper re-sends idle jobs; SQS refusing with 500s makes the check raise
    SQS's DependencyUnavailableError (waited out within the budget), not a plain send error."""
    sqs = DownSqs(down_for=0)
    day = Day(sqs)
    batch_id = day.flow.create_batch(DAY)
    day.flow.fetch_and_queue(batch_id, DAY)
    sqs.down_for, day.clock.now = 10_000, day.clock.now + 3600 * 1000  # idle past the bound
    with pytest.raises(DependencyUnavailableError) as caught:
        BatchFlowService.check_completion(day.flow, batch_id, 1, False)
    assert caught.value.dependency == "SQS"

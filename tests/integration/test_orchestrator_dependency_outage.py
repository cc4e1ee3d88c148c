"""SQS down mid-day, against the emulators over HTTP: the fan-out's sends go through an
endpoint that answers 500 for a while, under the SDK's local runner in virtual time."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
)
from botocore.config import Config

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.config import Settings
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.outage import OutageBackoff, dependency_backoff
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import CompletionCheck
from tests.integration.failing_endpoint import FailingEndpoint
from tests.integration.test_orchestrator_flow import drain, specs, work_done
from tests.provider_support import StubFactory, fast_client
from tests.support import ManualClock, unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.integration

# Eight failed fan-out attempts wait at least 352 virtual seconds under the default schedule
# (15 s doubling to 2 min, each delay at least half its base): SQS is down > 5 minutes.
DOWN_FOR_ATTEMPTS = 8


@pytest.fixture
def queue(clients: AwsClients) -> Iterator[JobQueue]:
    """A queue of this test's own (reached directly), deleted afterwards."""
    url = clients.sqs.create_queue(QueueName=f"outage-{uuid.uuid4().hex[:16]}")["QueueUrl"]
    yield JobQueue(clients.sqs, url)
    clients.sqs.delete_queue(QueueUrl=url)


def through(endpoint: FailingEndpoint, queue: JobQueue) -> JobQueue:
    """`queue`, sent to through `endpoint`, one attempt per send (botocore's and ours)."""
    settings = Settings.from_env(os.environ)
    settings = replace(
        settings, service_endpoint_urls={**settings.service_endpoint_urls, "sqs": endpoint.url}
    )
    sqs = AwsClients(settings, config=Config(retries={"total_max_attempts": 1})).sqs
    return JobQueue(sqs, queue.queue_url, max_attempts=1)


def working_flow(
    stub: StubProvider, jobs: JobsTable, batches: BatchesTable, queue: JobQueue, clock: ManualClock
) -> BatchFlowService:
    """The real flow; before each check, every available job is done, as a worker would."""
    flow = BatchFlowService(
        jobs=jobs,
        batches=batches,
        provider=fast_client(stub),
        queue=queue,
        clock=clock,
        new_uuid=lambda: str(uuid.uuid4()),
    )
    real_check = flow.check_completion

    def check(batch_id: str, poll_number: int, is_last_poll: bool) -> CompletionCheck:
        for job in jobs.query_by_batch(batch_id, JobStatus.AVAILABLE):
            work_done(jobs, job.file_id)
        return real_check(batch_id, poll_number, is_last_poll)

    flow.check_completion = check  # type: ignore[method-assign]
    return flow


def run_day(
    flow: BatchFlowService, day: str, dependency_outage: OutageBackoff | None = None
) -> DurableFunctionTestResult:
    options = {} if dependency_outage is None else {"dependency_outage": dependency_outage}
    handler = build_durable_handler(lambda: flow, 300, 2, **options)
    with DurableFunctionTestRunner(handler=handler, skip_time=True) as runner:
        outcome: DurableFunctionTestResult = runner.run(
            input=json.dumps({"date": day}), execution_timeout=120
        )
    return outcome


def result_of(outcome: DurableFunctionTestResult) -> dict[str, Any]:
    assert outcome.result is not None, outcome.error
    result: dict[str, Any] = json.loads(outcome.result)
    return result


def virtual_seconds(outcome: DurableFunctionTestResult, step: str) -> float:
    op = outcome.get_step(step)
    assert op.start_timestamp is not None
    assert op.end_timestamp is not None
    return (op.end_timestamp - op.start_timestamp).total_seconds()


def test_sqs_answering_500_for_five_minutes_of_the_fan_out_still_completes_the_day(
    aws_env: dict[str, str],
    clients: AwsClients,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
) -> None:
    """Eight fan-out attempts get SQS 500s (> 5 virtual minutes): the ninth queues every file
    on the emulator and the day completes, with the default budget."""
    day = unique_day()
    stub = stub_factory(specs(entity, 3))
    with FailingEndpoint(aws_env["AWS_ENDPOINT_URL"], fail_first=DOWN_FOR_ATTEMPTS) as sqs:
        flow = working_flow(stub, jobs, batches, through(sqs, queue), clock)
        outcome = run_day(flow, day)
    result = result_of(outcome)
    assert result["status"] == "completed", result
    assert outcome.get_step("fetch-and-queue-files").attempt == DOWN_FOR_ATTEMPTS + 1
    assert virtual_seconds(outcome, "fetch-and-queue-files") >= 300
    assert (sqs.failed, sqs.forwarded) == (DOWN_FOR_ATTEMPTS, 1)
    assert sorted(drain(clients, queue)) == sorted(f"{entity}{i}-{day}" for i in range(3))


def test_sqs_down_past_the_budget_fails_the_batch_naming_sqs_on_the_batch_item(
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
) -> None:
    """SQS never comes back within a 5-minute budget: the batch item in DynamoDB ends failed
    with dependency_unavailable naming SQS and the minutes spent."""
    day = unique_day()
    stub = stub_factory(specs(entity, 2))
    with FailingEndpoint(aws_env["AWS_ENDPOINT_URL"], fail_first=10_000) as sqs:
        flow = working_flow(stub, jobs, batches, through(sqs, queue), clock)
        outcome = run_day(flow, day, dependency_backoff(300))
    assert result_of(outcome)["status"] == "failed"
    (batch,) = batches.query_by_date(day)
    assert batch.status is BatchStatus.FAILED
    reason = batch.error_message or ""
    assert reason.startswith("dependency_unavailable: SQS unavailable (SQS SendMessageBatch"), (
        reason
    )
    assert "InternalError" in reason
    attempts = outcome.get_step("fetch-and-queue-files").attempt
    assert re.search(rf"after {attempts} attempts over [345] min$", reason), reason
    assert sqs.failed == attempts  # one SendMessageBatch an attempt, each refused

"""The poller's batch writes land but their responses are lost, and botocore sends them again.

The flow runs on a DynamoDB client of the test's own with a botocore `needs-retry` hook (see
tests/integration/test_downloader_lost_responses.py): the re-sent write is refused by the
change its first send made, and the batch must still be reported as what happened to it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from structlog.testing import capture_logs

from dlpipe import metrics
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.model import BatchStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.integration.test_downloader_lost_responses import LostOnce, own_dynamodb
from tests.integration.test_orchestrator_flow import drain, queue, specs, work_done
from tests.provider_support import StubFactory, fast_client
from tests.support import ManualClock, unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.integration
__all__ = ["own_dynamodb", "queue"]  # fixtures this module uses from others


def _flow(
    dynamodb: Any, provisioned: Provisioned, stub: StubProvider, queue: JobQueue
) -> tuple[BatchFlowService, BatchesTable]:
    clock = ManualClock()
    batches = BatchesTable(dynamodb, provisioned.batches_table, clock)
    flow = BatchFlowService(
        jobs=JobsTable(dynamodb, provisioned.jobs_table, clock),
        batches=batches,
        provider=fast_client(stub),
        queue=queue,
        clock=clock,
        new_uuid=lambda: str(uuid.uuid4()),
    )
    return flow, batches


def test_a_create_batch_whose_response_was_lost_creates_the_days_one_batch(
    own_dynamodb: Any,
    provisioned: Provisioned,
    stub_factory: StubFactory,
    queue: JobQueue,
    entity: str,
) -> None:
    """The re-sent put finds the batch it wrote: the step returns it, one batch for the day."""
    day = unique_day()
    flow, batches = _flow(own_dynamodb, provisioned, stub_factory(specs(entity, 1)), queue)
    lost = LostOnce(own_dynamodb, "", operation="PutItem")
    batch_id = flow.create_batch(day)
    assert lost.fired == 1
    assert [(b.batch_id, b.status) for b in batches.query_by_date(day)] == [
        (batch_id, BatchStatus.INITIATED)
    ]


def test_a_final_status_whose_response_was_lost_is_reported_once(
    own_dynamodb: Any,
    provisioned: Provisioned,
    stub_factory: StubFactory,
    queue: JobQueue,
    clients: Any,
    entity: str,
) -> None:
    """The re-sent finish finds the batch completed by it: BatchCompleted emitted, logged."""
    day = unique_day()
    flow, batches = _flow(own_dynamodb, provisioned, stub_factory(specs(entity, 1)), queue)
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    (only,) = drain(clients, queue)
    work_done(JobsTable(own_dynamodb, provisioned.jobs_table, ManualClock()), only)
    lost = LostOnce(own_dynamodb, "SET #status = :final")
    lines: list[str] = []
    metrics.set_sink(lines.append)
    try:
        with capture_logs() as logs:
            check = flow.check_completion(batch_id, 1, False)
    finally:
        metrics.set_sink(print)
    assert lost.fired == 1
    assert (check.status, batches.require(batch_id).status) == ("completed", BatchStatus.COMPLETED)
    assert sum('"BatchCompleted"' in line for line in lines) == 1
    assert [e["event"] for e in logs].count("batch.completed") == 1

"""The hand-off events reach a downstream consumer: the orchestrator's outcome event goes through
EventBridge (moto's, a rule on source `dlpipe`) to an SQS queue, once per outcome, with the
detail the README documents."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.events import EventBus
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.handoff_events import DETAIL_SCHEMA, event_id
from dlpipe.domain.model import JobStatus
from dlpipe.local.events import received_events
from dlpipe.local.provision import Provisioned
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import FetchFailed
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.fakes.provider import FakeLister, descriptor
from tests.support import ManualClock

pytestmark = pytest.mark.integration


class RefusingLister:
    """A provider that refuses the day (the batch ends failed at once)."""

    def iter_listing(self, date: str) -> Any:
        raise FetchFailed("provider_refused: HTTP 403")


def flow_on_emulator(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
    provider: Any,
) -> BatchFlowService:
    return BatchFlowService(
        jobs=jobs,
        batches=batches,
        provider=provider,
        queue=JobQueue(clients.sqs, provisioned.queue_url or ""),
        clock=clock,
        new_uuid=lambda: str(uuid.uuid4()),
        events=EventBus(lambda: clients.events, "default"),
    )


def complete_all(jobs: JobsTable, date: str, entities: list[str]) -> Callable[[float], None]:
    """A wait that stands for the downloaders: every file of the day ends completed."""

    def finish(_: float) -> None:
        for entity in entities:
            file_id = f"{entity}-{date}"
            if jobs.require(file_id).status is JobStatus.AVAILABLE:
                jobs.claim(file_id, "w1", 60)
                jobs.complete(
                    file_id, "w1", byte_count=100, sha256="0" * 64, destination_key=file_id
                )

    return finish


def events_of(clients: AwsClients, provisioned: Provisioned, batch_id: str) -> list[dict[str, Any]]:
    assert provisioned.downstream_queue_url
    # moto's EventBridge delivers to the queue within PutEvents: one empty receive ends it.
    received = received_events(clients, provisioned.downstream_queue_url, rounds=1)
    return [e for e in received if e["detail"]["batch_id"] == batch_id]


def assert_one_event(events: list[dict[str, Any]], detail_type: str, status: str) -> dict[str, Any]:
    assert [e["detail-type"] for e in events] == [detail_type]
    event = events[0]
    assert event["source"] == "dlpipe"
    jsonschema.validate(event["detail"], DETAIL_SCHEMA)
    detail: dict[str, Any] = event["detail"]
    assert detail["status"] == status
    assert detail["event_id"] == event_id(
        "default", detail["date"], detail["batch_id"], detail_type, detail
    )
    return detail


@pytest.mark.parametrize("date", ["2026-03-02"])
def test_a_completed_day_sends_one_day_completed_event_to_the_downstream_queue(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
    date: str,
) -> None:
    entities = [f"handoff{uuid.uuid4().hex[:8]}", f"handoff{uuid.uuid4().hex[:8]}"]
    lister = FakeLister([descriptor(e, date) for e in entities])
    flow = flow_on_emulator(clients, provisioned, jobs, batches, clock, lister)
    steps = InlineSteps(sleep=complete_all(jobs, date, entities))
    result = run_inline(flow, {"date": date, "rerun": True}, PollingPlan(60, 3), steps=steps)
    assert result["status"] == "completed"
    detail = assert_one_event(
        events_of(clients, provisioned, result["batch_id"]), "Day Completed", "completed"
    )
    assert detail["counts"] == {
        "expected": 2,
        "completed": 2,
        "failed": 0,
        "error": 0,
        "pending": 0,
    }
    assert detail["manifest"] is None  # until the day's manifest is written before it


def test_a_timed_out_day_sends_day_timed_out_with_its_pending_files(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    date = "2026-03-03"
    entities = [f"handoff{uuid.uuid4().hex[:8]}"]
    lister = FakeLister([descriptor(e, date) for e in entities])
    flow = flow_on_emulator(clients, provisioned, jobs, batches, clock, lister)
    result = run_inline(flow, {"date": date, "rerun": True}, PollingPlan(60, 1))
    assert result["status"] == "timeout"
    detail = assert_one_event(
        events_of(clients, provisioned, result["batch_id"]), "Day Timed Out", "timeout"
    )
    assert detail["counts"]["pending"] == 1


def test_a_refused_listing_sends_day_failed_with_its_cause(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    flow = flow_on_emulator(clients, provisioned, jobs, batches, clock, RefusingLister())
    result = run_inline(flow, {"date": "2026-03-04", "rerun": True}, PollingPlan(60, 1))
    assert result["status"] == "failed"
    detail = assert_one_event(
        events_of(clients, provisioned, result["batch_id"]), "Day Failed", "failed"
    )
    assert detail["errors"]["cause"] == "provider_refused: HTTP 403"

"""One event ID, one content, across runs: a run that attaches to a batch another run ended
re-sends the batch's event byte for byte, or withholds it and names why (the manifest is no
longer the one the event named); `Day Late` goes out once however many runs watch the day.
DynamoDB Local, moto's S3 and EventBridge (a rule to the downstream queue)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.manifest import DayPointer, pointer_key
from dlpipe.local.provision import Provisioned
from dlpipe.services.orchestrator.announce import DayDeadline
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.fakes.provider import FakeLister, descriptor
from tests.integration.test_handoff_events import complete_all, events_of, flow_on_emulator
from tests.support import ManualClock, unique_day

pytestmark = pytest.mark.integration
# Long past for the test clock: a deadline of the day has passed.
DEADLINE = DayDeadline("00:00", "UTC", 0)


def _date() -> str:
    """A date of its own: a run attaches to the date's running batch, whoever made it."""
    return unique_day(2001, 2019)


def _day(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> tuple[str, list[str], Callable[[], BatchFlowService]]:
    date = _date()
    entities = [f"once{uuid.uuid4().hex[:8]}" for _ in range(2)]
    lister = FakeLister([descriptor(e, date) for e in entities])

    def flow() -> BatchFlowService:
        built = flow_on_emulator(clients, provisioned, jobs, batches, clock, lister)
        built.manifests = S3ManifestStore(clients.s3, str(provisioned.destination_bucket))
        return built

    return date, entities, flow


def _completed_day(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> tuple[str, dict[str, Any], Callable[[], BatchFlowService]]:
    date, entities, flow = _day(clients, provisioned, jobs, batches, clock)
    steps = InlineSteps(sleep=complete_all(jobs, date, entities))
    first = run_inline(flow(), {"date": date, "rerun": True}, PollingPlan(60, 3), steps=steps)
    assert first["status"] == "completed"
    assert first["manifest"] is not None
    return date, first, flow


def _pointer(clients: AwsClients, bucket: str, date: str) -> DayPointer:
    body = clients.s3.get_object(Bucket=bucket, Key=pointer_key("default", date))["Body"].read()
    return DayPointer.from_bytes(body)


def test_an_attach_re_sends_the_batchs_event_byte_for_byte(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """The attaching run builds the event anew (here with a deadline the first run had not:
    another content), yet what goes out is the batch's event as first sent."""
    date, first, flow = _completed_day(clients, provisioned, jobs, batches, clock)
    again = run_inline(flow(), {"date": date}, PollingPlan(60, 3, DEADLINE))
    assert (again["batch_id"], again["status"]) == (first["batch_id"], "completed")
    assert "handoff_problem" not in again
    events = events_of(clients, provisioned, first["batch_id"])
    assert [e["detail-type"] for e in events] == ["Day Completed", "Day Completed"]
    assert events[0]["detail"] == events[1]["detail"]
    assert events[0]["detail"]["deadline_at"] is None  # the first run's


def test_an_attach_after_the_manifest_was_overwritten_withholds_the_event_and_says_so(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """No second `Day Completed` (with `manifest: null`, or any other content): the run's
    result and the batch item name `manifest_tampered`; a later clean attach clears it."""
    date, first, flow = _completed_day(clients, provisioned, jobs, batches, clock)
    bucket, key = first["manifest"]["bucket"], first["manifest"]["key"]
    original = clients.s3.get_object(Bucket=bucket, Key=key)
    body, metadata = original["Body"].read(), original["Metadata"]
    clients.s3.put_object(Bucket=bucket, Key=key, Body=b'{"by": "hand"}')
    again = run_inline(flow(), {"date": date}, PollingPlan(60, 3))
    assert again["status"] == "completed"
    assert again["handoff_problem"].startswith(f"manifest_tampered: the manifest {key} conflicts")
    assert batches.require(first["batch_id"]).handoff_problem == again["handoff_problem"]
    sent = events_of(clients, provisioned, first["batch_id"])
    named = ("uri", "version_id", "sha256", "file_list_uri")
    assert [{k: e["detail"]["manifest"][k] for k in named} for e in sent] == [
        {k: first["manifest"][k] for k in named}
    ]
    # The manifest's bytes put back (a new version): the pointer moves to it, and the event
    # sent named the one before, so that is named too.
    clients.s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata=metadata)
    third = run_inline(flow(), {"date": date}, PollingPlan(60, 3))
    assert third["handoff_problem"].startswith(f"manifest_recreated: s3://{bucket}/{key} is ")
    assert events_of(clients, provisioned, first["batch_id"]) == []


def test_an_attach_after_the_manifest_was_deleted_re_points_the_day_and_names_it(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """The only version deleted: the attaching run writes the manifest again (a new version),
    latest.json follows it, and the run names `manifest_recreated` instead of sending an
    event that names another version under the day's outcome."""
    date, first, flow = _completed_day(clients, provisioned, jobs, batches, clock)
    ref = first["manifest"]
    clients.s3.delete_object(Bucket=ref["bucket"], Key=ref["key"], VersionId=ref["version_id"])
    again = run_inline(flow(), {"date": date}, PollingPlan(60, 3))
    assert again["handoff_problem"].startswith("manifest_recreated: ")
    assert ref["version_id"] in again["handoff_problem"]
    current = clients.s3.head_object(Bucket=ref["bucket"], Key=ref["key"])["VersionId"]
    assert current != ref["version_id"]
    assert _pointer(clients, ref["bucket"], date).version_id == current
    assert [
        e["detail"]["manifest"]["version_id"]
        for e in events_of(clients, provisioned, first["batch_id"])
    ] == [ref["version_id"]]


def test_day_late_goes_out_once_across_two_runs_watching_the_day(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """Run A passes the deadline and sends Day Late; run B attaches while the batch runs and
    passes it too, then sees the files done. One Day Late, and the two runs' Day Completed
    are one content."""
    date, entities, flow = _day(clients, provisioned, jobs, batches, clock)
    finish = complete_all(jobs, date, entities)
    waits = {"a": 0, "b": 0}

    def b_sleep(seconds: float) -> None:
        waits["b"] += 1
        if waits["b"] == 2:
            finish(seconds)

    def a_sleep(_: float) -> None:
        waits["a"] += 1
        if waits["a"] == 2:  # after A's first check (and its Day Late)
            b = run_inline(
                flow(), {"date": date}, PollingPlan(60, 3, DEADLINE), steps=InlineSteps(b_sleep)
            )
            assert b["status"] == "completed"

    a = run_inline(
        flow(),
        {"date": date, "rerun": True},
        PollingPlan(60, 3, DEADLINE),
        steps=InlineSteps(a_sleep),
    )
    assert a["status"] == "completed"
    events = events_of(clients, provisioned, a["batch_id"])
    kinds = [e["detail-type"] for e in events]
    assert kinds.count("Day Late") == 1, kinds
    completed = [e["detail"] for e in events if e["detail-type"] == "Day Completed"]
    assert len(completed) == 2
    assert completed[0] == completed[1]

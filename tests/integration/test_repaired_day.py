"""A timed-out day repaired by a second run, against the emulator: two executions of one date
share a batch (the second attached while it was queued); the first runs out of polls and ends
it timeout, a file is repaired, and the second's check ends it completed. Each outcome has its
own manifest and event; the pointer and the audit follow the completed one."""

from __future__ import annotations

import hashlib
import queue
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.manifest import parse_manifest, pointer_key
from dlpipe.local.provision import Provisioned
from dlpipe.services.ops.audit import AuditDeps, audit_manifests
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.fakes.provider import FakeLister, descriptor
from tests.integration.test_handoff_events import events_of, flow_on_emulator
from tests.support import ManualClock, unique_day

pytestmark = pytest.mark.integration
WAIT_S = 30  # bound on each hand-over between the two runs' threads


def _publisher(clients: AwsClients, bucket: str, jobs: JobsTable) -> Callable[[str], None]:
    """What a downloader does for one file: the object (with its SHA-256), then the job."""

    def publish(file_id: str) -> None:
        body = f"file {file_id}".encode()
        sha = hashlib.sha256(body).hexdigest()
        key = f"repaired/{file_id}"
        clients.s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata={"sha256": sha})
        jobs.claim(file_id, "w1", 60)
        jobs.complete(file_id, "w1", byte_count=len(body), sha256=sha, destination_key=key)

    return publish


def _day_objects(clients: AwsClients, bucket: str, date: str) -> list[tuple[str, str]]:
    prefix = pointer_key("default", date).rsplit("/", 1)[0] + "/"
    listed = clients.s3.list_object_versions(Bucket=bucket, Prefix=prefix)
    return sorted((v["Key"], v["VersionId"]) for v in listed.get("Versions", []))


def test_a_repaired_day_has_a_completed_manifest_the_pointer_events_and_audit_follow(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """The first run's Day Timed Out names the timeout manifest; the second run's Day Completed
    names the batch's completed manifest, which latest.json names; the audit passes; the
    timeout manifest stays; a replay of the step writes nothing."""
    date, bucket = unique_day(), str(provisioned.destination_bucket)
    entities = [f"repair{uuid.uuid4().hex[:8]}" for _ in range(2)]
    file_ids = [f"{e}-{date}" for e in entities]
    flow = flow_on_emulator(
        clients,
        provisioned,
        jobs,
        batches,
        clock,
        FakeLister([descriptor(e, date) for e in entities]),
    )
    flow.manifests = S3ManifestStore(clients.s3, bucket)
    repairs: queue.Queue[tuple[str, threading.Event] | None] = queue.Queue()

    def repairer() -> None:
        # Started here, outside either run: its calls are the downloaders', not inside the
        # orchestrator's stack (the IAM checker follows a thread's stack from its start).
        publish = _publisher(clients, bucket, jobs)
        while (asked := repairs.get()) is not None:
            publish(asked[0])
            asked[1].set()

    def publish(file_id: str) -> None:
        done = threading.Event()
        repairs.put((file_id, done))
        assert done.wait(WAIT_S)

    repair_thread = threading.Thread(target=repairer)
    repair_thread.start()
    attached, first_done = threading.Event(), threading.Event()
    second: dict[str, Any] = {}
    raised: list[str] = []

    def second_waits(_: float) -> None:
        attached.set()
        assert first_done.wait(WAIT_S)
        publish(file_ids[1])  # the repair: the stuck file completes after the timeout

    def second_run() -> None:
        steps = InlineSteps(sleep=second_waits)
        try:
            second.update(run_inline(flow, {"date": date}, PollingPlan(60, 1), steps=steps))
        except Exception as exc:  # a thread's error is otherwise only a warning
            raised.append(repr(exc))

    def first_waits(_: float) -> None:
        thread.start()
        assert attached.wait(WAIT_S)
        publish(file_ids[0])

    thread = threading.Thread(target=second_run)
    try:
        first = run_inline(flow, {"date": date}, PollingPlan(60, 1), steps=InlineSteps(first_waits))
    finally:
        first_done.set()
        if thread.ident is not None:  # started by the first run's wait
            thread.join(WAIT_S)
        repairs.put(None)
        repair_thread.join(WAIT_S)
    assert raised == []
    assert (first["status"], second["status"]) == ("timeout", "completed")
    assert first["batch_id"] == second["batch_id"]
    timed_out, repaired = first["manifest"], second["manifest"]
    assert timed_out["key"] != repaired["key"]
    by_type = {
        e["detail-type"]: e["detail"] for e in events_of(clients, provisioned, first["batch_id"])
    }
    assert by_type["Day Timed Out"]["manifest"]["uri"] == timed_out["uri"]
    assert by_type["Day Completed"]["manifest"]["uri"] == repaired["uri"]
    pointer = flow.manifests.read_pointer("default", date)
    assert pointer is not None
    assert (pointer[0].key, pointer[0].status) == (repaired["key"], "completed")
    timeout_doc = parse_manifest(flow.manifests.read_object(timed_out["key"]) or b"")
    assert (timeout_doc.header.status, len(timeout_doc.entries)) == ("timeout", 1)
    deps = AuditDeps(batches, jobs, flow.manifests)
    (check,) = audit_manifests(deps, [date], "default")
    assert (check.problems, check.manifest_key, check.entries) == ([], repaired["key"], 2)
    objects = _day_objects(clients, bucket, date)
    assert flow.write_manifest(first["batch_id"]) == repaired  # a replay of either run's step
    assert _day_objects(clients, bucket, date) == objects

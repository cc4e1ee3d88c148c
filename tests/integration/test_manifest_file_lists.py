"""The day manifest names every expected file, and its file lists are read by the tools a
consumer has, all against the emulators over HTTP: a real batch run (the orchestrator's flow
with the S3 manifest store) for a completed, a timed-out and a refused day; each object is
downloaded from the local S3 as a consumer would."""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.manifest import pointer_key
from dlpipe.domain.manifest_lists import FILE_LIST_KEYS
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.fakes.provider import FakeLister, descriptor
from tests.integration.test_handoff_events import (
    RefusingLister,
    assert_one_event,
    events_of,
    flow_on_emulator,
)
from tests.support import ManualClock, unique_day

pytestmark = pytest.mark.integration
SIZE = 100
SHA = "0" * 64


def _run(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
    provider: Any,
    date: str,
    steps: InlineSteps | None = None,
) -> dict[str, Any]:
    flow = flow_on_emulator(clients, provisioned, jobs, batches, clock, provider)
    flow.manifests = S3ManifestStore(clients.s3, str(provisioned.destination_bucket))
    plan = PollingPlan(60, 3 if steps else 1)
    return dict(run_inline(flow, {"date": date, "rerun": True}, plan, steps=steps))


def _get(clients: AwsClients, provisioned: Provisioned, key: str) -> bytes:
    got = clients.s3.get_object(Bucket=str(provisioned.destination_bucket), Key=key)
    return bytes(got["Body"].read())


def _complete(
    clients: AwsClients, provisioned: Provisioned, jobs: JobsTable, file_ids: list[str]
) -> Callable[[float], None]:
    """A wait that stands for the downloaders: each file published (its object stored with its
    SHA-256 metadata, as a worker does: here before the run, outside the orchestrator's steps,
    whose role never writes a file) and its job completed."""
    for file_id in file_ids:
        clients.s3.put_object(
            Bucket=str(provisioned.destination_bucket), Key=f"lists/{file_id}",
            Body=b"x" * SIZE, Metadata={"sha256": SHA},
        )  # fmt: skip

    def finish(_: float) -> None:
        for file_id in file_ids:
            if jobs.require(file_id).status is JobStatus.AVAILABLE:
                jobs.claim(file_id, "w1", 60)
                jobs.complete(
                    file_id, "w1", byte_count=SIZE, sha256=SHA, destination_key=f"lists/{file_id}"
                )

    return finish


def test_a_completed_days_file_list_reads_in_pandas_and_its_copy_manifest_has_only_copys_keys(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """pandas.read_json(lines=True) reads the JSON Lines list downloaded from S3 in one call,
    its columns exactly the documented keys and its values the published objects'; the COPY
    manifest is {"entries": [{url, mandatory, meta.content_length}]}; the manifest and the
    pointer name both, with SHA-256 and size that verify."""
    date = unique_day()
    entities = sorted(f"lists{uuid.uuid4().hex[:8]}" for _ in range(3))
    file_ids = [f"{e}-{date}" for e in entities]
    steps = InlineSteps(sleep=_complete(clients, provisioned, jobs, file_ids))
    lister = FakeLister([descriptor(e, date) for e in entities])
    result = _run(clients, provisioned, jobs, batches, clock, lister, date, steps)
    assert result["status"] == "completed"
    bucket = str(provisioned.destination_bucket)
    manifest = json.loads(_get(clients, provisioned, result["manifest"]["key"]))
    listed = _get(clients, provisioned, manifest["file_list"]["key"])

    frame = pd.read_json(io.BytesIO(listed), lines=True, dtype=False)

    assert sorted(frame.columns) == sorted(FILE_LIST_KEYS)
    assert list(frame["file_id"]) == file_ids
    assert list(frame["entity"]) == entities
    assert list(frame["s3_uri"]) == [f"s3://{bucket}/lists/{f}" for f in file_ids]
    assert list(frame["size"]) == [SIZE] * 3
    assert list(frame["sha256"]) == [SHA] * 3
    versions = [
        clients.s3.head_object(Bucket=bucket, Key=f"lists/{f}")["VersionId"] for f in file_ids
    ]
    assert list(frame["version_id"]) == versions
    copy = json.loads(_get(clients, provisioned, manifest["copy_manifest"]["key"]))
    assert list(copy) == ["entries"]
    assert copy["entries"] == manifest["entries"]
    for entry in copy["entries"]:
        assert sorted(entry) == ["mandatory", "meta", "url"]
        assert list(entry["meta"]) == ["content_length"]
    for named in (manifest["file_list"], manifest["copy_manifest"]):
        body = _get(clients, provisioned, named["key"])
        assert (named["size"], named["uri"]) == (len(body), f"s3://{bucket}/{named['key']}")
        assert named["sha256"] == hashlib.sha256(body).hexdigest()
    pointer = json.loads(_get(clients, provisioned, pointer_key("default", date)))
    assert pointer["file_list_key"] == manifest["file_list"]["key"]
    assert pointer["copy_key"] == manifest["copy_manifest"]["key"]
    detail = assert_one_event(
        events_of(clients, provisioned, result["batch_id"]), "Day Completed", "completed"
    )
    assert detail["manifest"]["file_list_uri"] == manifest["file_list"]["uri"]
    assert manifest["unpublished"] == []


def test_a_timed_out_days_manifest_lists_the_file_that_never_arrived_as_pending(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """Nothing downloads: the day times out, its manifest names the file (pending), its counts
    add up, its cause is the outcome summary's; the Day Timed Out event names it too."""
    date, entity = unique_day(), f"orders{uuid.uuid4().hex[:8]}"
    lister = FakeLister([descriptor(entity, date)])
    result = _run(clients, provisioned, jobs, batches, clock, lister, date)
    assert result["status"] == "timeout"
    manifest = json.loads(_get(clients, provisioned, result["manifest"]["key"]))
    assert manifest["unpublished"] == [
        {"file_id": f"{entity}-{date}", "entity": entity, "status": "pending", "error_code": None}
    ]
    assert manifest["counts"] == {
        "expected": 1, "completed": 0, "failed": 0, "error": 0, "pending": 1,
    }  # fmt: skip
    assert manifest["cause"].startswith("timeout: 1 file(s) still pending")
    assert manifest["copy_manifest"] is None  # no file: COPY would refuse an empty manifest
    assert _get(clients, provisioned, manifest["file_list"]["key"]) == b""
    detail = assert_one_event(
        events_of(clients, provisioned, result["batch_id"]), "Day Timed Out", "timeout"
    )
    assert detail["errors"]["codes"] == [
        {"code": "pending", "count": 1, "files": [f"{entity}-{date}"]}
    ]


def test_a_day_refused_before_listing_says_why_in_its_manifest(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """The provider refused the day: nothing expected, and the manifest carries the cause."""
    date = unique_day()
    result = _run(clients, provisioned, jobs, batches, clock, RefusingLister(), date)
    assert result["status"] == "failed"
    manifest = json.loads(_get(clients, provisioned, result["manifest"]["key"]))
    assert manifest["cause"] == "provider_refused: HTTP 403"
    assert manifest["counts"]["expected"] == 0
    assert (manifest["entries"], manifest["unpublished"]) == ([], [])

"""The day manifest against the emulator: a real day with workers, its manifest compared with
the nothing-lost invariant's findings, a replayed write-manifest step, and a rerun's manifest
superseding the first through the day's pointer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.executor import Executor

from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.manifest import (
    copy_manifest_key,
    file_list_key,
    manifest_key,
    parse_manifest,
    pointer_key,
)
from dlpipe.domain.model import JobStatus
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.provider_support import StubFactory
from tests.reliability.rig import (
    CallCounter,
    CrashOnce,
    Rig,
    counted_clients,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
FILES = 6
LEASE_S = 10


def _files() -> list[StubFileSpec]:
    entity = unique_entity()
    return [
        StubFileSpec(f"{entity}{i}", 300 * (i + 1), CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(FILES)
    ]


def _flow(rig: Rig, stub: Any, counter: CallCounter) -> BatchFlowService:
    flow = rig.flow(stub)
    flow.manifests = S3ManifestStore(counted_clients(counter).s3, rig.bucket)
    return flow


def _versions(rig: Rig, key: str) -> int:
    listed = rig.clients.s3.list_object_versions(Bucket=rig.bucket, Prefix=key)
    return len([v for v in listed.get("Versions", []) if v["Key"] == key])


def _pointer(rig: Rig, day: str) -> dict[str, Any]:
    body = rig.clients.s3.get_object(Bucket=rig.bucket, Key=pointer_key("default", day))["Body"]
    return dict(json.loads(body.read()))


def test_the_manifest_lists_exactly_the_verified_objects_and_a_replay_writes_nothing(
    rig: Rig, stub_factory: StubFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A completed day's manifest names exactly the objects the invariant checker verified
    (key, size, SHA-256, the object's one version); the invocation dying right after the
    write-manifest step's work replays it, and the replay PUTs nothing."""
    monkeypatch.setattr(Executor, "RETRY_BACKOFF_SECONDS", 0)
    day, stub, counter = unique_day(), stub_factory(_files()), CallCounter()
    flow = _flow(rig, stub, counter)
    crash = CrashOnce(flow, "write_manifest", after=True)
    services = [rig.service(stub, lease_seconds=LEASE_S) for _ in range(2)]
    with rig.thread_workers(services, concurrency=2):
        result = rig.run_day(flow, day)
    facts = rig.check_day(day, result["batch_id"], stub.expected(day))
    assert crash.crashed
    assert crash.calls == 2  # the step's body ran again on the replay
    key = manifest_key("default", day, result["batch_id"], "completed")
    assert counter.published[key] == 1  # the replay found it and verified it: no second PUT
    assert _versions(rig, key) == 1
    # The file list, the COPY manifest, the manifest and its pointer, once each.
    assert counter.calls["s3.PutObject"] == 4
    lists = (file_list_key("default", day, result["batch_id"], "completed"),)
    lists += (copy_manifest_key("default", day, result["batch_id"], "completed"),)
    assert [counter.published[k] for k in lists] == [1, 1]
    assert [_versions(rig, k) for k in lists] == [1, 1]
    body = rig.clients.s3.get_object(Bucket=rig.bucket, Key=key)["Body"].read()
    manifest = parse_manifest(body)
    completed = {f: facts.jobs[f] for f in facts.by_status(JobStatus.COMPLETED)}
    assert [e.file_id for e in manifest.entries] == sorted(completed) == sorted(stub.expected(day))
    for entry in manifest.entries:
        head = rig.clients.s3.head_object(Bucket=rig.bucket, Key=entry.key)
        job = completed[entry.file_id]
        assert (entry.key, entry.size, entry.sha256) == (
            job.destination_key,
            job.byte_count,
            job.sha256,
        )
        assert entry.version_id == head["VersionId"]
        assert entry.url == f"s3://{rig.bucket}/{job.destination_key}"
    assert manifest.header.status == "completed"
    assert (manifest.header.expected, manifest.header.completed) == (FILES, FILES)
    assert result["manifest"]["key"] == key
    assert result["manifest"]["entries"] == FILES
    assert result["manifest"]["uri"] == f"s3://{rig.bucket}/{key}"
    pointer = _pointer(rig, day)
    assert (pointer["batch_id"], pointer["key"]) == (result["batch_id"], key)
    assert pointer["sha256"] == result["manifest"]["sha256"]


def test_a_reruns_completed_manifest_supersedes_the_first_through_the_pointer(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """A rerun of a completed day whose hand-off was withheld writes its own manifest (the
    whole day's files, those the first batch completed included) and the day's pointer moves
    to it; the first stays."""
    day, stub, counter = unique_day(), stub_factory(_files()), CallCounter()
    flow = _flow(rig, stub, counter)
    services = [rig.service(stub, lease_seconds=LEASE_S) for _ in range(2)]
    with rig.thread_workers(services, concurrency=2):
        first = rig.run_day(flow, day)
        # A withheld hand-off is the one a rerun repairs with a new batch (rerun_starts_anew).
        flow.batches.record_handoff_problem(first["batch_id"], "manifest_failed: test")
        handler = build_durable_handler(lambda: flow, 1, 60)
        second = run_durable_locally(
            handler, {"date": day, "rerun": True}, skip_time=False, timeout_seconds=120
        )
    assert second["batch_id"] != first["batch_id"]
    assert (first["status"], second["status"]) == ("completed", "completed")
    pointer = _pointer(rig, day)
    assert pointer["batch_id"] == second["batch_id"]
    assert pointer["key"] == second["manifest"]["key"]
    rerun = parse_manifest(
        rig.clients.s3.get_object(Bucket=rig.bucket, Key=pointer["key"])["Body"].read()
    )
    assert [e.file_id for e in rerun.entries] == sorted(stub.expected(day))
    assert _versions(rig, first["manifest"]["key"]) == 1

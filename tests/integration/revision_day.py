"""A restated day seeded into an ops test's world (emulator tables, moto S3), written through
the adapters as the restatement and the worker leave it (tests/e2e/test_restatements.py makes
one end to end): batch 1 completed `keep`, `change` and `gone` and wrote its manifest; revision
2 then changed `change` (a second version of its object), added `new` and withdrew `gone`, and
wrote its manifest, which latest.json names. Each batch's hand-off event is recorded on its
item as publish-outcome-event records it (`Day Completed`, then `Day Revised`)."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, replace
from typing import Any

from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.items import job_to_item
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.handoff_events import (
    DAY_COMPLETED,
    DAY_REVISED,
    DayCounts,
    DayFacts,
    build_event,
)
from dlpipe.domain.manifest_lists import ManifestRef
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus, make_file_id
from dlpipe.domain.statuses import FINISHED_BATCH_EVENT
from dlpipe.services.orchestrator.manifest import write_manifest
from tests.integration.test_ops_fixtures import World
from tests.support import ManualClock, make_job

ROLES = ("keep", "change", "gone", "new")


@dataclass
class Stores:
    """What write-manifest reads of the flow."""

    batches: BatchesTable
    jobs: JobsTable
    manifests: S3ManifestStore
    clock: ManualClock


@dataclass
class RevisionDay:
    """The seeded day: its two batches, each role's FileID and object key, each object's
    versions (oldest first) and the two manifests as write-manifest reported them."""

    bucket: str
    first: Batch
    revision: Batch
    ids: dict[str, str]
    keys: dict[str, str]
    versions: dict[str, list[str]]
    first_ref: ManifestRef
    revision_ref: ManifestRef | None


def wire_bucket(world: World, bucket: str) -> None:
    """The world's OpsContext reading the day manifests in `bucket`."""
    world.ops = world.rewired(replace(world.ops.settings, destination_bucket=bucket))


def _publish(world: World, bucket: str, key: str, body: bytes) -> tuple[str, str]:
    """Put `body` at `key` (a new version) with its SHA-256 metadata; (version, SHA-256)."""
    sha = hashlib.sha256(body).hexdigest()
    put = world.clients.s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata={"sha256": sha})
    return str(put["VersionId"]), sha


def _put_job(world: World, job: FileJob) -> None:
    """A job item as the restatement's writes leave it (its BatchIndex shards included)."""
    world.clients.dynamodb.put_item(TableName=world.jobs.table_name, Item=job_to_item(job))
    if job.file_id not in world.created_jobs:
        world.created_jobs.append(job.file_id)


def _completed(world: World, entity: str, batch_id: str, key: str, body: bytes) -> FileJob:
    return make_job(
        entity, world.day, batch_id=batch_id, now_ms=world.clock.now,
        status=JobStatus.COMPLETED, byte_count=len(body),
        sha256=hashlib.sha256(body).hexdigest(), destination_key=key,
    )  # fmt: skip


def _record_event(world: World, batch: Batch, detail_type: str, ref: ManifestRef) -> None:
    """The outcome event as publish-outcome-event records it on the batch item."""
    counts = DayCounts(batch.completed, batch.failed_count or 0, batch.error_count or 0, 0)
    facts = DayFacts(
        "default", world.day, batch.batch_id, str(batch.status), counts, manifest=ref.to_dict()
    )
    event = build_event(detail_type, facts)
    world.batches.record_handoff(
        batch.batch_id, str(batch.status), detail_type, json.dumps(event.to_dict())
    )


def seed_revision_day(
    world: World,
    bucket: str,
    *,
    revision_status: BatchStatus = BatchStatus.COMPLETED,
    revision_event: bool = True,
) -> RevisionDay:
    """The restated day (module docstring). `revision_status`: how revision 2 ended (or that
    it still runs: no manifest then); `revision_event`: whether its Day Revised is recorded."""
    wire_bucket(world, bucket)
    manifests = S3ManifestStore(world.clients.s3, bucket)
    stores = Stores(world.batches, world.jobs, manifests, world.clock)
    tag = uuid.uuid4().hex[:8]
    names = {role: f"rv{role}{tag}" for role in ROLES}
    ids = {role: make_file_id(name, world.day) for role, name in names.items()}
    keys = {role: f"{names[role]}/{world.day}/{ids[role]}" for role in ROLES}
    done: dict[str, Any] = {"status": BatchStatus.COMPLETED, "failed_count": 0, "error_count": 0}
    first = world.batch(expected_count=3, completed_count=3, **done)
    versions: dict[str, list[str]] = {}
    for role in ("keep", "change", "gone"):
        body = f"old {role}".encode()
        versions[role] = [_publish(world, bucket, keys[role], body)[0]]
        _put_job(world, _completed(world, names[role], first.batch_id, keys[role], body))
    first_ref = write_manifest(stores, first.batch_id)
    assert first_ref is not None
    _record_event(world, first, DAY_COMPLETED, first_ref)

    world.clock.advance(3600)
    ended = revision_status is not BatchStatus.QUEUED
    changes: dict[str, Any] = {**done, "status": revision_status} if ended else {}
    revision = world.batch(
        expected_count=3, completed_count=3 if ended else 0, revision=2,
        revises=first.batch_id, **({"status": BatchStatus.QUEUED} | changes),
    )  # fmt: skip
    old_sha = hashlib.sha256(b"old change").hexdigest()
    version, _ = _publish(world, bucket, keys["change"], b"new change!")
    versions["change"].append(version)
    changed = _completed(world, names["change"], revision.batch_id, keys["change"], b"new change!")
    _put_job(world, replace(
        changed, revision=2, revised_as="changed", previous_version_id=versions["change"][0],
        previous_sha256=old_sha, previous_size=len(b"old change"),
    ))  # fmt: skip
    versions["new"] = [_publish(world, bucket, keys["new"], b"new file")[0]]
    added = _completed(world, names["new"], revision.batch_id, keys["new"], b"new file")
    _put_job(world, replace(added, revision=2, revised_as="added"))
    gone = _completed(world, names["gone"], first.batch_id, keys["gone"], b"old gone")
    _put_job(world, replace(gone, withdrawn_by=revision.batch_id))
    revision_ref = write_manifest(stores, revision.batch_id) if ended else None
    if revision_ref is not None and revision_event:
        completed = revision_status is BatchStatus.COMPLETED
        kind = DAY_REVISED if completed else FINISHED_BATCH_EVENT[revision_status]
        _record_event(world, world.batches.require(revision.batch_id), kind, revision_ref)
    return RevisionDay(
        bucket,
        world.batches.require(first.batch_id),
        world.batches.require(revision.batch_id),
        ids,
        keys,
        versions,
        first_ref,
        revision_ref,
    )

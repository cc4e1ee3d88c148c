"""`dlpipe batch audit` against the emulator: a day whose manifest the real write-manifest step
wrote (moto S3, DynamoDB Local), then broken one way at a time."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, replace
from datetime import date, timedelta

import pytest

from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.domain.handoff_events import DayCounts, DayFacts, build_event
from dlpipe.domain.manifest import pointer_key
from dlpipe.domain.model import BatchStatus
from dlpipe.local.provision import Provisioned
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.manifest import write_manifest
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


@dataclass(frozen=True)
class Day:
    """The seeded day: its batch, its objects' keys and the manifest's key."""

    batch_id: str
    keys: list[str]
    manifest_key: str
    bucket: str


@pytest.fixture
def day(world: World, provisioned: Provisioned) -> Day:
    """A completed day of three published files and its manifest, written by write-manifest."""
    bucket = _wire_bucket(world, provisioned)
    entity = f"aud{uuid.uuid4().hex[:8]}"
    batch = world.batch()
    keys = [_published(world, bucket, f"{entity}{n}", batch.batch_id) for n in range(3)]
    world.batches.mark_queued(batch.batch_id, [k.rsplit("/", 1)[1] for k in keys])
    world.batches.record_counts(batch.batch_id, completed=3, failed=0, error=0)
    world.batches.finish(batch.batch_id, BatchStatus.COMPLETED)
    ref = write_manifest(_flow(world, bucket), batch.batch_id)
    assert ref is not None
    assert ref.entries == 3
    return Day(batch.batch_id, keys, ref.key, bucket)


def _wire_bucket(world: World, provisioned: Provisioned) -> str:
    bucket = str(provisioned.destination_bucket)
    world.ops = world.rewired(replace(world.ops.settings, destination_bucket=bucket))
    return bucket


def _published(world: World, bucket: str, entity: str, batch_id: str, *, job: bool = True) -> str:
    """Publish a file of `entity` (its job created first, unless `job` is False) and complete
    its job; the object's key."""
    file_id = f"{entity}-{world.day}"
    if job:
        world.job(entity, batch_id=batch_id)
    body = f"file {file_id}".encode()
    sha = hashlib.sha256(body).hexdigest()
    key = f"{entity}/{world.day}/{file_id}"
    world.clients.s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata={"sha256": sha})
    world.jobs.claim(file_id, "w", 60)
    world.jobs.complete(file_id, "w", byte_count=len(body), sha256=sha, destination_key=key)
    return key


def _flow(world: World, bucket: str) -> BatchFlowService:
    return BatchFlowService(
        jobs=world.jobs,
        batches=world.batches,
        provider=None,  # type: ignore[arg-type]  # write-manifest lists nothing
        queue=None,  # type: ignore[arg-type]
        clock=world.clock,
        new_uuid=lambda: str(uuid.uuid4()),
        manifests=S3ManifestStore(world.clients.s3, bucket),
    )


def _audit(world: World, dlpipe_cli: CliRunner) -> tuple[int, list[str]]:
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day, "--json")
    return run.code, run.err.strip().splitlines()


def test_an_intact_day_audits_clean(world: World, dlpipe_cli: CliRunner, day: Day) -> None:
    """The completed day, its manifest and every object agree: exit 0, no problem line."""
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day, "--json")
    assert run.code == 0, run.err
    (checked,) = run.json()["dates"]
    assert (checked["batch"], checked["manifest"], checked["entries"]) == (
        day.batch_id,
        day.manifest_key,
        3,
    )
    assert checked["complete"] is True


def test_the_audit_names_a_deleted_object(world: World, dlpipe_cli: CliRunner, day: Day) -> None:
    """A deleted file (a delete marker in the versioned bucket) is one line, exit 1."""
    world.clients.s3.delete_object(Bucket=day.bucket, Key=day.keys[1])
    assert _audit(world, dlpipe_cli) == (1, [f"{world.day} default: object {day.keys[1]} missing"])


def test_the_audit_names_an_overwritten_object(
    world: World, dlpipe_cli: CliRunner, day: Day
) -> None:
    """An object written over (a new version, other bytes) no longer is the manifest's."""
    world.clients.s3.put_object(Bucket=day.bucket, Key=day.keys[0], Body=b"other bytes")
    code, lines = _audit(world, dlpipe_cli)
    assert code == 1
    (line,) = lines
    assert line.startswith(f"{world.day} default: object {day.keys[0]} changed: version ")


def test_the_audit_names_a_missing_manifest(world: World, dlpipe_cli: CliRunner, day: Day) -> None:
    """No pointer: the day's manifest is missing; a pointer to a deleted manifest: that."""
    pointer = pointer_key("default", world.day)
    got = world.clients.s3.get_object(Bucket=day.bucket, Key=pointer)["Body"].read()
    world.clients.s3.delete_object(Bucket=day.bucket, Key=pointer)
    assert _audit(world, dlpipe_cli) == (
        1,
        [f"{world.day} default: manifest missing (no latest.json)"],
    )
    world.clients.s3.put_object(Bucket=day.bucket, Key=pointer, Body=got)
    world.clients.s3.delete_object(Bucket=day.bucket, Key=day.manifest_key)
    assert _audit(world, dlpipe_cli) == (
        1,
        [f"{world.day} default: manifest {day.manifest_key} missing"],
    )


def test_the_audit_names_a_manifest_whose_bytes_changed(
    world: World, dlpipe_cli: CliRunner, day: Day
) -> None:
    """A manifest rewritten behind the pointer's back does not verify against its SHA-256."""
    world.clients.s3.put_object(Bucket=day.bucket, Key=day.manifest_key, Body=b"{}")
    assert _audit(world, dlpipe_cli) == (
        1,
        [
            f"{world.day} default: manifest {day.manifest_key} does not verify (SHA-256 or size differs)"
        ],
    )


def test_an_unreadable_pointer_is_one_line_not_a_traceback(
    world: World, dlpipe_cli: CliRunner, day: Day
) -> None:
    """Bytes at latest.json that are not a pointer are a problem line, exit 1."""
    pointer = pointer_key("default", world.day)
    world.clients.s3.put_object(Bucket=day.bucket, Key=pointer, Body=b"not json")
    code, lines = _audit(world, dlpipe_cli)
    assert code == 1
    (line,) = lines
    assert line.startswith(f"{world.day} default: latest.json unreadable: malformed pointer")


def _repaired_day(world: World, provisioned: Provisioned) -> tuple[str, str, str]:
    """A batch that timed out with one of its two files pending (its timeout manifest written),
    then ended completed once the file was published; its ID, the bucket and that manifest's
    key."""
    bucket = _wire_bucket(world, provisioned)
    entity = f"aud{uuid.uuid4().hex[:8]}"
    batch = world.batch()
    done = _published(world, bucket, f"{entity}0", batch.batch_id)
    late = world.job(f"{entity}1", batch_id=batch.batch_id)
    world.batches.mark_queued(batch.batch_id, [done.rsplit("/", 1)[1], late.file_id])
    world.batches.record_counts(batch.batch_id, completed=1, failed=0, error=0)
    world.batches.finish(
        batch.batch_id, BatchStatus.TIMEOUT, timeout_at=iso_from_ms(world.clock.now_ms())
    )
    timed_out = write_manifest(_flow(world, bucket), batch.batch_id)
    assert timed_out is not None
    _published(world, bucket, f"{entity}1", batch.batch_id, job=False)
    world.batches.record_counts(batch.batch_id, completed=2, failed=0, error=0)
    world.batches.finish(batch.batch_id, BatchStatus.COMPLETED)
    return batch.batch_id, bucket, timed_out.key


def test_a_timed_out_day_repaired_to_completed_audits_clean(
    world: World, dlpipe_cli: CliRunner, provisioned: Provisioned
) -> None:
    """A batch that timed out with a file pending, then completed once the file was repaired:
    its completed manifest is the one latest.json names, the audit passes, and the timeout
    manifest is still there, one version, unchanged."""
    batch_id, bucket, timeout_key = _repaired_day(world, provisioned)
    first = world.clients.s3.get_object(Bucket=bucket, Key=timeout_key)["Body"].read()
    repaired = write_manifest(_flow(world, bucket), batch_id)
    assert repaired is not None
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day, "--json")
    assert run.code == 0, run.err
    (checked,) = run.json()["dates"]
    assert (checked["batch"], checked["manifest"], checked["entries"]) == (
        batch_id,
        repaired.key,
        2,
    )
    versions = world.clients.s3.list_object_versions(Bucket=bucket, Prefix=timeout_key)
    assert [v["Key"] for v in versions["Versions"]] == [timeout_key]
    assert world.clients.s3.get_object(Bucket=bucket, Key=timeout_key)["Body"].read() == first


def test_a_repaired_day_still_pointing_at_its_timeout_manifest_is_named(
    world: World, dlpipe_cli: CliRunner, provisioned: Provisioned
) -> None:
    """The batch completed but its completed manifest was never written: the audit says the
    pointer names the batch's timeout manifest, not a completed one."""
    batch_id, _, timeout_key = _repaired_day(world, provisioned)
    code, lines = _audit(world, dlpipe_cli)
    assert code == 1
    assert lines[0] == (
        f"{world.day} default: latest.json names batch {batch_id}'s timeout manifest"
        f" {timeout_key}, not a completed one"
    )


def _only_version_deleted(world: World, day: Day) -> str:
    """Delete the manifest's one version outright (no delete marker); its version ID."""
    version = world.clients.s3.head_object(Bucket=day.bucket, Key=day.manifest_key)["VersionId"]
    world.clients.s3.delete_object(Bucket=day.bucket, Key=day.manifest_key, VersionId=version)
    return str(version)


def test_the_audit_names_a_manifest_re_created_behind_the_pointer(
    world: World, dlpipe_cli: CliRunner, day: Day
) -> None:
    """The named version deleted and the same bytes written again by hand: the bytes verify,
    but latest.json names a version that is gone."""
    head = world.clients.s3.get_object(Bucket=day.bucket, Key=day.manifest_key)
    body, metadata = head["Body"].read(), head["Metadata"]
    deleted = _only_version_deleted(world, day)
    world.clients.s3.put_object(
        Bucket=day.bucket, Key=day.manifest_key, Body=body, Metadata=metadata
    )
    code, lines = _audit(world, dlpipe_cli)
    assert code == 1
    (line,) = lines
    assert line.startswith(f"{world.day} default: manifest {day.manifest_key} is version ")
    assert line.endswith(f"latest.json names version {deleted} (deleted or re-created)")


def test_the_audit_names_a_re_created_manifest_the_sent_event_does_not_name(
    world: World, dlpipe_cli: CliRunner, day: Day
) -> None:
    """The write-manifest step writes the deleted manifest again and moves latest.json to it:
    pointer and object agree, but the `Day Completed` the batch sent named the deleted one."""
    sent = build_event(
        "Day Completed",
        DayFacts(
            "default",
            world.day,
            day.batch_id,
            "completed",
            DayCounts(3, 0, 0, 0),
            manifest=world_ref(world, day),
        ),
    )
    world.batches.record_handoff(
        day.batch_id, "completed", "Day Completed", json.dumps(sent.to_dict())
    )
    assert _audit(world, dlpipe_cli) == (0, [])
    deleted = _only_version_deleted(world, day)
    assert write_manifest(_flow(world, day.bucket), day.batch_id) is not None
    code, lines = _audit(world, dlpipe_cli)
    assert code == 1
    (line,) = lines
    assert line.startswith(
        f"{world.day} default: the Day Completed event sent named {day.manifest_key}"
        f" version {deleted}, latest.json names version "
    )


def world_ref(world: World, day: Day) -> dict[str, object]:
    """The manifest as the write-manifest step reported it (its current version)."""
    head = world.clients.s3.head_object(Bucket=day.bucket, Key=day.manifest_key)
    return {
        "uri": f"s3://{day.bucket}/{day.manifest_key}",
        "version_id": head["VersionId"],
        "sha256": head["Metadata"]["sha256"],
    }


def test_feeds_without_a_batch_are_one_line_together(
    world: World, dlpipe_cli: CliRunner, provisioned: Provisioned
) -> None:
    """Configured feeds that ran no batch on the dates audited: one line naming them all
    (before: two lines per feed and date, `no completed batch` and `manifest missing`); exit 1."""
    _wire_bucket(world, provisioned)
    world.ops.feeds = {
        DEFAULT_FEED.name: DEFAULT_FEED,
        **{f"aud-{n}": Feed(f"aud-{n}", "rate(1 day)", "UTC") for n in range(2, 5)},
    }
    after = (date.fromisoformat(world.day) + timedelta(days=1)).isoformat()
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", after)
    assert (run.code, run.err.strip().splitlines()) == (
        1,
        [
            "no batch (nor manifest) for 8 feed-date(s): default (every date),"
            " aud-2 (every date), aud-3 (every date), aud-4 (every date)"
        ],
    ), run.err

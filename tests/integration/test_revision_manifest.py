"""write-manifest of a revision batch against the emulators (moto S3, DynamoDB Local): a day
whose first batch completed and whose revision batch changed, added and withdrew a file,
written as the restatement leaves the job items (hand-written here), then its manifest, file
lists, pointer and a consumer's `show` read back."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, replace
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.items import job_to_item
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.manifest import ManifestConflictError, pointer_key
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus, make_file_id
from dlpipe.local.provision import Provisioned
from dlpipe.services.ops.handoff import show_day
from dlpipe.services.orchestrator.manifest import write_manifest
from tests.support import BASE_MS, make_batch, make_job, unique_day

pytestmark = pytest.mark.integration
OLD, NEW = "1" * 64, "2" * 64


@dataclass
class Stores:
    """What write-manifest reads of the flow."""

    batches: BatchesTable
    jobs: JobsTable
    manifests: S3ManifestStore


@dataclass
class Day:
    """The seeded day: its two batches, the entities by role and each object's versions."""

    date: str
    first: Batch
    revision: Batch
    names: dict[str, str]
    versions: dict[str, list[str]]


def _publish(clients: AwsClients, bucket: str, key: str, body: bytes, sha: str) -> str:
    put = clients.s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata={"sha256": sha})
    return str(put["VersionId"])


def _put_job(clients: AwsClients, provisioned: Provisioned, job: FileJob) -> None:
    """A job item as the restatement's writes leave it (its BatchIndex shards included)."""
    clients.dynamodb.put_item(TableName=provisioned.jobs_table, Item=job_to_item(job))


def _completed(date: str, entity: str, batch_id: str, size: int, sha: str) -> FileJob:
    file_id = make_file_id(entity, date)
    return make_job(
        entity, date, batch_id=batch_id, status=JobStatus.COMPLETED, byte_count=size,
        sha256=sha, destination_key=f"revised/{file_id}",
    )  # fmt: skip


def _batch(date: str, minutes: int, counts: tuple[int, int, int], **changes: Any) -> Batch:
    expected, completed, failed = counts
    return make_batch(
        date, now_ms=BASE_MS + minutes * 60_000, status=BatchStatus.COMPLETED,
        expected_count=expected, completed_count=completed, failed_count=failed,
        error_count=0, **changes,
    )  # fmt: skip


@pytest.fixture
def stores(
    clients: AwsClients, provisioned: Provisioned, jobs: JobsTable, batches: BatchesTable
) -> Stores:
    return Stores(batches, jobs, S3ManifestStore(clients.s3, str(provisioned.destination_bucket)))


@pytest.fixture
def day(clients: AwsClients, provisioned: Provisioned, stores: Stores) -> Day:
    """Batch 1 completed keep, change and gone (its manifest written); revision 2 then
    changed `change` (a new version), added `new`, withdrew `gone` and failed to get
    `broken`, a file new to the day."""
    date, tag = unique_day(), uuid.uuid4().hex[:8]
    names = {role: f"rev{role}{tag}" for role in ("keep", "change", "gone", "new", "broken")}
    bucket = str(provisioned.destination_bucket)
    first = stores.batches.create(_batch(date, 0, (3, 3, 0)))
    versions: dict[str, list[str]] = {}
    for role in ("keep", "change", "gone"):
        job = _completed(date, names[role], first.batch_id, 3, OLD)
        versions[role] = [_publish(clients, bucket, str(job.destination_key), b"old", OLD)]
        _put_job(clients, provisioned, job)
    assert write_manifest(stores, first.batch_id) is not None
    revision = stores.batches.create(
        _batch(date, 60, (4, 3, 1), revision=2, revises=first.batch_id)
    )
    changed = _completed(date, names["change"], revision.batch_id, 4, NEW)
    versions["change"].append(_publish(clients, bucket, str(changed.destination_key), b"new!", NEW))
    marks = {"revision": 2, "previous_sha256": OLD, "previous_size": 3}
    _put_job(clients, provisioned, replace(
        changed, revised_as="changed", previous_version_id=versions["change"][0], **marks,
    ))  # fmt: skip
    added = _completed(date, names["new"], revision.batch_id, 4, NEW)
    versions["new"] = [_publish(clients, bucket, str(added.destination_key), b"new!", NEW)]
    _put_job(clients, provisioned, replace(added, revision=2, revised_as="added"))
    gone = _completed(date, names["gone"], first.batch_id, 3, OLD)
    _put_job(clients, provisioned, replace(gone, withdrawn_by=revision.batch_id))
    broken = make_job(
        names["broken"], date, batch_id=revision.batch_id, status=JobStatus.FAILED,
        error_message="http_status: 404",
    )  # fmt: skip
    _put_job(clients, provisioned, broken)
    return Day(date, first, revision, names, versions)


def _get(clients: AwsClients, provisioned: Provisioned, key: str) -> bytes:
    got = clients.s3.get_object(Bucket=str(provisioned.destination_bucket), Key=key)
    return bytes(got["Body"].read())


def test_a_revisions_manifest_lists_the_days_current_files_marked_and_names_the_withdrawn(
    clients: AwsClients, provisioned: Provisioned, stores: Stores, day: Day
) -> None:
    """Entries: keep (unchanged), change (changed, with the version and SHA-256 it replaced)
    and new (added), never gone, which `withdrawn` names; the counts are those lists'; the
    JSON Lines and COPY lists hold the same three; it supersedes batch 1's manifest at its
    version, and latest.json now names it."""
    first_ref = stores.manifests.read_pointer("default", day.date)
    assert first_ref is not None
    ref = write_manifest(stores, day.revision.batch_id)
    assert ref is not None
    assert ref.revision is not None
    doc = json.loads(_get(clients, provisioned, ref.key))
    ids = {role: make_file_id(name, day.date) for role, name in day.names.items()}

    assert doc["revision"] == 2
    assert doc["supersedes"] == {"key": first_ref[0].key, "version_id": first_ref[0].version_id}
    files = {f["file_id"]: f for f in doc["files"]}
    assert sorted(files) == sorted([ids["keep"], ids["change"], ids["new"]])
    assert files[ids["keep"]]["revised"] == "unchanged"
    assert (
        files[ids["change"]]["revised"],
        files[ids["change"]]["version_id"],
        files[ids["change"]]["previous_version_id"],
        files[ids["change"]]["previous_sha256"],
    ) == ("changed", day.versions["change"][1], day.versions["change"][0], OLD)
    assert files[ids["new"]]["revised"] == "added"
    assert doc["withdrawn"] == [
        {"file_id": ids["gone"], "entity": day.names["gone"], "key": f"revised/{ids['gone']}",
         "sha256": OLD}
    ]  # fmt: skip
    assert [u["file_id"] for u in doc["unpublished"]] == [ids["broken"]]
    assert doc["counts"] == {
        "expected": 4, "completed": 3, "failed": 1, "error": 0, "pending": 0,
        "unchanged": 1, "changed": 1, "added": 1, "withdrawn": 1,
    }  # fmt: skip
    listed = _get(clients, provisioned, doc["file_list"]["key"]).decode().splitlines()
    copy = json.loads(_get(clients, provisioned, doc["copy_manifest"]["key"]))
    assert sorted(json.loads(line)["file_id"] for line in listed) == sorted(files)
    assert len(copy["entries"]) == 3
    assert ids["gone"] not in json.dumps(copy) + "".join(listed) + json.dumps(doc["entries"])
    pointer = json.loads(_get(clients, provisioned, pointer_key("default", day.date)))
    assert (pointer["batch_id"], pointer["key"]) == (day.revision.batch_id, ref.key)


def test_a_replayed_revision_step_renders_the_same_bytes_and_the_first_cannot_take_the_pointer(
    clients: AwsClients, provisioned: Provisioned, stores: Stores, day: Day
) -> None:
    """The revision's step again writes nothing and returns the same reference; batch 1's
    step replayed now renders other bytes (its changed file moved to the revision) and is
    refused, and latest.json stays on the revision."""
    ref = write_manifest(stores, day.revision.batch_id)
    assert write_manifest(stores, day.revision.batch_id) == ref
    with pytest.raises(ManifestConflictError):
        write_manifest(stores, day.first.batch_id)
    pointer = stores.manifests.read_pointer("default", day.date)
    assert pointer is not None
    assert pointer[0].batch_id == day.revision.batch_id


def test_a_consumer_sees_revision_2_and_show_checks_what_it_supersedes(
    clients: AwsClients, provisioned: Provisioned, stores: Stores, day: Day
) -> None:
    """`show` verifies the revision's objects at their versions and names it revision 2 with
    its counts; with the superseded manifest's version deleted it names that problem."""
    ref = write_manifest(stores, day.revision.batch_id)
    assert ref is not None
    bucket = str(provisioned.destination_bucket)
    checked = show_day(stores.manifests, bucket, "default", day.date)
    assert checked.ok, checked.problems
    assert (checked.handoff.revision, checked.verified) == (2, 3)
    assert checked.handoff.revised == {"changed": 1, "added": 1, "withdrawn": 1}
    superseded = json.loads(_get(clients, provisioned, ref.key))["supersedes"]
    clients.s3.delete_object(
        Bucket=bucket, Key=superseded["key"], VersionId=superseded["version_id"]
    )
    problems = show_day(stores.manifests, bucket, "default", day.date).problems
    assert problems == (
        f"revision 2 supersedes {superseded['key']} version {superseded['version_id']},"
        " which is missing",
    )

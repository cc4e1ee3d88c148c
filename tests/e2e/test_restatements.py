"""Restatements through `dlpipe run` (the console script against the emulator, a `dlpipe worker`
doing the files): a completed day run again with `--rerun` and an unchanged listing writes
nothing new; a day the vendor restates becomes a revision."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.manifest import (
    DayPointer,
    day_prefix,
    manifest_key,
    parse_manifest,
    pointer_key,
)
from dlpipe.domain.model import JobStatus, make_file_id
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from tests.e2e.test_repair_kit import Stack, run_dlpipe, run_settings, write_key
from tests.e2e.test_worker_kit import WorkerProcess, queues, worker_env
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
FILES = 3


def _day_objects(stack: Stack, day: str) -> list[tuple[str, str]]:
    """Every (key, version) under the day's manifest prefix."""
    listed: Any = stack.clients.s3.list_object_versions(
        Bucket=str(stack.provisioned.destination_bucket), Prefix=day_prefix("default", day)
    )
    return sorted((v["Key"], v["VersionId"]) for v in listed.get("Versions", []))


def test_a_rerun_of_an_unchanged_completed_day_writes_nothing_and_says_so(
    stack: Stack, entity: str, tmp_path: Path
) -> None:
    """`dlpipe run --date D --rerun` after D completed, the listing unchanged: exit 0, the
    same batch, no new batch item, no new manifest object or version, and a line saying so."""
    day = unique_day()
    stub = stack.stub([f"{entity}{n}" for n in range(FILES)])
    with queues(stack.clients) as q:
        settings = run_settings(stack.provisioned, "2000")  # > the recovery bound at 1 s a poll
        key = write_key(tmp_path, "ours.pem", stack.rsa_keypair[0])
        env = worker_env(stack.aws_env, stack.provisioned, q.url, key, stub=stub, **settings)
        worker = WorkerProcess(env, tmp_path / "w1.log")
        try:
            first = run_dlpipe(env, tmp_path, "run", "--date", day, columns=None)
        finally:
            worker.stop()
        assert first.returncode == 0, first.stderr
        before = _day_objects(stack, day)
        assert before  # the manifest, its lists and the pointer

        again = run_dlpipe(env, tmp_path, "run", "--date", day, "--rerun", columns=None)
    assert again.returncode == 0, again.stderr
    result, done = json.loads(again.stdout), json.loads(first.stdout)
    assert (result["batch_id"], result["status"]) == (done["batch_id"], "completed")
    said = " ".join(again.stderr.split())  # the terminal's lines, unwrapped
    assert "the day's batch ended before this run: unchanged, nothing queued or written" in said
    batches = BatchesTable(stack.clients.dynamodb, stack.provisioned.batches_table, SystemClock())
    assert [b.batch_id for b in batches.query_by_date(day)] == [done["batch_id"]]
    assert _day_objects(stack, day) == before


def _versions(stack: Stack, key: str) -> list[dict[str, Any]]:
    """The versions of `key`, newest first."""
    listed: Any = stack.clients.s3.list_object_versions(
        Bucket=str(stack.provisioned.destination_bucket), Prefix=key
    )
    return [v for v in listed.get("Versions", []) if v["Key"] == key]


def _plaintext_sha(stack: Stack, key: str, version_id: str | None = None) -> str:
    extra = {"VersionId": version_id} if version_id else {}
    body = stack.clients.s3.get_object(
        Bucket=str(stack.provisioned.destination_bucket), Key=key, **extra
    )["Body"].read()
    return hashlib.sha256(body).hexdigest()


def _run_day(
    stack: Stack, tmp_path: Path, day: str, specs: list[StubFileSpec], name: str
) -> tuple[StubProvider, dict[str, Any]]:
    """`dlpipe run --date day` against a stub listing `specs`, one `dlpipe worker` beside it."""
    stub = stack.stub_factory(specs)
    with queues(stack.clients) as q:
        settings = run_settings(stack.provisioned, "2000")
        key = write_key(tmp_path, "ours.pem", stack.rsa_keypair[0])
        env = worker_env(stack.aws_env, stack.provisioned, q.url, key, stub=stub, **settings)
        worker = WorkerProcess(env, tmp_path / f"{name}.log")
        try:
            done = run_dlpipe(env, tmp_path, "run", "--date", day, columns=None)
        finally:
            worker.stop()
    assert done.returncode == 0, done.stderr
    return stub, json.loads(done.stdout)


def test_a_restated_day_becomes_revision_2(stack: Stack, entity: str, tmp_path: Path) -> None:
    """A completed day of 3 files; the vendor re-publishes it with one file changed (other
    contents), one added and one withdrawn. The next `dlpipe run --date D` makes revision 2:
    a new batch revising the first, the changed file's object a second version of the same
    key holding the corrected plaintext, the added file published, the withdrawn one marked
    and its object left in place, the unchanged one untouched."""
    day = unique_day()
    same, changed, withdrawn, added = (f"{entity}{n}" for n in range(4))
    first = [StubFileSpec(e, 256, CIPHER_GCM) for e in (same, changed, withdrawn)]
    _, done = _run_day(stack, tmp_path, day, first, "first")
    assert done["status"] == "completed"
    restated = [
        StubFileSpec(same, 256, CIPHER_GCM),
        StubFileSpec(changed, 300, CIPHER_GCM),  # other contents: other size and SHA-256
        StubFileSpec(added, 256, CIPHER_GCM),
    ]
    stub, again = _run_day(stack, tmp_path, day, restated, "second")
    assert again["status"] == "completed"
    assert again["batch_id"] != done["batch_id"]
    batches = BatchesTable(stack.clients.dynamodb, stack.provisioned.batches_table, SystemClock())
    revision = batches.require(again["batch_id"])
    assert (revision.revision, revision.revises) == (2, done["batch_id"])
    # The day's current files: the unchanged one (still the first batch's), changed and added.
    assert (revision.expected, revision.completed, revision.failed_count) == (3, 3, 0)

    jobs = JobsTable(stack.clients.dynamodb, stack.provisioned.jobs_table, SystemClock())
    expected = stub.expected(day)
    ids = {e: make_file_id(e, day) for e in (same, changed, withdrawn, added)}
    for name in (same, changed, added):
        job = jobs.require(ids[name])
        assert job.status is JobStatus.COMPLETED, (name, job.status, job.error_message)
        assert job.destination_key is not None
        assert _plaintext_sha(stack, job.destination_key) == expected[ids[name]].sha256
    new = jobs.require(ids[changed])
    assert new.destination_key is not None
    versions = _versions(stack, new.destination_key)
    assert len(versions) == 2
    assert (new.revision, new.revised_as, new.batch_id) == (2, "changed", again["batch_id"])
    assert new.previous_version_id == versions[1]["VersionId"]
    assert new.previous_sha256 == _plaintext_sha(
        stack, new.destination_key, versions[1]["VersionId"]
    )
    assert jobs.require(ids[added]).revised_as == "added"
    kept = jobs.require(ids[same])
    assert (kept.batch_id, kept.revision) == (done["batch_id"], None)
    assert kept.destination_key is not None
    assert len(_versions(stack, kept.destination_key)) == 1
    gone = jobs.require(ids[withdrawn])
    assert (gone.status, gone.withdrawn_by) == (JobStatus.COMPLETED, again["batch_id"])
    assert gone.destination_key is not None
    assert len(_versions(stack, gone.destination_key)) == 1  # left in place

    # The revision's manifest, which the day's pointer now names: 3 current files marked,
    # the withdrawn one apart, counts equal to the entries, superseding the first manifest.
    bucket = str(stack.provisioned.destination_bucket)
    pointed = stack.clients.s3.get_object(Bucket=bucket, Key=pointer_key("default", day))
    pointer = DayPointer.from_bytes(pointed["Body"].read())
    assert pointer.batch_id == again["batch_id"]
    body = stack.clients.s3.get_object(Bucket=bucket, Key=pointer.key)["Body"].read()
    manifest = parse_manifest(body)
    marks = {e.file_id: e.revised for e in manifest.entries}
    assert marks == {ids[same]: "unchanged", ids[changed]: "changed", ids[added]: "added"}
    assert [w.file_id for w in manifest.withdrawn] == [ids[withdrawn]]
    header = manifest.header
    assert header.revision is not None
    assert (header.revision.number, header.expected, header.completed) == (2, 3, 3)
    assert (header.revision.changed, header.revision.added, header.revision.withdrawn) == (1, 1, 1)
    assert header.revision.supersedes_key == manifest_key(
        "default", day, done["batch_id"], "completed"
    )

    # The operator's views name the revision (tests/integration/test_ops_revisions.py has
    # each view's details): `status` from the Day Revised the run recorded on the batch item,
    # and `batch audit` checks revision 1's manifest at the versions it names too.
    with queues(stack.clients) as q:
        key = write_key(tmp_path, "ours.pem", stack.rsa_keypair[0])
        settings = run_settings(stack.provisioned, "2000")
        env = worker_env(stack.aws_env, stack.provisioned, q.url, key, stub=stub, **settings)
        shown = run_dlpipe(env, tmp_path, "status", "--date", day, "--json")
        audit = run_dlpipe(env, tmp_path, "batch", "audit", "--from", day, "--to", day, "--json")
    assert shown.returncode == 0, shown.stderr
    (feed,) = json.loads(shown.stdout)["feeds"]
    assert feed["revision"] == {
        "batch_id": again["batch_id"],
        "revision": 2,
        "revises": done["batch_id"],
        "created_at": revision.created_at,
        "counts": {"changed": 1, "added": 1, "withdrawn": 1},
        "counts_from": "event",
    }
    assert audit.returncode == 0, audit.stderr
    (checked,) = json.loads(audit.stdout)["dates"]
    assert (checked["revision"], [r["revision"] for r in checked["revisions"]]) == (2, [1])
    assert checked["revisions"][0]["entries"] == FILES

"""`batch audit` of a day restated twice (services/ops/audit_revisions.py) over an in-memory
versioned bucket: revision 3's manifest supersedes revision 2's, which supersedes batch 1's;
each is checked at the versions it names, and each problem names its revision and batch."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from dlpipe.domain.manifest import (
    ManifestEntry,
    ManifestHeader,
    StoredObject,
    manifest_key,
    parse_manifest,
    render,
)
from dlpipe.domain.manifest_lists import Revision
from dlpipe.domain.model import Batch, BatchStatus
from dlpipe.services.ops.audit_revisions import revision_checks
from tests.support import BASE_MS, make_batch

DAY = "2026-02-28"


@dataclass
class _Bucket:
    """A versioned bucket: each (key, version)'s bytes and what a HEAD of it says."""

    objects: dict[tuple[str, str], bytes] = field(default_factory=dict)
    heads: dict[tuple[str, str], StoredObject] = field(default_factory=dict)

    def read_object(self, key: str, version_id: str | None = None) -> bytes | None:
        return self.objects.get((key, str(version_id)))

    def head(self, key: str, version_id: str | None = None) -> StoredObject | None:
        return self.heads.get((key, str(version_id)))

    def read_pointer(self, feed: str, date: str) -> None:
        return None


def _batch(minutes: int, **changes: object) -> Batch:
    return make_batch(
        DAY, now_ms=BASE_MS + minutes * 60_000, status=BatchStatus.COMPLETED,
        expected_count=1, completed_count=1, failed_count=0, error_count=0, **changes,
    )  # fmt: skip


def _manifest(bucket: _Bucket, batch: Batch, version: str, revision: Revision | None) -> str:
    """Batch's manifest of one file `f` at object version `version`, stored at its key as
    version m-`version`; its key."""
    body = f"file {version}".encode()
    sha = hashlib.sha256(body).hexdigest()
    bucket.heads[("f", version)] = StoredObject(version, len(body), sha)
    entry = ManifestEntry("f-2026-02-28", "f", "bucket", "f", len(body), sha, version)
    header = ManifestHeader(
        "default", DAY, batch.batch_id, "completed", 1, 1, 0, 0, batch.created_at,
        batch.updated_at, None, revision,
    )  # fmt: skip
    data = b"".join(render(header, lambda: [entry]))
    key = manifest_key("default", DAY, batch.batch_id, "completed")
    bucket.objects[(key, f"m-{version}")] = data
    bucket.heads[(key, f"m-{version}")] = StoredObject(f"m-{version}", len(data), None)
    return key


def _day() -> tuple[_Bucket, list[Batch], bytes]:
    """Batch 1, revision 2 over it, revision 3 over that; revision 3's manifest's bytes."""
    bucket = _Bucket()
    first = _batch(0)
    second = _batch(60, revision=2, revises=first.batch_id)
    third = _batch(120, revision=3, revises=second.batch_id)
    one = _manifest(bucket, first, "v1", None)
    two = _manifest(bucket, second, "v2", Revision(2, one, "m-v1"))
    three = _manifest(bucket, third, "v3", Revision(3, two, "m-v2"))
    return bucket, [first, second, third], bucket.objects[(three, "m-v3")]


def test_every_manifest_revision_3_supersedes_is_checked_at_its_versions() -> None:
    bucket, day, latest = _day()
    checks = revision_checks(bucket, day, parse_manifest(latest))
    assert [(c.revision, c.batch_id, c.entries, c.problems) for c in checks] == [
        (2, day[1].batch_id, 1, []),
        (1, day[0].batch_id, 1, []),
    ]


def test_an_object_version_only_batch_1_names_is_its_problem() -> None:
    """The first version of `f` gone: revisions 3 and 2 name later ones; batch 1's manifest
    is the one that no longer holds."""
    bucket, day, latest = _day()
    del bucket.heads[("f", "v1")]
    lines = [
        line for c in revision_checks(bucket, day, parse_manifest(latest)) for line in c.lines()
    ]
    assert lines == [f"revision 1 ({day[0].batch_id}): object f version v1 missing"]


def test_a_superseded_manifest_gone_ends_the_chain_with_its_line() -> None:
    bucket, day, latest = _day()
    key = manifest_key("default", DAY, day[1].batch_id, "completed")
    del bucket.objects[(key, "m-v2")]
    checks = revision_checks(bucket, day, parse_manifest(latest))
    assert [line for c in checks for line in c.lines()] == [
        f"revision 2 ({day[1].batch_id}): manifest {key} version m-v2 missing"
    ]


def test_a_completed_revision_the_chain_skips_is_named() -> None:
    """Revision 3 says it revises batch 1: revision 2, completed, is on no chain."""
    bucket, day, _ = _day()
    third = replace(day[2], revises=day[0].batch_id)
    one = manifest_key("default", DAY, day[0].batch_id, "completed")
    key = _manifest(bucket, third, "v3", Revision(3, one, "m-v1"))
    latest = parse_manifest(bucket.objects[(key, "m-v3")])
    checks = revision_checks(bucket, [day[0], day[1], third], latest)
    assert [line for c in checks for line in c.lines()] == [
        f"revision 2 ({day[1].batch_id}): completed, but latest.json's chain of revisions skips it"
    ]

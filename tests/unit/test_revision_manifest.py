"""A revision batch's manifest (dlpipe/domain/manifest.py, manifest_lists.py): each file
marked, the withdrawn files named apart and in no list a loader reads, counts taken from the
lists, and an ordinary batch's manifest the bytes it had before revisions existed."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from dlpipe.domain.manifest import (
    DayPointer,
    ManifestEntry,
    ManifestHeader,
    ManifestRef,
    parse_manifest,
    render,
    supersedes,
)
from dlpipe.domain.manifest_lists import (
    ListedObject,
    ManifestLists,
    Revision,
    UnpublishedFile,
    WithdrawnFile,
    counted,
    render_copy_manifest,
    render_file_list,
)

DAY = "2026-02-28"
FIRST = "batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f"
REVISION = "batch-2026-02-28-7d3e2a10-5b6c-4d7e-8f90-a1b2c3d4e5f6"
SUPERSEDED = f"_dlpipe/manifests/default/{DAY}/{FIRST}.json"
LISTS = ManifestLists(
    "bkt",
    ListedObject(f"_dlpipe/manifests/default/{DAY}/files/x.jsonl", "c" * 64, 5),
    ListedObject(f"_dlpipe/manifests/default/{DAY}/x.copy.json", "d" * 64, 6),
)


def _entry(entity: str, size: int, sha: str, version: str | None, **marks: str) -> ManifestEntry:
    key = f"{entity}/{DAY}/{entity}-{DAY}"
    return ManifestEntry(f"{entity}-{DAY}", entity, "bkt", key, size, sha * 64, version, **marks)


# What today's code (before revisions, commit 68ed2c1) rendered for this ordinary batch:
# the SHA-256 of the manifest, of its JSON Lines file list, of its COPY manifest and of the
# step's reference as JSON.
ORDINARY = ManifestHeader(
    "default", DAY, FIRST, "completed", 3, 2, 0, 1, "2026-03-01T06:00:00.000Z",
    "2026-03-01T06:20:00.000Z", "one file failed",
)  # fmt: skip
ORDINARY_ENTRIES = [_entry("accounts", 10, "a", "v1"), _entry("zones", 0, "b", None)]
ORDINARY_UNPUBLISHED = [UnpublishedFile(f"users-{DAY}", "users", "error", "wrong_key")]
ORDINARY_SHA256 = {
    "manifest": "720ceabbb9a4e3ea31461adcb7ebe4144b6c15d3697309fa08bfcbb8086898dc",
    "file_list": "0f05c4f4d717647b2558e1fa85bef436aad4f23ebbe8f64311bf1f31e2ae7081",
    "copy": "19acb921e1e913fe8dadf68313e3d201df6e2b5a5b7cdf3ad0346b54ed40a24a",
    "ref": "3e409293fd1e56cf424e8cf054ee6d5ba039e12dd5cd3608b0fefd7c522282ca",
}

# Revision 2: accounts unchanged, orders changed (v1 -> v2), zones added, users withdrawn.
REVISED_ENTRIES = [
    _entry("accounts", 10, "a", "v1", revised="unchanged"),
    _entry(
        "orders",
        20,
        "e",
        "v2",
        revised="changed",
        previous_version_id="v1",
        previous_sha256="f" * 64,
    ),
    _entry("zones", 0, "b", "v1", revised="added"),
]
WITHDRAWN = [WithdrawnFile(f"users-{DAY}", "users", f"users/{DAY}/users-{DAY}", "9" * 64)]
UNPUBLISHED = [UnpublishedFile(f"vendors-{DAY}", "vendors", "failed", "gone")]


def _sha(chunks: object) -> str:
    return hashlib.sha256(b"".join(chunks)).hexdigest()  # type: ignore[arg-type]


def _revision_header() -> ManifestHeader:
    """The header as write-manifest builds it (the batch item's counts), then counted from
    the lists as the store renders them."""
    header = ManifestHeader(
        "default", DAY, REVISION, "completed", 9, 9, 9, 9, "2026-03-02T06:00:00.000Z",
        "2026-03-02T06:10:00.000Z", None, Revision(2, SUPERSEDED, "v-first"),
    )  # fmt: skip
    marks = Counter(str(e.revised) for e in REVISED_ENTRIES)
    statuses = Counter(f.status for f in UNPUBLISHED)
    return counted(header, marks, statuses, len(WITHDRAWN))


def _revision_bytes() -> bytes:
    header = _revision_header()
    body = render(header, lambda: iter(REVISED_ENTRIES), UNPUBLISHED, LISTS, WITHDRAWN)
    return b"".join(body)


def test_an_ordinary_batch_renders_the_bytes_it_rendered_before_revisions() -> None:
    """Manifest, file list, COPY manifest and the step's reference: byte for byte today's
    (a consumer or a replayed step of an ordinary day sees no change)."""
    body = render(ORDINARY, lambda: iter(ORDINARY_ENTRIES), ORDINARY_UNPUBLISHED, LISTS)
    ref = ManifestRef(
        "bkt", SUPERSEDED, "v7", "e" * 64, 99, 2, LISTS.file_list.key,
        LISTS.copy_manifest.key if LISTS.copy_manifest else None,
    )  # fmt: skip
    assert {
        "manifest": _sha(body),
        "file_list": _sha(render_file_list(ORDINARY_ENTRIES)),
        "copy": _sha(render_copy_manifest(ORDINARY_ENTRIES)),
        "ref": hashlib.sha256(json.dumps(ref.to_dict(), sort_keys=True).encode()).hexdigest(),
    } == ORDINARY_SHA256
    assert counted(ORDINARY, Counter(), Counter(), 0) is ORDINARY  # no recount of its counts


def test_a_revision_marks_each_file_and_names_what_it_supersedes() -> None:
    """`revision`, `supersedes` (key and version), and on each `files` item its mark; a
    changed file names the version and SHA-256 it replaced, an added one what it replaced
    (nothing, for a file new to the day)."""
    doc = json.loads(_revision_bytes())
    assert doc["revision"] == 2
    assert doc["supersedes"] == {"key": SUPERSEDED, "version_id": "v-first"}
    marks = {f["entity"]: f["revised"] for f in doc["files"]}
    assert marks == {"accounts": "unchanged", "orders": "changed", "zones": "added"}
    orders = doc["files"][1]
    assert (orders["previous_version_id"], orders["previous_sha256"]) == ("v1", "f" * 64)
    assert "previous_version_id" not in doc["files"][0]
    assert doc["files"][2]["previous_version_id"] is None
    assert [e["url"] for e in doc["entries"]] == [f"s3://bkt/{e.key}" for e in REVISED_ENTRIES]


def test_a_revisions_withdrawn_files_are_named_apart_and_in_no_loaders_list() -> None:
    """`withdrawn` names the file with its key and the SHA-256 it last published; neither
    `entries`, `files`, the JSON Lines list nor the COPY manifest holds it."""
    data = _revision_bytes()
    doc = json.loads(data)
    assert doc["withdrawn"] == [
        {"file_id": f"users-{DAY}", "entity": "users", "key": WITHDRAWN[0].key, "sha256": "9" * 64}
    ]
    listed = b"".join(render_file_list(REVISED_ENTRIES)) + b"".join(
        render_copy_manifest(REVISED_ENTRIES)
    )
    assert b"users" not in listed
    assert all("users" not in json.dumps(item) for item in doc["entries"] + doc["files"])


def test_a_revisions_counts_are_the_lists_it_holds() -> None:
    """completed is the number of `files` (unchanged + changed + added), withdrawn the
    number of `withdrawn`, failed the unpublished ones: never the batch item's figures."""
    doc = json.loads(_revision_bytes())
    assert doc["counts"] == {
        "expected": 4, "completed": 3, "failed": 1, "error": 0, "pending": 0,
        "unchanged": 1, "changed": 1, "added": 1, "withdrawn": 1,
    }  # fmt: skip
    assert doc["counts"]["completed"] == len(doc["files"]) == len(doc["entries"])
    assert doc["counts"]["withdrawn"] == len(doc["withdrawn"])


def test_a_revision_manifest_reads_back_whole_and_renders_the_same_bytes_again() -> None:
    """parse_manifest gives back the header with its revision, the marked entries and the
    withdrawn files; rendering again gives the same bytes (a replay verifies, never writes)."""
    data = _revision_bytes()
    parsed = parse_manifest(data)
    assert parsed.header == _revision_header()
    assert list(parsed.entries) == REVISED_ENTRIES
    assert list(parsed.withdrawn) == WITHDRAWN
    assert _revision_bytes() == data
    ref = ManifestRef("bkt", "k.json", "v", "ab" * 32, 1, 3, revision=parsed.header.revision)
    assert ManifestRef.from_dict(ref.to_dict()) == ref
    assert ref.to_dict()["revision"] == {
        "revision": 2,
        "supersedes": {"key": SUPERSEDED, "version_id": "v-first"},
        "counts": {"unchanged": 1, "changed": 1, "added": 1, "withdrawn": 1},
    }


def _pointer(batch_id: str, created_at: str) -> DayPointer:
    key = f"_dlpipe/manifests/default/{DAY}/{batch_id}.json"
    return DayPointer(
        "default", DAY, batch_id, "completed", created_at, created_at, key, "v", "a" * 64, 1
    )


def test_a_revision_takes_the_pointer_and_a_replay_of_the_first_leaves_it() -> None:
    """The revision batch is created after the batch it revises: its completed manifest
    replaces the day's pointer, and the first batch's step replayed later leaves it."""
    first = _pointer(FIRST, "2026-03-01T06:00:00.000Z")
    revision = _pointer(REVISION, "2026-03-02T06:00:00.000Z")
    assert supersedes(revision, first)
    assert not supersedes(first, revision)

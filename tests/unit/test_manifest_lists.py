"""What a manifest names besides its published files, and its two file lists
(dlpipe/domain/manifest_lists.py): every expected file accounted for, counts that add up, the
cause, and file lists with exactly their documented keys."""

from __future__ import annotations

import io
import json

import pandas as pd

from dlpipe.domain.manifest import (
    ManifestEntry,
    ManifestHeader,
    copy_manifest_key,
    file_list_key,
    manifest_key,
    parse_manifest,
    render,
)
from dlpipe.domain.manifest_lists import (
    FILE_LIST_KEYS,
    ListedObject,
    ManifestLists,
    UnpublishedFile,
    render_copy_manifest,
    render_file_list,
)

DAY = "2026-02-28"
BATCH = "batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f"
STAMP = "2026-03-01T06:00:00.000Z"
CAUSE = "timeout: 1 file(s) still pending at the last check"
HEADER = ManifestHeader("default", DAY, BATCH, "timeout", 4, 2, 1, 0, STAMP, STAMP, CAUSE)
ENTRIES = [
    ManifestEntry(f"{e}-{DAY}", e, "bkt", f"{e}/{DAY}/{e}-{DAY}", n, "ab" * 32, v)
    for e, n, v in (("accounts", 10, "v1"), ("zones", 0, None))
]
UNPUBLISHED = [
    UnpublishedFile(f"orders-{DAY}", "orders", "pending", None),
    UnpublishedFile(f"users-{DAY}", "users", "failed", "wrong_key"),
]


def _doc(lists: ManifestLists | None = None) -> dict[str, object]:
    return dict(json.loads(b"".join(render(HEADER, lambda: iter(ENTRIES), UNPUBLISHED, lists))))


def test_the_manifest_names_every_expected_file_and_its_counts_add_up() -> None:
    """Published files in `files`, the others in `unpublished` with status and code; pending
    completes the counts; the cause is the outcome summary's."""
    doc = _doc()
    assert doc["unpublished"] == [
        {"file_id": f"orders-{DAY}", "entity": "orders", "status": "pending", "error_code": None},
        {
            "file_id": f"users-{DAY}",
            "entity": "users",
            "status": "failed",
            "error_code": "wrong_key",
        },
    ]
    counts = doc["counts"]
    assert isinstance(counts, dict)
    assert counts["pending"] == 1
    assert sum(counts[k] for k in ("completed", "failed", "error", "pending")) == counts["expected"]
    assert doc["cause"] == CAUSE
    parsed = parse_manifest(b"".join(render(HEADER, lambda: iter(ENTRIES), UNPUBLISHED)))
    assert parsed.header == HEADER
    assert list(parsed.unpublished) == UNPUBLISHED


def test_a_manifest_written_before_the_new_keys_still_parses() -> None:
    """No `cause`, `pending` or `unpublished`: read as none."""
    doc = _doc()
    for key in ("cause", "unpublished"):
        del doc[key]
    counts = doc["counts"]
    assert isinstance(counts, dict)
    del counts["pending"]
    parsed = parse_manifest(json.dumps(doc).encode())
    assert parsed.header.cause is None
    assert parsed.unpublished == ()


def test_the_manifest_names_its_file_lists_with_their_hashes() -> None:
    """`file_list` and `copy_manifest`: key, URI, SHA-256 and size (no COPY manifest: null)."""
    listed = ListedObject("k.jsonl", "cd" * 32, 12)
    doc = _doc(ManifestLists("bkt", listed, None))
    assert doc["file_list"] == {
        "key": "k.jsonl", "uri": "s3://bkt/k.jsonl", "sha256": "cd" * 32, "size": 12,
    }  # fmt: skip
    assert doc["copy_manifest"] is None


def test_the_file_list_is_json_lines_pandas_reads_in_one_call() -> None:
    """One object per published file with exactly the documented keys, in FileID order."""
    data = b"".join(render_file_list(ENTRIES))
    frame = pd.read_json(io.BytesIO(data), lines=True, dtype=False)
    assert list(frame.columns) == sorted(FILE_LIST_KEYS)
    assert list(frame["file_id"]) == [e.file_id for e in ENTRIES]
    assert list(frame["s3_uri"]) == [e.url for e in ENTRIES]
    assert list(frame["size"]) == [10, 0]
    assert [json.loads(line).keys() for line in data.splitlines()] == [set(FILE_LIST_KEYS)] * 2


def test_the_copy_manifest_holds_exactly_the_documented_keys() -> None:
    """{"entries": [{"url", "mandatory", "meta": {"content_length"}}]} and nothing else."""
    doc = json.loads(b"".join(render_copy_manifest(ENTRIES)))
    assert list(doc) == ["entries"]
    for entry, source in zip(doc["entries"], ENTRIES, strict=True):
        assert entry == {
            "url": source.url,
            "mandatory": True,
            "meta": {"content_length": source.size},
        }


def test_each_manifest_has_its_own_file_lists_keys() -> None:
    """The timeout manifest's lists and the final one's differ; the JSON Lines in files/."""
    prefix = f"_dlpipe/manifests/default/{DAY}/"
    assert file_list_key("default", DAY, BATCH, "timeout") == f"{prefix}files/{BATCH}.timeout.jsonl"
    assert file_list_key("default", DAY, BATCH, "completed") == f"{prefix}files/{BATCH}.jsonl"
    assert copy_manifest_key("default", DAY, BATCH, "failed") == f"{prefix}{BATCH}.copy.json"
    assert manifest_key("default", DAY, BATCH, "timeout") == f"{prefix}{BATCH}.timeout.json"

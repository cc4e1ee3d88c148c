"""The day manifest's format and the pointer rule (dlpipe/domain/manifest.py)."""

from __future__ import annotations

import json

import pytest

from dlpipe.domain.manifest import (
    DayPointer,
    ManifestEntry,
    ManifestError,
    ManifestHeader,
    ManifestRef,
    manifest_key,
    parse_manifest,
    pointer_key,
    render,
    supersedes,
)

BATCH = "batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f"
HEADER = ManifestHeader(
    "default", "2026-02-28", BATCH, "completed", 3, 2, 1, 0, "2026-03-01T06:00:00.000Z",
    "2026-03-01T06:20:00.000Z",
)  # fmt: skip
ENTRIES = [
    ManifestEntry(f"{e}-2026-02-28", e, "bkt", f"{e}/2026-02-28/{e}-2026-02-28", n, "ab" * 32, v)
    for e, n, v in (("accounts", 10, "v1"), ("zones", 0, None))
]


def _bytes(entries: list[ManifestEntry]) -> bytes:
    return b"".join(render(HEADER, lambda: iter(entries)))


def test_entries_are_redshift_copy_entries_and_our_facts_sit_in_a_parallel_list() -> None:
    """Each entry has exactly url, mandatory and meta.content_length; `files` carries the rest."""
    doc = json.loads(_bytes(ENTRIES))
    assert doc["entries"] == [
        {"url": f"s3://bkt/{ENTRIES[0].key}", "mandatory": True, "meta": {"content_length": 10}},
        {"url": f"s3://bkt/{ENTRIES[1].key}", "mandatory": True, "meta": {"content_length": 0}},
    ]
    assert [f["file_id"] for f in doc["files"]] == ["accounts-2026-02-28", "zones-2026-02-28"]
    assert doc["files"][0]["version_id"] == "v1"
    assert doc["counts"] == {"expected": 3, "completed": 2, "failed": 1, "error": 0, "pending": 0}


def test_the_same_batch_renders_the_same_bytes_and_reads_back() -> None:
    """Rendering is deterministic, and parse_manifest gives back the header and entries."""
    assert _bytes(ENTRIES) == _bytes(list(ENTRIES))
    parsed = parse_manifest(_bytes(ENTRIES))
    assert parsed.header == HEADER
    assert list(parsed.entries) == ENTRIES
    assert json.loads(_bytes([]))["entries"] == []


@pytest.mark.parametrize(
    "data",
    [b"{", b"[]", b'{"format": "other"}', _bytes(ENTRIES).replace(b'"files":[', b'"files":[{},')],
)
def test_a_broken_manifest_is_one_manifest_error(data: bytes) -> None:
    """What is not a manifest in this format is a ManifestError, never a traceback."""
    with pytest.raises(ManifestError):
        parse_manifest(data)


def test_paths_carry_the_feed_date_and_batch() -> None:
    """The default feed's manifests live under `default/`, next to the day's pointer."""
    assert manifest_key("default", "2026-02-28", BATCH, "completed") == (
        f"_dlpipe/manifests/default/2026-02-28/{BATCH}.json"
    )
    assert (
        pointer_key("vendor-b", "2026-02-28") == "_dlpipe/manifests/vendor-b/2026-02-28/latest.json"
    )
    with pytest.raises(ManifestError):
        pointer_key("../x", "2026-02-28")


def test_a_batchs_final_manifest_keeps_its_name_and_a_timeout_one_has_its_own() -> None:
    """A batch ends completed or failed at `{BatchID}.json`; timeout, the one status it may
    leave, is `{BatchID}.timeout.json`, so a repaired batch's later manifest has its own key."""
    day = "_dlpipe/manifests/vendor-b/2026-02-28/"
    batch = "vendor-b.batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f"
    assert manifest_key("vendor-b", "2026-02-28", batch, "failed") == f"{day}{batch}.json"
    assert manifest_key("vendor-b", "2026-02-28", batch, "timeout") == f"{day}{batch}.timeout.json"
    with pytest.raises(ManifestError):
        manifest_key("default", "2026-02-28", BATCH, "queued")


def test_the_same_batchs_later_status_replaces_its_timeout_manifest() -> None:
    """timeout -> completed or failed moves the pointer to the batch's final manifest; the
    timeout one never takes it back, and a completed rerun still outranks a repaired failure."""
    timed_out = _pointer("a", "timeout", "2026-03-01T06:00:00.000Z")
    repaired = _pointer("a", "completed", "2026-03-01T06:00:00.000Z")
    repaired_failed = _pointer("a", "failed", "2026-03-01T06:00:00.000Z")
    rerun_ok = _pointer("b", "completed", "2026-03-01T07:00:00.000Z")
    assert supersedes(repaired, timed_out)
    assert supersedes(repaired_failed, timed_out)
    assert not supersedes(timed_out, repaired)
    assert not supersedes(timed_out, repaired_failed)
    assert not supersedes(repaired_failed, rerun_ok)


def _pointer(batch: str, status: str, created: str) -> DayPointer:
    return DayPointer("default", "2026-02-28", batch, status, created, created, "k", None, "s", 1)


def test_the_pointer_rule() -> None:
    """A completed batch supersedes; a failed rerun never hides a completed day; an older
    batch's late write never takes the pointer back; the same batch is not rewritten."""
    first_ok = _pointer("a", "completed", "2026-03-01T06:00:00.000Z")
    first_failed = _pointer("a", "failed", "2026-03-01T06:00:00.000Z")
    rerun_ok = _pointer("b", "completed", "2026-03-01T09:00:00.000Z")
    rerun_failed = _pointer("b", "failed", "2026-03-01T09:00:00.000Z")
    assert supersedes(first_failed, None)
    assert supersedes(rerun_ok, first_failed)
    assert supersedes(rerun_ok, first_ok)
    assert supersedes(rerun_failed, first_failed)
    assert not supersedes(rerun_failed, first_ok)
    assert not supersedes(first_ok, rerun_ok)
    assert not supersedes(first_failed, rerun_failed)
    assert not supersedes(first_ok, first_ok)
    assert DayPointer.from_bytes(rerun_ok.to_bytes()) == rerun_ok


def test_the_step_result_round_trips() -> None:
    """ManifestRef.to_dict is the write-manifest step's contract, uri included."""
    ref = ManifestRef("bkt", "k.json", None, "ab" * 32, 12, 0)
    old = {
        "bucket": "bkt", "key": "k.json", "uri": "s3://bkt/k.json", "version_id": None,
        "sha256": "ab" * 32, "size": 12, "entries": 0,
    }  # fmt: skip
    lists = {"file_list_key": None, "copy_key": None, "file_list_uri": None, "copy_uri": None}
    assert ref.to_dict() == old | lists | {"pending_files": []}
    assert ManifestRef.from_dict(ref.to_dict()) == ref
    assert ManifestRef.from_dict(old) == ref  # a checkpoint written before the file lists
    full = ManifestRef("bkt", "k.json", "v", "ab" * 32, 12, 1, "f.jsonl", "c.json", ("a",))
    assert full.to_dict()["file_list_uri"] == "s3://bkt/f.jsonl"
    assert ManifestRef.from_dict(full.to_dict()) == full

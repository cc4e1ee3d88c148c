"""The hand-off event's detail: a deterministic ID per outcome, and the documented schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from dlpipe.domain.handoff_events import (
    DAY_COMPLETED,
    DAY_LATE,
    DETAIL_SCHEMA,
    DayCounts,
    DayFacts,
    build_event,
    detail_type_for,
    event_id,
)
from dlpipe.domain.outcome import CodeCount, OutcomeSummary

BATCH = "vendor-b.batch-2026-02-28-0f0e"
MANIFEST = {
    "bucket": "dest",
    "key": "_dlpipe/manifests/vendor-b/2026-02-28/x.json",
    "uri": "s3://dest/_dlpipe/manifests/vendor-b/2026-02-28/x.json",
    "version_id": "v1",
    "sha256": "ab" * 32,
    "size": 10,
    "entries": 2,
}


def facts(**changes: object) -> DayFacts:
    base: dict[str, object] = {
        "feed": "vendor-b",
        "date": "2026-02-28",
        "batch_id": BATCH,
        "status": "failed",
        "counts": DayCounts(completed=7, failed=1, error=2, pending=0),
        "outcome": OutcomeSummary(None, (CodeCount("wrong_key", 2, ("a", "b")),)).to_dict(),
    }
    return DayFacts(**(base | changes))  # type: ignore[arg-type]


def test_the_same_outcome_always_has_the_same_id_and_another_outcome_another() -> None:
    first = build_event("Day Failed", facts())
    again = build_event("Day Failed", facts(counts=DayCounts(7, 1, 2, 0)))
    assert (
        first.event_id
        == again.event_id
        == event_id("vendor-b", "2026-02-28", BATCH, "Day Failed", first.detail)
    )
    manifest = {"uri": "s3://b/k", "version_id": "v1", "sha256": "0" * 64}
    others = {
        build_event(DAY_LATE, facts(status="queued")).event_id,
        build_event("Day Failed", facts(feed="default")).event_id,
        build_event("Day Failed", facts(batch_id=BATCH + "1")).event_id,
        build_event("Day Failed", facts(manifest=manifest)).event_id,
        first.event_id,
    }
    assert len(others) == 5  # one ID never stands for two contents (a manifest, or none)
    assert first.detail_json() == again.detail_json()  # a replay sends the same bytes


def test_the_detail_carries_counts_errors_by_code_and_the_manifest() -> None:
    detail = build_event("Day Failed", facts(manifest=MANIFEST)).detail
    jsonschema.validate(detail, DETAIL_SCHEMA)
    assert detail["counts"] == {
        "expected": 10,
        "completed": 7,
        "failed": 1,
        "error": 2,
        "pending": 0,
    }
    assert detail["errors"] == {
        "cause": None,
        "codes": [{"code": "wrong_key", "count": 2, "files": ["a", "b"]}],
    }
    assert detail["manifest"] == {"uri": MANIFEST["uri"], "version_id": "v1", "sha256": "ab" * 32}


def test_without_a_manifest_or_outcome_the_fields_are_null_and_still_valid() -> None:
    detail = build_event(DAY_COMPLETED, facts(status="completed", outcome=None)).detail
    jsonschema.validate(detail, DETAIL_SCHEMA)
    assert detail["manifest"] is None
    assert detail["errors"] == {"cause": None, "codes": []}


def test_the_schema_refuses_a_detail_that_breaks_the_contract() -> None:
    detail = dict(build_event(DAY_COMPLETED, facts(status="completed")).detail)
    detail["status"] = "running"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(detail, DETAIL_SCHEMA)


@pytest.mark.parametrize(
    ("status", "detail_type"),
    [("completed", "Day Completed"), ("failed", "Day Failed"), ("timeout", "Day Timed Out")],
)
def test_each_final_status_has_its_event(status: str, detail_type: str) -> None:
    assert detail_type_for(status) == detail_type


def test_a_status_that_is_not_final_or_an_unknown_type_has_no_event() -> None:
    with pytest.raises(ValueError, match="queued"):
        detail_type_for("queued")
    with pytest.raises(ValueError, match="Day Done"):
        build_event("Day Done", facts())


def test_the_readme_shows_the_schema_the_code_checks() -> None:
    """README's "Hand-off: events" carries DETAIL_SCHEMA itself, not a copy that drifted."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    after = readme.split("The detail's JSON Schema", 1)[1]
    block = after.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block) == DETAIL_SCHEMA


def test_a_timed_out_days_event_names_its_pending_files_and_file_lists() -> None:
    """The manifest's first pending FileIDs become a `pending` code line (the outcome summary
    counts only failed and error files), and the manifest's file lists are in the detail."""
    ref = MANIFEST | {
        "pending_files": ["orders-2026-02-28"],
        "file_list_uri": "s3://dest/_dlpipe/manifests/vendor-b/2026-02-28/files/x.jsonl",
        "copy_uri": None,
    }
    counts = DayCounts(completed=6, failed=0, error=0, pending=1)
    detail = build_event(
        "Day Timed Out", facts(status="timeout", counts=counts, manifest=ref)
    ).detail
    jsonschema.validate(detail, DETAIL_SCHEMA)
    assert detail["errors"]["codes"][-1] == {
        "code": "pending", "count": 1, "files": ["orders-2026-02-28"],
    }  # fmt: skip
    assert detail["manifest"]["file_list_uri"] == ref["file_list_uri"]
    assert detail["manifest"]["copy_uri"] is None
    plain = build_event("Day Timed Out", facts(status="timeout", counts=counts, manifest=MANIFEST))
    assert "file_list_uri" not in plain.detail["manifest"]  # a reference from before the lists

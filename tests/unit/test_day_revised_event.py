"""`Day Revised` (dlpipe/domain/handoff_events.py, services/orchestrator/announce.py): what a
completed revision batch sends instead of `Day Completed`, with its own ID, re-sent byte for
byte; an ordinary day's `Day Completed` is the event it was before revisions."""

from __future__ import annotations

import json

import jsonschema

from dlpipe.domain.handoff_events import (
    DAY_COMPLETED,
    DAY_REVISED,
    DETAIL_SCHEMA,
    DayCounts,
    DayFacts,
    build_event,
    detail_type_for,
)
from dlpipe.domain.manifest import ManifestRef
from dlpipe.domain.manifest_lists import Revision
from dlpipe.domain.model import BatchStatus
from dlpipe.services.orchestrator.announce import publish_once
from tests.fakes.events import FakeEventBus
from tests.fakes.stores import FakeBatchesTable
from tests.support import ManualClock, make_batch

DAY = "2026-02-28"
FIRST = "batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f"
REVISION = "batch-2026-02-28-7d3e2a10-5b6c-4d7e-8f90-a1b2c3d4e5f6"
PREFIX = f"_dlpipe/manifests/default/{DAY}"
LISTS = (f"{PREFIX}/files/x.jsonl", f"{PREFIX}/x.copy.json")
# The ordinary day's Day Completed as today's code (before revisions, commit 68ed2c1) built it.
FIRST_EVENT_ID = "3ceb0d97a26ec24079529a6c68e83be715a2dd6c10a24ba42e4d0e53f10c0798"
FIRST_DETAIL = (
    '{"batch_id":"batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f","counts":{"completed":2,'
    '"error":1,"expected":3,"failed":0,"pending":0},"date":"2026-02-28","deadline_at":null,'
    '"errors":{"cause":null,"codes":[]},"event_id":"' + FIRST_EVENT_ID + '","feed":"default",'
    '"manifest":{"copy_uri":"s3://bkt/_dlpipe/manifests/default/2026-02-28/x.copy.json",'
    '"file_list_uri":"s3://bkt/_dlpipe/manifests/default/2026-02-28/files/x.jsonl","sha256":'
    '"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee","uri":"s3://bkt/_dlpipe/'
    'manifests/default/2026-02-28/batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f.json",'
    '"version_id":"v7"},"status":"completed","version":1}'
)
REVISED = Revision(2, f"{PREFIX}/{FIRST}.json", "v7", unchanged=1, changed=1, added=1, withdrawn=1)


def _first_ref() -> ManifestRef:
    return ManifestRef("bkt", f"{PREFIX}/{FIRST}.json", "v7", "e" * 64, 99, 2, *LISTS)


def _revision_ref() -> ManifestRef:
    return ManifestRef(
        "bkt", f"{PREFIX}/{REVISION}.json", "v9", "f" * 64, 120, 3, *LISTS, revision=REVISED
    )


def _facts(batch_id: str, ref: ManifestRef, status: str = "completed") -> DayFacts:
    counts = DayCounts(completed=2, failed=0, error=1, pending=0)
    return DayFacts("default", DAY, batch_id, status, counts, None, ref.to_dict(), None)


def _revised_event(status: str = "completed") -> tuple[str, dict[str, object]]:
    ref = _revision_ref().to_dict()
    event = build_event(detail_type_for(status, ref), _facts(REVISION, _revision_ref(), status))
    return event.detail_type, dict(event.detail)


def test_a_completed_revision_sends_day_revised_with_its_revision_and_what_it_supersedes() -> None:
    """Its detail: the feed, date and batch, `revision`, `supersedes` (manifest key and
    version), the changed / added / withdrawn counts and the manifest with its file lists,
    as Day Completed names them; it validates against the documented schema."""
    detail_type, detail = _revised_event()
    assert detail_type == DAY_REVISED
    jsonschema.validate(detail, DETAIL_SCHEMA)
    assert (detail["feed"], detail["date"], detail["batch_id"]) == ("default", DAY, REVISION)
    assert detail["revision"] == 2
    assert detail["supersedes"] == {"key": f"{PREFIX}/{FIRST}.json", "version_id": "v7"}
    counts = detail["counts"]
    assert isinstance(counts, dict)
    assert {k: counts[k] for k in ("changed", "added", "withdrawn")} == {
        "changed": 1,
        "added": 1,
        "withdrawn": 1,
    }
    assert detail["manifest"] == {
        "uri": f"s3://bkt/{PREFIX}/{REVISION}.json",
        "version_id": "v9",
        "sha256": "f" * 64,
        "file_list_uri": f"s3://bkt/{LISTS[0]}",
        "copy_uri": f"s3://bkt/{LISTS[1]}",
    }


def test_day_revised_has_its_own_id_and_the_first_days_day_completed_is_as_it_was() -> None:
    """The revision's event ID is not the first batch's Day Completed's, and that one (an
    ordinary day's, re-sent by a later run) is byte for byte what it was before revisions."""
    first = build_event(
        detail_type_for("completed", _first_ref().to_dict()), _facts(FIRST, _first_ref())
    )
    assert first.detail_type == DAY_COMPLETED
    assert (first.event_id, first.detail_json()) == (FIRST_EVENT_ID, FIRST_DETAIL)
    _, revised = _revised_event()
    assert revised["event_id"] != FIRST_EVENT_ID
    assert revised["event_id"] == _revised_event()[1]["event_id"]  # one content, one ID


def test_a_revision_that_did_not_complete_sends_its_status_event_without_revision_keys() -> None:
    """A failed revision is Day Failed as any failed batch's: the day's pointer stays on the
    completed manifest, so nothing was revised for a consumer."""
    detail_type, detail = _revised_event("failed")
    assert detail_type == "Day Failed"
    assert "revision" not in detail
    assert "supersedes" not in detail


def test_a_re_sent_day_revised_keeps_its_id_and_bytes() -> None:
    """A second run that attaches to the ended revision batch builds the event again and
    sends the one recorded first, byte for byte (publish_once)."""
    batches, bus = FakeBatchesTable(ManualClock()), FakeEventBus()
    batches.create(make_batch(DAY, batch_id=REVISION, status=BatchStatus.COMPLETED))
    for _ in range(2):
        detail_type, detail = _revised_event()
        built = build_event(detail_type, _facts(REVISION, _revision_ref()))
        assert publish_once(batches, bus, built)["sent"]
    assert [e.detail_type for e in bus.sent] == [DAY_REVISED, DAY_REVISED]
    assert bus.sent[0].detail_json() == bus.sent[1].detail_json()
    assert json.loads(bus.sent[0].detail_json())["event_id"] == detail["event_id"]

"""A day's revisions as the operator screens read them (services/ops/revisions.py), in
process: the counts from the batch item's Day Revised event, else one manifest GET; the
lines `status` and `batch show` print; and the day page's HTML rendered by Flask over
in-memory stores (no emulator, no browser), a stored value shown escaped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, cast

import pytest

from dlpipe.config import Settings
from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.errors import AwsRequestError
from dlpipe.domain.handoff_events import (
    DAY_COMPLETED,
    DAY_REVISED,
    DayCounts,
    DayFacts,
    build_event,
)
from dlpipe.domain.manifest import ManifestHeader, manifest_key, render
from dlpipe.domain.manifest_lists import Revision
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.ports import OpsBatches, OpsJobs
from dlpipe.services.ops.revisions import counts_text, day_revisions, latest_revisions
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable
from tests.support import BASE_MS, ManualClock, make_batch, make_job

DAY = "2026-02-28"
COUNTS = {"changed": 1, "added": 2, "withdrawn": 3}


def _event(batch: Batch, detail_type: str, revision: Revision | None) -> str:
    ref: dict[str, Any] = {"uri": "s3://b/k.json", "version_id": "v1", "sha256": "0" * 64}
    if revision is not None:
        ref["revision"] = revision.to_dict()
    facts = DayFacts(
        "default", DAY, batch.batch_id, "completed", DayCounts(6, 0, 0, 0), manifest=ref
    )
    return json.dumps(build_event(detail_type, facts).to_dict())


def _day(*, event: bool = True, status: BatchStatus = BatchStatus.COMPLETED) -> list[Batch]:
    """Batch 1 completed (its Day Completed recorded), then revision 2 over it."""
    first = make_batch(DAY, status=BatchStatus.COMPLETED)
    first = replace(first, handoff_event=_event(first, DAY_COMPLETED, None))
    second = make_batch(
        DAY, now_ms=BASE_MS + 3_600_000, status=status, revision=2, revises=first.batch_id
    )
    revision = Revision(2, "k.json", "v1", 5, *COUNTS.values())
    if event:
        second = replace(second, handoff_event=_event(second, DAY_REVISED, revision))
    return [first, second]


class _Reader:
    """A manifest bucket of one revision manifest (or one whose GET fails)."""

    def __init__(self, batch: Batch, *, fails: bool = False) -> None:
        self.key = manifest_key("default", DAY, batch.batch_id, str(batch.status))
        header = ManifestHeader(
            "default", DAY, batch.batch_id, str(batch.status), 6, 6, 0, 0,
            batch.created_at, batch.updated_at, None, Revision(2, "k.json", "v1", 0, 1, 2, 3),
        )  # fmt: skip
        self.data = b"".join(render(header, lambda: []))
        self.fails = fails
        self.reads: list[str] = []

    def read_object(self, key: str, version_id: str | None = None) -> bytes | None:
        self.reads.append(key)
        if self.fails:
            raise AwsRequestError("s3", "GetObject", "AccessDenied", "no grant")
        return self.data if key == self.key else None

    def read_pointer(self, feed: str, date: str) -> None:
        return None

    def head(self, key: str, version_id: str | None = None) -> None:
        return None


def test_a_revisions_counts_come_from_the_event_its_item_keeps_and_nothing_is_read() -> None:
    """Revision 2's facts and the batch it replaced, with no manifest reader called."""
    first, second = _day()
    found = day_revisions(
        [first, second], lambda: pytest.fail("no manifest is read"), read={second.batch_id}
    )
    facts = found.of(second.batch_id)
    assert facts is not None
    assert (facts.revision, facts.revises, facts.created_at) == (
        2,
        first.batch_id,
        second.created_at,
    )
    assert (dict(facts.counts or {}), facts.counts_from) == (COUNTS, "event")
    assert found.of(first.batch_id) is None
    assert found.by(first.batch_id) == facts
    assert latest_revisions([first, second]) == {second.batch_id}
    assert latest_revisions([first]) == set()


def _counts(batches: list[Batch], reader: Any, read: set[str]) -> dict[str, int] | None:
    """The counts day_revisions finds for the last of `batches`."""
    facts = day_revisions(batches, lambda: reader, read=read).of(batches[-1].batch_id)
    assert facts is not None
    return None if facts.counts is None else dict(facts.counts)


def test_without_its_event_an_ended_revision_is_counted_from_its_manifest_once() -> None:
    """One GET, of the key its status gives, and only for a BatchID asked for; a failed GET
    or no bucket leaves the counts unknown."""
    first, second = _day(event=False)
    reader = _Reader(second)
    assert _counts([first, second], reader, set()) is None
    assert reader.reads == []
    found = day_revisions([first, second], lambda: reader, read={second.batch_id})
    facts = found.of(second.batch_id)
    assert facts is not None
    assert (dict(facts.counts or {}), facts.counts_from) == (COUNTS, "manifest")
    assert reader.reads == [reader.key]
    assert _counts([first, second], _Reader(second, fails=True), {second.batch_id}) is None
    assert _counts([first, second], None, {second.batch_id}) is None


def test_a_running_revision_reads_no_manifest() -> None:
    first, second = _day(event=False, status=BatchStatus.QUEUED)
    reader = _Reader(replace(second, status=BatchStatus.COMPLETED))
    facts = day_revisions([first, second], lambda: reader, read={second.batch_id}).of(
        second.batch_id
    )
    assert facts is not None
    assert (facts.counts, reader.reads) == (None, [])


def test_the_counts_text_says_why_when_there_are_none() -> None:
    assert counts_text(COUNTS, ended=True) == "1 changed, 2 added, 3 withdrawn"
    assert counts_text(None, ended=False) == "changes counted when it ends"
    assert (
        counts_text(None, ended=True)
        == "changes not counted: no Day Revised event, no manifest read"
    )


def test_the_status_lines_of_a_revision_and_of_the_batch_it_replaced() -> None:
    """What `status` and `batch show` print under the batches table, one line each."""
    from dlpipe.cli.ops.outcome_view import outcome_views
    from dlpipe.cli.ops.render import batch_dict

    first, second = _day()
    revisions = day_revisions([first, second])
    rows = [batch_dict(b, revisions=revisions) for b in (first, second)]
    assert [line.plain for line in outcome_views(rows)] == [
        f"{first.batch_id}: revised by {second.batch_id} (revision 2)",
        f"{second.batch_id}: revision 2 (revises {first.batch_id}, created"
        f" {iso_from_ms(BASE_MS + 3_600_000)[:19]}Z; 1 changed, 2 added, 3 withdrawn)",
    ]
    assert (rows[1]["revision"], rows[1]["revises"], rows[1]["revision_counts"]) == (
        2,
        first.batch_id,
        COUNTS,
    )


class _Jobs(FakeJobsTable):
    """The jobs fake with the ops reads the day page makes besides the orchestrator's."""

    def query_by_status(self, status: JobStatus, **_: Any) -> Iterator[FileJob]:
        yield from ()

    def edge_by_status(self, status: JobStatus, *, newest: bool = False) -> FileJob | None:
        return None

    def page_by_batch(
        self, batch_id: str, status: JobStatus | None = None, *, limit: int, start: Any = None
    ) -> tuple[list[FileJob], None]:
        return list(self.query_by_batch(batch_id, status, limit=limit)), None


def _unused(*_: object) -> Any:
    raise AssertionError("not used by the day page")


def _page(batches: list[Batch], jobs: list[FileJob], path: str) -> str:
    clock = ManualClock(BASE_MS + 7_200_000)
    job_store, batch_store = _Jobs(clock), FakeBatchesTable(clock)
    for batch in batches:
        batch_store.items[batch.batch_id] = batch
    for job in jobs:
        job_store.items[job.file_id] = job
    settings = replace(Settings.from_env({}), queue_url=None, dlq_url=None)
    ops = OpsContext(
        settings=settings,
        clock=clock,
        job_store=cast(OpsJobs, job_store),
        batch_store=cast(OpsBatches, batch_store),
        download_queues=_unused,
        gauge=_unused,
        messages=_unused,
        orchestrator=_unused,
    )
    app = create_app(ops)
    answer_only_at(app, HOST, 80)
    got = app.test_client().get(path)
    assert got.status_code == 200, got.get_data(as_text=True)
    return got.get_data(as_text=True)


def test_the_day_page_html_names_the_revision_and_marks_its_files() -> None:
    """The feed's line, the notes, the badge and the files' marks, from the stores alone."""
    first, second = _day()
    changed = make_job("accounts", DAY, batch_id=second.batch_id, status=JobStatus.COMPLETED,
                       revision=2, revised_as="changed")  # fmt: skip
    page = _page([first, second], [changed], f"/day/{DAY}")
    assert "<strong>revision 2 of the day</strong>" in page
    assert "1 changed, 2 added, 3 withdrawn" in page
    assert '<span class="badge revision" id="selected-revision">revision 2</span>' in page
    assert 'data-revised="changed">changed</span>' in page
    assert f'<tr class="note revised-by" data-batch="{first.batch_id}">' in page


def test_a_stored_value_on_the_revision_line_is_shown_escaped() -> None:
    """CreatedAt is stored text: one that is no time is shown as it is, HTML-escaped and
    its invisible characters written as escapes, never markup."""
    first, second = _day()
    hostile = replace(second, created_at='<img src=x onerror="alert(1)">\u202e')
    page = _page([first, hostile], [], f"/day/{DAY}")
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;\\u202e" in page

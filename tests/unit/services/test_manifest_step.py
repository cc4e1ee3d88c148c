"""The write-manifest step on in-memory fakes: which files, which batch the pointer names."""

from __future__ import annotations

import pytest

from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import Settings
from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.manifest import parse_manifest, pointer_key
from dlpipe.domain.model import Batch, BatchStatus, JobStatus, make_file_id
from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.manifest import PointerContendedError
from tests.fakes.manifests import FakeManifestStore
from tests.fakes.provider import FakeLister
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable, FakeQueue
from tests.support import ManualClock, make_batch, make_job

DAY = "2026-02-28"


class Day:
    """A flow on fakes with a manifest store, and helpers to end batches."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.jobs, self.batches = FakeJobsTable(self.clock), FakeBatchesTable(self.clock)
        self.store = FakeManifestStore()
        self.flow: BatchFlowService = build_flow(
            Settings(), jobs=self.jobs, batches=self.batches, provider=FakeLister([]),
            queue=FakeQueue(), clock=self.clock, new_uuid=lambda: "unused",
            manifests=self.store,
        )  # fmt: skip

    def batch(
        self,
        status: BatchStatus,
        done: list[str],
        failed: tuple[str, ...] = (),
        pending: tuple[str, ...] = (),
        cause: str | None = None,
    ) -> Batch:
        """A batch of the day that ended `status` with these entities completed / failed /
        never finished, and the outcome summary's `cause`."""
        self.clock.advance(60)
        batch = self.batches.create(make_batch(DAY, now_ms=self.clock.now))
        for entity in [*done, *failed]:
            file_id = make_file_id(entity, DAY)
            if self.jobs.get(file_id) is None:
                self.jobs.create(
                    make_job(entity, DAY, batch_id=batch.batch_id, now_ms=self.clock.now)
                )
            else:
                self.jobs.requeue(file_id, force=True)
                self.jobs.adopt(file_id, batch.batch_id)
            self.jobs.claim(file_id, "w", 60)
            if entity in done:
                key = f"{entity}/{DAY}/{file_id}"
                self.jobs.complete(file_id, "w", byte_count=1, sha256="0" * 64, destination_key=key)
            else:
                self.jobs.finish_unsuccessfully(file_id, "w", JobStatus.FAILED, "gone")
        for entity in pending:
            self.jobs.create(make_job(entity, DAY, batch_id=batch.batch_id, now_ms=self.clock.now))
        listed = [make_file_id(e, DAY) for e in [*done, *failed, *pending]]
        self.batches.mark_queued(batch.batch_id, listed)
        # finish.py records when a batch timed out; the item keeps it after a repair.
        timeout_at = iso_from_ms(self.clock.now) if status is BatchStatus.TIMEOUT else None
        outcome = OutcomeSummary(cause) if cause else None
        return self.batches.finish(batch.batch_id, status, timeout_at=timeout_at, outcome=outcome)

    def pointed(self) -> str:
        found = self.store.read_pointer("default", DAY)
        assert found is not None
        return found[0].batch_id


def test_a_failed_day_then_a_completed_rerun_lists_the_whole_day_and_takes_the_pointer() -> None:
    """The rerun's manifest lists the first batch's completed files too; the pointer moves."""
    day = Day()
    first = day.batch(BatchStatus.FAILED, ["accounts"], ("zones",))
    day.flow.write_manifest(first.batch_id)
    assert day.pointed() == first.batch_id
    rerun = day.batch(BatchStatus.COMPLETED, ["zones"])
    ref = day.flow.write_manifest(rerun.batch_id)
    assert ref is not None
    assert day.pointed() == rerun.batch_id
    listed = parse_manifest(day.store.objects[ref["key"]]).entries
    assert [e.file_id for e in listed] == [make_file_id(e, DAY) for e in ("accounts", "zones")]
    assert pointer_key("default", DAY).endswith("/latest.json")


def test_a_failed_rerun_never_replaces_a_completed_days_pointer() -> None:
    """A completed day stays pointed at after a rerun that failed."""
    day = Day()
    first = day.batch(BatchStatus.COMPLETED, ["accounts"])
    day.flow.write_manifest(first.batch_id)
    rerun = day.batch(BatchStatus.FAILED, [], ("billing",))
    day.flow.write_manifest(rerun.batch_id)
    assert day.pointed() == first.batch_id


def test_an_earlier_batchs_replay_leaves_out_later_batches_and_the_pointer() -> None:
    """Replaying the first batch's step after a rerun renders the same bytes, writes nothing:
    the rerun's own files are left out of the first batch's manifest."""
    day = Day()
    first = day.batch(BatchStatus.FAILED, ["accounts"], ("zones",))
    first_ref = day.flow.write_manifest(first.batch_id)
    rerun = day.batch(BatchStatus.COMPLETED, ["billing"])
    day.flow.write_manifest(rerun.batch_id)
    writes = day.store.writes
    assert day.flow.write_manifest(first.batch_id) == first_ref
    assert day.store.writes == writes
    assert day.pointed() == rerun.batch_id


def test_an_earlier_batchs_replay_after_a_rerun_adopted_its_files_is_refused_not_rewritten() -> (
    None
):
    """The rerun moved the first batch's failed file away, so its `unpublished` list cannot be
    rendered again as it was: the replay is a conflict, named superseded (the day is the
    rerun's, nobody tampered), and the first manifest stays as it is."""
    day = Day()
    first = day.batch(BatchStatus.FAILED, ["accounts"], ("zones",))
    first_ref = day.flow.write_manifest(first.batch_id)
    assert first_ref is not None
    before = day.store.objects[first_ref["key"]]
    day.flow.write_manifest(day.batch(BatchStatus.COMPLETED, ["zones"]).batch_id)
    refused = day.flow.write_manifest(first.batch_id)
    assert refused is not None
    assert refused["problem"].startswith("manifest_superseded: ")
    assert day.store.objects[first_ref["key"]] == before


def test_the_manifest_names_the_failed_and_pending_files_and_the_cause() -> None:
    """A timed-out batch: its failed file with its code, its never-finished file as pending,
    counts that add up, the cause; the step's result names the first pending FileIDs."""
    day = Day()
    cause = "timeout: 1 file(s) pending"
    batch = day.batch(BatchStatus.TIMEOUT, ["accounts"], ("zones",), ("orders",), cause)
    orders = make_file_id("orders", DAY)
    ref = day.flow.write_manifest(batch.batch_id)
    assert ref is not None
    assert ref["pending_files"] == [orders]
    manifest = parse_manifest(day.store.objects[ref["key"]])
    assert [(f.file_id, f.status, f.error_code) for f in manifest.unpublished] == [
        (orders, "pending", None),
        (make_file_id("zones", DAY), "failed", "unknown"),
    ]
    assert manifest.header.cause == cause


def test_a_pointer_that_keeps_changing_is_a_transient_error() -> None:
    """Lost compare-and-swaps are retried a few times, then the step fails (and is retried)."""
    day = Day()
    first = day.batch(BatchStatus.COMPLETED, ["accounts"])
    day.store.refuse_pointer = 100
    with pytest.raises(PointerContendedError):
        day.flow.write_manifest(first.batch_id)


def test_without_a_bucket_no_manifest_is_written() -> None:
    """A flow wired without a destination bucket returns no manifest."""
    day = Day()
    day.flow.manifests = None
    assert day.flow.write_manifest(day.batch(BatchStatus.COMPLETED, ["a"]).batch_id) is None


def test_a_timed_out_batch_repaired_to_completed_gets_its_own_manifest_and_the_pointer() -> None:
    """timeout -> completed: a second manifest for the same batch, named by the pointer; the
    timeout manifest stays as it was, and a replay of either step writes nothing."""
    day = Day()
    batch = day.batch(BatchStatus.TIMEOUT, ["accounts"])
    timed_out = day.flow.write_manifest(batch.batch_id)
    assert timed_out is not None
    first_bytes = day.store.objects[timed_out["key"]]
    day.clock.advance(60)
    day.batches.finish(batch.batch_id, BatchStatus.COMPLETED)
    completed = day.flow.write_manifest(batch.batch_id)
    assert completed is not None
    assert completed["key"] != timed_out["key"]
    assert parse_manifest(day.store.objects[completed["key"]]).header.status == "completed"
    pointer = day.store.read_pointer("default", DAY)
    assert pointer is not None
    assert (pointer[0].key, pointer[0].status) == (completed["key"], "completed")
    assert day.store.objects[timed_out["key"]] == first_bytes
    writes = day.store.writes
    assert day.flow.write_manifest(batch.batch_id) == completed
    assert day.store.writes == writes


def test_a_repaired_batchs_manifest_says_when_it_ended_not_when_it_timed_out() -> None:
    """The completed manifest's finished_at is the completion's time; the timeout one's, the
    timeout's (the item keeps TimeoutAt after the repair)."""
    day = Day()
    batch = day.batch(BatchStatus.TIMEOUT, ["accounts"])
    timed_out = day.flow.write_manifest(batch.batch_id)
    day.clock.advance(60)
    repaired = day.batches.finish(batch.batch_id, BatchStatus.COMPLETED)
    completed = day.flow.write_manifest(batch.batch_id)
    assert timed_out is not None
    assert completed is not None
    assert batch.timeout_at is not None
    assert repaired.timeout_at == batch.timeout_at != repaired.updated_at
    assert parse_manifest(day.store.objects[timed_out["key"]]).header.finished_at == (
        batch.timeout_at
    )
    assert parse_manifest(day.store.objects[completed["key"]]).header.finished_at == (
        repaired.updated_at
    )

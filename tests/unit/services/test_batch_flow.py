"""The batch flow's use cases on in-memory fakes, wired by the bootstrap with overrides."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from structlog.testing import capture_logs

from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import Settings
from dlpipe.domain.listing import FileDescriptor
from dlpipe.domain.model import SETS_MAX_FILES, BatchStatus, FileJob, JobStatus, make_file_id
from dlpipe.domain.provider_errors import ProviderUnavailableError
from dlpipe.domain.rules import batch_ttl_epoch_s
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import ProviderOutage, QueueResult
from tests.fakes.events import FakeEventBus
from tests.fakes.provider import FakeLister, descriptor
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable, FakeQueue
from tests.support import ManualClock

DAY = "2026-02-28"
ENTITIES = ["accounts", "billing", "contacts", "deals", "events"]
LEASE_S = 300


@dataclass
class Rig:
    """A flow on fakes, and the fakes to look at."""

    clock: ManualClock
    jobs: FakeJobsTable
    batches: FakeBatchesTable
    queue: FakeQueue
    lister: FakeLister
    flow: BatchFlowService

    def file_ids(self) -> list[str]:
        return [make_file_id(e, DAY) for e in ENTITIES]

    def run_fetch(self, batch_id: str) -> list[QueueResult]:
        """Every chunk until the listing ends, as the durable shell calls them."""
        results = [self.flow.fetch_and_queue(batch_id, DAY)]
        while not results[-1].done:
            results.append(self.flow.fetch_and_queue(batch_id, DAY, results[-1]))
        return results

    def finish(self, file_id: str, status: JobStatus = JobStatus.COMPLETED) -> FileJob:
        """What a worker does: claim, then complete (or fail) under that claim."""
        self.jobs.claim(file_id, "worker", LEASE_S)
        if status is JobStatus.COMPLETED:
            return self.jobs.complete(
                file_id, "worker", byte_count=100, sha256="0" * 64, destination_key=file_id
            )
        return self.jobs.finish_unsuccessfully(file_id, "worker", status, "bad_padding: no")


@pytest.fixture
def rig() -> Rig:
    clock = ManualClock()
    jobs, batches, queue = FakeJobsTable(clock), FakeBatchesTable(clock), FakeQueue()
    lister = FakeLister([descriptor(e, DAY) for e in ENTITIES])
    uuids = iter(f"00000000-0000-4000-8000-00000000000{n}" for n in range(10))
    flow = build_flow(
        Settings(),
        jobs=jobs,
        batches=batches,
        provider=lister,
        queue=queue,
        clock=clock,
        new_uuid=lambda: next(uuids),
        events=FakeEventBus(),
    )
    flow.chunk_entries = 2
    return Rig(clock, jobs, batches, queue, lister, flow)


def test_create_batch_writes_an_initiated_batch_and_a_second_run_attaches_to_it(rig: Rig) -> None:
    """One batch per day: the repeated schedule gets the same BatchID, not a second batch."""
    batch_id = rig.flow.create_batch(DAY)
    batch = rig.batches.require(batch_id)
    assert (batch.status, batch.polling_date) == (BatchStatus.INITIATED, DAY)
    assert batch.ttl_epoch_s == batch_ttl_epoch_s(rig.clock.now_ms() // 1000)
    assert rig.flow.create_batch(DAY) == batch_id
    assert len(rig.batches.items) == 1


def test_fetch_and_queue_fans_out_in_chunks_and_marks_the_batch_queued_at_the_end(
    rig: Rig,
) -> None:
    """5 entries, chunks of 2: three steps, one available job and one message per file."""
    batch_id = rig.flow.create_batch(DAY)
    results = rig.run_fetch(batch_id)
    assert [(r.offset, r.done) for r in results] == [(2, False), (4, False), (5, True)]
    assert (results[-1].expected, results[-1].sent) == (5, 5)
    assert sorted(rig.queue.sent_ids()) == rig.file_ids()
    assert {j.status for j in rig.jobs.items.values()} == {JobStatus.AVAILABLE}
    batch = rig.batches.require(batch_id)
    assert (batch.status, batch.expected) == (BatchStatus.QUEUED, 5)
    assert rig.lister.opened == 1  # one stream, continued by every chunk


def test_a_second_run_attached_to_a_queued_batch_only_watches(rig: Rig) -> None:
    """A repeat of the schedule once the fan-out is done reads no listing, writes no job and
    sends nothing: every message went out before the batch was marked queued."""
    batch_id = rig.flow.create_batch(DAY)
    rig.run_fetch(batch_id)
    rig.queue.sent = []
    attached = rig.flow.create_batch(DAY)
    result = rig.flow.fetch_and_queue(attached, DAY)
    assert attached == batch_id
    assert (result.done, result.sent, result.expected) == (True, 0, 5)
    assert rig.queue.sent_ids() == []
    assert rig.lister.opened == 1  # the first run's stream only


def test_a_replayed_chunk_resends_its_available_jobs_but_not_a_claimed_one(rig: Rig) -> None:
    """Crash between put and send: the replay sends again what is still available (and
    never what a worker has claimed meanwhile); nothing is written twice."""
    batch_id = rig.flow.create_batch(DAY)
    first, second = rig.file_ids()[:2]
    rig.queue.unsendable = {first}
    with pytest.raises(RuntimeError, match="queueing failed for 1 file"):
        rig.flow.fetch_and_queue(batch_id, DAY)
    assert rig.queue.sent_ids() == [second]
    rig.jobs.claim(second, "worker", LEASE_S)
    rig.queue.unsendable, rig.queue.sent = set(), []

    replayed = rig.flow.fetch_and_queue(batch_id, DAY)

    assert (replayed.offset, replayed.sent, replayed.already_present) == (2, 1, 1)
    assert rig.queue.sent_ids() == [first]
    assert rig.lister.opened == 2  # the crash dropped the open stream: the replay reopens
    assert rig.jobs.require(second).lease_owner == "worker"


def test_a_send_that_fails_for_good_names_the_queues_reason_in_the_error_and_the_log(
    rig: Rig,
) -> None:
    """SQS's reason (a KMS denial, say) reaches the step's error and a log event, not a count."""
    batch_id = rig.flow.create_batch(DAY)
    rig.queue.unsendable = {rig.file_ids()[0]}
    rig.queue.refusal = "SenderFault KMS.AccessDeniedException"
    with capture_logs() as logs, pytest.raises(RuntimeError) as raised:
        rig.flow.fetch_and_queue(batch_id, DAY)
    assert str(raised.value) == (
        "queueing failed for 1 file(s): 1 message(s) not sent: SenderFault KMS.AccessDeniedException"
    )
    failures = [e for e in logs if e["event"] == "batch.queueing_failed"]
    assert [(e["files"], e["reason"]) for e in failures] == [
        (1, "1 message(s) not sent: SenderFault KMS.AccessDeniedException")
    ]


def test_a_day_whose_files_all_completed_ends_completed(rig: Rig) -> None:
    batch_id = rig.flow.create_batch(DAY)
    rig.run_fetch(batch_id)
    for file_id in rig.file_ids():
        rig.finish(file_id)
    check = rig.flow.check_completion(batch_id, 1, is_last_poll=False)
    assert (check.status, check.completed, check.failed, check.pending) == ("completed", 5, 0, 0)
    batch = rig.batches.require(batch_id)
    assert (batch.status, batch.completed_files) == (
        BatchStatus.COMPLETED,
        frozenset(rig.file_ids()),
    )


def test_a_day_with_an_errored_file_ends_failed_once_nothing_is_pending(rig: Rig) -> None:
    batch_id = rig.flow.create_batch(DAY)
    rig.run_fetch(batch_id)
    bad, *good = rig.file_ids()
    rig.finish(bad, JobStatus.ERROR)
    for file_id in good[:-1]:
        rig.finish(file_id)
    pending = rig.flow.check_completion(batch_id, 1, is_last_poll=False)
    assert (pending.status, pending.pending) == (None, 1)
    rig.finish(good[-1])
    check = rig.flow.check_completion(batch_id, 2, is_last_poll=False)
    assert (check.status, check.completed, check.failed, check.error) == ("failed", 4, 0, 1)
    assert rig.batches.require(batch_id).failed_files == {bad}


def test_files_still_pending_at_the_last_poll_end_the_day_as_timeout(rig: Rig) -> None:
    batch_id = rig.flow.create_batch(DAY)
    rig.run_fetch(batch_id)
    rig.finish(rig.file_ids()[0])
    check = rig.flow.check_completion(batch_id, 12, is_last_poll=True)
    assert (check.status, check.completed, check.pending) == ("timeout", 1, 4)
    batch = rig.batches.require(batch_id)
    assert batch.status is BatchStatus.TIMEOUT
    assert batch.timeout_at is not None


def test_a_rerun_after_a_failed_day_adopts_its_unfinished_jobs(rig: Rig) -> None:
    """A new batch for the date: completed files stay done, the errored one moves and is sent."""
    old = rig.flow.create_batch(DAY)
    rig.run_fetch(old)
    bad, *good = rig.file_ids()
    rig.finish(bad, JobStatus.ERROR)
    for file_id in good:
        rig.finish(file_id)
    assert rig.flow.check_completion(old, 1, is_last_poll=False).status == "failed"
    rig.queue.sent = []

    new = rig.flow.create_batch(DAY)
    rig.run_fetch(new)

    assert new != old
    assert rig.queue.sent_ids() == [bad]
    assert (rig.jobs.require(bad).batch_id, rig.jobs.require(bad).status) == (
        new,
        JobStatus.AVAILABLE,
    )


@pytest.mark.parametrize("sets_max", [SETS_MAX_FILES, 1])
def test_a_rerun_refuses_a_later_copy_of_an_entity_an_earlier_batch_completed(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, sets_max: int
) -> None:
    """A rerun's listing names a1 (completed under the failed batch) in two chunks: the later
    copy is refused naming both entries and a1 counts once, with or without the sets."""
    monkeypatch.setattr("dlpipe.services.orchestrator.fanout.SETS_MAX_FILES", sets_max)
    monkeypatch.setattr("tests.fakes.stores.SETS_MAX_FILES", sets_max)
    a1, a2 = make_file_id("a1", DAY), make_file_id("a2", DAY)
    rig.lister.entries = [descriptor("a1", DAY), descriptor("a2", DAY)]
    failed = rig.flow.create_batch(DAY)
    rig.run_fetch(failed)
    rig.finish(a1)
    rig.finish(a2, JobStatus.ERROR)
    assert rig.flow.check_completion(failed, 1, is_last_poll=False).status == "failed"
    rig.lister.entries = [descriptor("a1", DAY), descriptor("a2", DAY), descriptor("a1", DAY)]

    rerun = rig.flow.create_batch(DAY)
    result = rig.run_fetch(rerun)[-1]

    line = "provider entry a1 rejected: duplicate entity 'a1' in the listing (files[0], files[2])"
    assert (result.expected, result.refused, result.refusals_shown) == (2, 1, (line,))
    rig.finish(a2)
    check = rig.flow.check_completion(rerun, 1, is_last_poll=False)
    assert (check.status, check.completed, check.failed, check.pending) == ("failed", 2, 0, 0)


def test_queued_count_is_what_the_batch_put_on_the_queue_not_what_it_expects(rig: Rig) -> None:
    """A rerun expects a1 (completed earlier: carried, not sent) and a2 (adopted and sent):
    ExpectedCount 2, QueuedCount 1."""
    a1, a2 = make_file_id("a1", DAY), make_file_id("a2", DAY)
    rig.lister.entries = [descriptor("a1", DAY), descriptor("a2", DAY)]
    failed = rig.flow.create_batch(DAY)
    rig.run_fetch(failed)
    assert rig.batches.require(failed).queued_count == 2
    rig.finish(a1)
    rig.finish(a2, JobStatus.FAILED)
    assert rig.flow.check_completion(failed, 1, is_last_poll=False).status == "failed"
    rerun = rig.flow.create_batch(DAY)
    rig.run_fetch(rerun)
    batch = rig.batches.require(rerun)
    assert (batch.expected, batch.queued_count) == (2, 1)


def test_an_outage_mid_listing_is_timed_from_the_last_chunk_not_from_the_batch_start(
    rig: Rig,
) -> None:
    """A chunk that took three hours (a slow day) does not use up the provider-outage budget:
    the outage that stops chunk 2 counts from the end of chunk 1."""

    def stream(date: str) -> Iterator[FileDescriptor]:
        yield descriptor("a1", DAY)
        rig.clock.advance(3 * 3600)  # chunk 1's writes and sends, slowly
        yield descriptor("a2", DAY)
        yield descriptor("a3", DAY)
        raise ProviderUnavailableError("HTTP 503", attempts=3, status_code=503)

    rig.flow.provider = FakeLister()
    rig.flow.provider.iter_listing = stream  # type: ignore[method-assign]
    batch_id = rig.flow.create_batch(DAY)
    first = rig.flow.fetch_and_queue(batch_id, DAY)
    rig.clock.advance(60)
    with pytest.raises(ProviderOutage) as outage:
        rig.flow.fetch_and_queue(batch_id, DAY, QueueResult.from_dict(first.to_dict()))
    assert outage.value.elapsed_seconds == 60


def test_a_slower_pollers_progress_counts_never_outlive_the_batchs_end(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs poll one batch (a second run attached to it). The slower one counted while
    files were pending, and its record lands between the deciding poll's record of the final
    counts and its end of the batch: the ended batch keeps the final counts, not the
    progress ones (they were seen on completed days: 4 of 5 completed, 1 pending)."""
    batch_id = rig.flow.create_batch(DAY)
    rig.run_fetch(batch_id)
    for file_id in rig.file_ids():
        rig.finish(file_id)
    record = rig.batches.record_counts

    def interleaved(batch: str, **counts: object) -> object:
        recorded = record(batch, **counts)  # type: ignore[arg-type]
        # The slower poller's counts, read while 2 files were still pending.
        record(batch, completed=3, failed=0, error=0, completed_files=None, failed_files=None)
        return recorded

    monkeypatch.setattr(rig.batches, "record_counts", interleaved)
    assert rig.flow.check_completion(batch_id, 1, False).status == "completed"
    ended = rig.batches.require(batch_id)
    assert ended.status is BatchStatus.COMPLETED
    assert (ended.completed_count, ended.failed_count, ended.error_count) == (5, 0, 0)
    assert ended.completed_files == frozenset(rig.file_ids())

"""fetch-and-queue in chunks under the SDK's local runner, against the emulators and a paging stub."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
)

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile
from dlpipe.domain.model import BatchStatus, FileJob, JobStatus
from dlpipe.local.durable_runner import enforce_checkpoint_size_limit
from dlpipe.local.stub.faults import BROKEN_MALFORMED, Faults
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.fanout import FileLister, in_parallel
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import QueueResult
from tests.integration.test_orchestrator_flow import drain, queue_that_is_gone
from tests.provider_support import StubFactory, fast_client
from tests.support import ManualClock, descriptor, make_job, unique_day

pytest_plugins = ["tests.provider_fixtures"]
LEASE_S = 60
pytestmark = pytest.mark.integration

FILES, PAGE_SIZE, CHUNK = 250, 40, 60  # 5 chunks: 60, 60, 60, 60, 10 entries


@pytest.fixture
def queue(clients: AwsClients) -> Iterator[JobQueue]:
    """A queue of this test's own, deleted afterwards."""
    url = clients.sqs.create_queue(QueueName=f"fanout-{uuid.uuid4().hex[:16]}")["QueueUrl"]
    yield JobQueue(clients.sqs, url)
    clients.sqs.delete_queue(QueueUrl=url)


@pytest.fixture
def puts(clients: AwsClients) -> Iterator[Counter[str]]:
    """PutItem calls per FileID on the emulator's DynamoDB client, counted by a botocore hook."""
    counted: Counter[str] = Counter()
    lock = threading.Lock()

    def count(params: dict[str, Any], **_: Any) -> None:
        file_id = params.get("Item", {}).get("FileID", {}).get("S")
        if file_id is not None:
            with lock:
                counted[file_id] += 1

    event = "provide-client-params.dynamodb.PutItem"
    clients.dynamodb.meta.events.register(event, count, unique_id="fanout-puts")
    yield counted
    clients.dynamodb.meta.events.unregister(event, unique_id="fanout-puts")


@pytest.fixture
def paged_stub(stub_factory: StubFactory) -> StubProvider:
    """A stub listing FILES listing-only files in pages of PAGE_SIZE."""
    return stub_factory([], page_size=PAGE_SIZE, synthetic_files=FILES)


class Offsets:
    """Wraps flow.fetch_and_queue: records the listing offset every chunk call starts from."""

    def __init__(self, flow: BatchFlowService) -> None:
        self.started: list[int] = []
        self._real = flow.fetch_and_queue
        flow.fetch_and_queue = self  # type: ignore[method-assign]

    def __call__(self, batch_id: str, date: str, resume: QueueResult | None = None) -> QueueResult:
        self.started.append(resume.offset if resume else 0)
        return self._real(batch_id, date, resume)


def flow_on(
    provider: FileLister,
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
    chunk: int = CHUNK,
) -> BatchFlowService:
    """The real flow over `provider`, chunked by `chunk` entries. A new one is a fresh
    invocation: it has no open listing."""
    return BatchFlowService(
        jobs=jobs,
        batches=batches,
        provider=provider,
        queue=queue,
        clock=clock,
        new_uuid=lambda: str(uuid.uuid4()),
        chunk_entries=chunk,
    )


def run_day(flow: BatchFlowService, day: str) -> DurableFunctionTestResult:
    """One durable execution of `day` (one poll, so an unworked day ends as timeout)."""
    enforce_checkpoint_size_limit()  # every checkpoint over 256 KB fails the run, as on AWS
    handler = build_durable_handler(lambda: flow, poll_interval_seconds=60, max_polls=1)
    with DurableFunctionTestRunner(handler=handler, skip_time=True) as runner:
        outcome: DurableFunctionTestResult = runner.run(
            input=json.dumps({"date": day}), execution_timeout=120
        )
    return outcome


def result_of(outcome: DurableFunctionTestResult) -> dict[str, Any]:
    assert outcome.result is not None, outcome.error
    result: dict[str, Any] = json.loads(outcome.result)
    return result


def fetch_steps(outcome: DurableFunctionTestResult) -> list[str]:
    return [op.name or "" for op in outcome.operations if (op.name or "").startswith("fetch-")]


def listed_ids(stub: StubProvider, day: str) -> list[str]:
    """The day's FileIDs in the provider's order."""
    return [entry.file_id for entry in fast_client(stub).list_files(day).files]


def test_a_paged_day_is_queued_in_chunk_steps_with_each_job_written_once(
    paged_stub: StubProvider,
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
    clients: AwsClients,
    puts: Counter[str],
) -> None:
    """250 files paged by 40 become 5 chunk steps; every job is put once and queued once."""
    day = unique_day()
    flow = flow_on(fast_client(paged_stub), jobs, batches, queue, clock)
    outcome = run_day(flow, day)
    result = result_of(outcome)
    expected = listed_ids(paged_stub, day)
    steps = ["fetch-and-queue-files"] + [f"fetch-and-queue-files-{n}" for n in range(2, 6)]
    assert fetch_steps(outcome) == steps
    assert (result["status"], result["pending"]) == ("timeout", FILES)
    assert Counter(puts[f] for f in expected) == Counter({1: FILES})
    assert sorted(drain(clients, queue)) == sorted(expected)
    batch = batches.require(result["batch_id"])
    assert len(batch.expected_files) == FILES
    sizes = [len((getattr(op, "result", None) or "").encode()) for op in outcome.operations]
    checkpoints = [s for op, s in zip(outcome.operations, sizes, strict=True) if op.name in steps]
    assert 0 < max(checkpoints) < 1024, checkpoints  # counts and an offset, never FileIDs


def test_a_crash_in_chunk_3_replays_only_chunks_from_3_on(
    paged_stub: StubProvider,
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
    clients: AwsClients,
    puts: Counter[str],
) -> None:
    """After a crash mid-chunk 3, chunks 1-2 are not re-run: their jobs are put once, the rest
    at most twice, and every file is queued at least once."""
    day = unique_day()
    expected = listed_ids(paged_stub, day)
    doomed = expected[2 * CHUNK + 5]  # inside chunk 3
    flow = flow_on(fast_client(paged_stub), jobs, batches, queue, clock)
    offsets = Offsets(flow)
    real_create = flow.jobs.create
    crashed = threading.Event()

    def create(job: FileJob) -> FileJob:
        if job.file_id == doomed and not crashed.is_set():
            crashed.set()
            raise RuntimeError("simulated crash in chunk 3")
        return real_create(job)

    flow.jobs.create = create  # type: ignore[method-assign]
    result = result_of(run_day(flow, day))
    assert result["status"] == "timeout"
    assert offsets.started == [0, CHUNK, 2 * CHUNK, 2 * CHUNK, 3 * CHUNK, 4 * CHUNK]
    assert [f for f in expected[: 2 * CHUNK] if puts[f] != 1] == []  # chunks 1-2 not re-run
    assert max(puts[f] for f in expected) <= 2
    assert set(drain(clients, queue)) == set(expected)
    assert len(batches.require(result["batch_id"]).expected_files) == FILES


def test_a_malformed_page_fails_the_day_and_a_run_after_the_fix_queues_every_file(
    stub_factory: StubFactory,
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
    clients: AwsClients,
) -> None:
    """Page 3 broken mid-way fails the day naming the fault; once fixed, the next run finishes."""
    faults = Faults(broken_page=3, broken_page_kind=BROKEN_MALFORMED, broken_at_entry=10)
    stub = stub_factory([], faults, page_size=PAGE_SIZE, synthetic_files=FILES)
    day = unique_day()
    flow = flow_on(fast_client(stub), jobs, batches, queue, clock)
    first = run_day(flow, day)
    failed = result_of(first)
    assert failed["status"] == "failed"
    assert fetch_steps(first) == ["fetch-and-queue-files", "fetch-and-queue-files-2"]
    message = batches.require(failed["batch_id"]).error_message or ""
    assert message.startswith("provider_refused: malformed listing: invalid JSON"), message
    assert "at entry 90" in message, message
    stub.faults.set(broken_page=0)
    again = result_of(run_day(flow, day))
    assert again["batch_id"] != failed["batch_id"]
    assert again["status"] == "timeout"
    batch = batches.require(again["batch_id"])
    assert batch.status is BatchStatus.TIMEOUT
    expected = listed_ids(stub, day)
    assert set(batch.expected_files) == set(expected)
    assert {j.file_id for j in jobs.batch_get(set(expected)).values()} == set(expected)
    assert set(drain(clients, queue)) == set(expected)


def test_parallel_puts_against_dynamodb_local_print_their_rate(jobs: JobsTable) -> None:
    """Figures only: 1,000 conditional puts on 8 threads vs one at a time (no timed assertion)."""
    rates = {}
    for label, write in (("sequential", _sequential), ("8 threads", in_parallel)):
        day = unique_day()
        batch = [make_job(f"bench{n:04d}", day) for n in range(1000)]
        started = time.monotonic()
        write(jobs.create, batch)
        rates[label] = len(batch) / (time.monotonic() - started)
    print(
        "puts/s against DynamoDB Local, 1,000 jobs: "
        + ", ".join(f"{label} {rate:.0f}" for label, rate in rates.items())
    )
    assert all(rate > 0 for rate in rates.values())


def _sequential(func: Callable[[FileJob], FileJob], items: list[FileJob]) -> list[FileJob]:
    return [func(item) for item in items]


class FixedListing:
    """A provider lister over fixed entries: their order and their duplicates are the test's."""

    def __init__(self, entries: list[FileDescriptor | RejectedFile]) -> None:
        self.entries = entries

    def list_files(self, date: str) -> ListingResult:
        files = [e for e in self.entries if isinstance(e, FileDescriptor)]
        return ListingResult(date, files, [e for e in self.entries if isinstance(e, RejectedFile)])

    def iter_listing(self, date: str) -> Iterator[FileDescriptor | RejectedFile]:
        return iter(self.entries)


def to_the_end(flow: BatchFlowService, batch_id: str, day: str, resume: QueueResult) -> QueueResult:
    """The chunk steps after `resume`, to the one that finds the listing's end."""
    result = flow.fetch_and_queue(batch_id, day, resume)
    while not result.done:
        result = flow.fetch_and_queue(batch_id, day, result)
    return result


def test_a_copy_of_an_entity_an_earlier_chunk_wrote_is_refused_through_the_job_table(
    jobs: JobsTable, batches: BatchesTable, queue: JobQueue, clock: ManualClock, clients: AwsClients
) -> None:
    """The stream keeps no memory of entities: entry 3 repeats entry 0 of an earlier chunk, and
    the conditional put finds it (the stored job's ListingIndex is 0, not 3). A replay of that
    chunk from a fresh invocation (after a crash before its sends) finds the same, and takes
    its own writes for a replay."""
    day = unique_day()
    entries: list[FileDescriptor | RejectedFile] = [
        descriptor(e, day) for e in ("alpha", "beta", "gamma", "alpha")
    ]
    gone = queue_that_is_gone(clients, queue)
    flow = flow_on(FixedListing(entries), jobs, batches, queue, clock, chunk=2)
    batch_id = flow.create_batch(day)
    first = flow.fetch_and_queue(batch_id, day)
    crashed = flow_on(FixedListing(entries), jobs, batches, gone, clock, chunk=2)
    with pytest.raises(RuntimeError, match="queueing failed for 1 file"):
        to_the_end(crashed, batch_id, day, first)  # gamma written, its send refused
    assert jobs.get(f"gamma-{day}").listing_index == 2  # type: ignore[union-attr]
    line = (
        "provider entry alpha rejected: duplicate entity 'alpha' in the listing"
        " (files[0], files[3])"
    )
    replayed = to_the_end(
        flow_on(FixedListing(entries), jobs, batches, queue, clock, chunk=2), batch_id, day, first
    )
    batch = batches.require(batch_id)
    assert batch.error_message == f"1 provider entries rejected: {line}"
    assert batch.expected_files == {f"{e}-{day}" for e in ("alpha", "beta", "gamma")}
    assert replayed == QueueResult(
        expected=3,
        sent=first.sent + 1,  # gamma is still available: sent again, at least once
        already_present=0,
        offset=4,
        done=True,
        refused=1,
        refusals_shown=(line,),
        ended_at_ms=clock.now_ms(),
    )


def test_a_rerun_refuses_a_later_copy_of_a_file_an_earlier_batch_completed(
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
    clients: AwsClients,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rerun cannot adopt alpha (completed under the failed batch), so no put finds its
    second copy: the ListedBy mark does. A crash and a replay from the first chunk take their
    own mark for a replay, and past the set cap alpha counts once, so the day ends failed
    naming both entries, not timed out short of a file."""
    monkeypatch.setattr("dlpipe.services.orchestrator.fanout.SETS_MAX_FILES", 1)
    monkeypatch.setattr("dlpipe.adapters.batches_table.SETS_MAX_FILES", 1)
    day = unique_day()
    alpha, beta, gamma = (f"{e}-{day}" for e in ("alpha", "beta", "gamma"))
    first = flow_on(FixedListing([descriptor("alpha", day), descriptor("beta", day)]), jobs,
                    batches, queue, clock, chunk=2)  # fmt: skip
    failed_batch = first.create_batch(day)
    first.fetch_and_queue(failed_batch, day)
    for file_id, outcome in ((alpha, None), (beta, "http_5xx: gave up")):
        jobs.claim(file_id, "w1", LEASE_S)
        if outcome is None:
            jobs.complete(file_id, "w1", byte_count=1, sha256="a" * 64, destination_key="k")
        else:
            jobs.finish_unsuccessfully(file_id, "w1", JobStatus.FAILED, outcome)
    assert first.check_completion(failed_batch, 1, is_last_poll=False).status == "failed"
    entries: list[FileDescriptor | RejectedFile] = [
        descriptor(e, day) for e in ("alpha", "beta", "alpha", "gamma")
    ]
    rerun_flow = flow_on(FixedListing(entries), jobs, batches, queue, clock, chunk=2)
    rerun = rerun_flow.create_batch(day)
    chunk_one = rerun_flow.fetch_and_queue(rerun, day)
    crashed = flow_on(FixedListing(entries), jobs, batches, queue_that_is_gone(clients, queue),
                      clock, chunk=2)  # fmt: skip
    with pytest.raises(RuntimeError, match="queueing failed for 1 file"):
        crashed.fetch_and_queue(rerun, day, chunk_one)  # gamma written, its send refused

    again = flow_on(FixedListing(entries), jobs, batches, queue, clock, chunk=2)
    result = to_the_end(again, rerun, day, again.fetch_and_queue(rerun, day))

    line = (
        "provider entry alpha rejected: duplicate entity 'alpha' in the listing"
        " (files[0], files[2])"
    )
    assert (result.expected, result.refused, result.refusals_shown) == (3, 1, (line,))
    stored = jobs.require(alpha)
    assert (stored.batch_id, stored.listed_by) == (failed_batch, f"{rerun}#0")
    for file_id in (beta, gamma):
        jobs.claim(file_id, "w2", LEASE_S)
        jobs.complete(file_id, "w2", byte_count=1, sha256="b" * 64, destination_key="k")
    check = again.check_completion(rerun, 1, is_last_poll=False)
    assert (check.status, check.completed, check.failed, check.pending) == ("failed", 3, 0, 0)
    assert batches.require(rerun).error_message == f"1 provider entries rejected: {line}"


def test_a_large_day_replayed_from_a_checkpoint_counts_every_file_once(
    jobs: JobsTable,
    batches: BatchesTable,
    queue: JobQueue,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the set cap (3 here) the flow holds a count, not FileIDs. A crash mid-chunk and a
    replay from the checkpoint in a fresh invocation still give ExpectedCount = the files
    listed, with a refusal and an in-chunk duplicate counted as the batch would count them."""
    monkeypatch.setattr("dlpipe.services.orchestrator.fanout.SETS_MAX_FILES", 3)
    monkeypatch.setattr("dlpipe.adapters.batches_table.SETS_MAX_FILES", 3)
    day = unique_day()
    entries: list[FileDescriptor | RejectedFile] = [descriptor(f"f{n}", day) for n in range(9)]
    entries[5] = RejectedFile("f5", "size: missing", "f5")  # an error job: counted
    entries[7] = descriptor("f6", day)  # f6 twice in chunk 4 (entries 6, 7): one error job
    flow = flow_on(FixedListing(entries), jobs, batches, queue, clock, chunk=2)
    batch_id = flow.create_batch(day)
    result = flow.fetch_and_queue(batch_id, day)
    result = flow.fetch_and_queue(batch_id, day, result)
    assert (result.offset, result.expected) == (4, 4)
    real_create = jobs.create
    crashed = threading.Event()

    def crash_on_f5(job: FileJob) -> FileJob:
        if job.file_id == f"f5-{day}" and not crashed.is_set():
            crashed.set()
            raise RuntimeError("simulated crash after f4's put")
        return real_create(job)

    replaying = flow_on(FixedListing(entries), jobs, batches, queue, clock, chunk=2)
    replaying.jobs.create = crash_on_f5  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="simulated crash"):
        replaying.fetch_and_queue(batch_id, day, result)
    again = flow_on(
        FixedListing(entries), jobs, batches, queue, clock, chunk=2
    )  # the retry: a fresh invocation
    result = to_the_end(again, batch_id, day, result)
    # f0-f4, f5 (error job), f6 (one error job for both copies), f8: 8 FileIDs
    assert (result.expected, result.refused) == (8, 0)
    batch = batches.require(batch_id)
    assert batch.sets_truncated
    assert (batch.expected, batch.expected_files) == (8, frozenset())
    stored = jobs.batch_get({f"f{n}-{day}" for n in range(9)})
    assert {j.file_id: j.listing_index for j in stored.values()} == {
        **{f"f{n}-{day}": n for n in (0, 1, 2, 3, 4, 5, 8)},
        f"f6-{day}": 6,
    }

"""The batch flow against the emulator over HTTP and the stub provider's real HTTP server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from dlpipe import metrics
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.messages import decode_message
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.schema import BATCH_SHARDS, STATUS_SHARDS
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import FetchFailed, ProviderOutage
from tests.provider_support import StubFactory, fast_client
from tests.support import ManualClock, unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.integration
LEASE_S = 60


@pytest.fixture
def queue(clients: AwsClients) -> Iterator[JobQueue]:
    """A queue of this test's own, deleted afterwards."""
    url = clients.sqs.create_queue(QueueName=f"flow-{uuid.uuid4().hex[:16]}")["QueueUrl"]
    yield JobQueue(clients.sqs, url)
    clients.sqs.delete_queue(QueueUrl=url)


def drain(clients: AwsClients, queue: JobQueue) -> list[str]:
    """Every FileID on the queue (messages are deleted as read)."""
    file_ids: list[str] = []
    while True:
        got = clients.sqs.receive_message(
            QueueUrl=queue.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        )
        messages = got.get("Messages", [])
        if not messages:
            return file_ids
        for message in messages:
            file_ids.append(decode_message(message["Body"]).file_id)
            clients.sqs.delete_message(
                QueueUrl=queue.queue_url, ReceiptHandle=message["ReceiptHandle"]
            )


def queue_that_is_gone(clients: AwsClients, queue: JobQueue) -> JobQueue:
    """`queue` as a sender whose queues no longer exist: the emulator refuses every send, as a
    crash between the puts and the sends would leave them unsent (one attempt, no retries)."""
    large = queue.large_queue_url
    return JobQueue(
        clients.sqs,
        f"{queue.queue_url}-gone",
        max_attempts=1,
        large_queue_url=f"{large}-gone" if large else None,
        large_file_threshold_bytes=queue.large_file_threshold_bytes,
    )


def work_done(jobs: JobsTable, file_id: str, failed: str | None = None) -> None:
    """What a worker does to a job: claim it, then complete it (or fail it with `failed`)."""
    job = jobs.claim(file_id, "w1", LEASE_S)
    if failed is None:
        # What the listing says the file is: a completed day whose jobs published other
        # contents than the listing names is a restated one (restate.py).
        size, sha256 = job.expected_size or 1, job.expected_sha256 or "a" * 64
        jobs.complete(file_id, "w1", byte_count=size, sha256=sha256, destination_key="k")
    else:
        jobs.finish_unsuccessfully(file_id, "w1", JobStatus.FAILED, failed)


@pytest.fixture
def make_flow(jobs: JobsTable, batches: BatchesTable, queue: JobQueue, clock: ManualClock) -> Any:
    """A flow on the shared tables, this test's queue and a given stub."""

    def build(stub: StubProvider, **kwargs: Any) -> BatchFlowService:
        return BatchFlowService(
            jobs=jobs,
            batches=batches,
            provider=fast_client(stub),
            queue=queue,
            clock=clock,
            new_uuid=lambda: str(uuid.uuid4()),
            **kwargs,
        )

    return build


def specs(entity: str, n: int = 3) -> list[StubFileSpec]:
    """n small files, CBC and GCM alternating."""
    return [
        StubFileSpec(f"{entity}{i}", 64 + i, CIPHER_CBC if i % 2 else CIPHER_GCM) for i in range(n)
    ]


def test_fetch_and_queue_writes_one_available_job_per_file_and_queues_each(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    batches: BatchesTable,
    clients: AwsClients,
    queue: JobQueue,
) -> None:
    """Every listed file gets one available job in the batch and one message; the batch is queued."""
    day, stub = unique_day(), stub_factory(specs(entity))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    result = flow.fetch_and_queue(batch_id, day)
    expected = set(stub.expected(day))
    assert (result.expected, result.sent, result.already_present) == (3, 3, 0)
    assert {j.file_id for j in jobs.query_by_batch(batch_id, JobStatus.AVAILABLE)} == expected
    assert sorted(drain(clients, queue)) == sorted(expected)
    batch = batches.require(batch_id)
    assert (batch.status, batch.expected_files) == (BatchStatus.QUEUED, expected)


def test_replayed_fetch_creates_no_duplicates_and_resends_only_still_available_jobs(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    batches: BatchesTable,
    clients: AwsClients,
    queue: JobQueue,
) -> None:
    """A crash after the puts (the sends refused here): the re-run writes nothing new and sends
    what nobody claimed meanwhile."""
    day, stub = unique_day(), stub_factory(specs(entity))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    with pytest.raises(RuntimeError, match="queueing failed for 3 file"):
        replace(flow, queue=queue_that_is_gone(clients, queue)).fetch_and_queue(batch_id, day)
    written = sorted(j.file_id for j in jobs.query_by_batch(batch_id))
    assert batches.require(batch_id).status is BatchStatus.INITIATED
    jobs.claim(written[0], "w1", LEASE_S)
    replay = flow.fetch_and_queue(batch_id, day)
    assert (replay.expected, replay.sent, replay.already_present) == (3, 2, 1)
    assert sorted(drain(clients, queue)) == written[1:]
    assert len(list(jobs.query_by_batch(batch_id))) == 3
    assert batches.require(batch_id).status is BatchStatus.QUEUED


def test_second_run_for_a_date_attaches_and_rerun_adopts_only_unfinished_files(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    batches: BatchesTable,
    clients: AwsClients,
    queue: JobQueue,
) -> None:
    """A repeat attaches to the live batch; after it ends, --rerun re-queues the failed file only."""
    day, stub = unique_day(), stub_factory(specs(entity, 2))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    assert flow.create_batch(day) == batch_id
    flow.fetch_and_queue(batch_id, day)
    good, bad = sorted(drain(clients, queue))
    work_done(jobs, good)
    work_done(jobs, bad, failed="http_5xx: gave up")
    assert flow.check_completion(batch_id, 1, False).status == "failed"
    assert flow.create_batch(day) != batch_id  # only a failed batch: a new one adopts the date

    rerun_id = flow.create_batch(day, rerun=True)
    result = flow.fetch_and_queue(rerun_id, day)
    assert (result.sent, result.already_present) == (1, 1)
    rerun_batch = batches.require(rerun_id)
    assert (rerun_batch.expected, rerun_batch.queued_count) == (2, 1)  # good was carried
    assert drain(clients, queue) == [bad]
    assert (jobs.require(bad).batch_id, jobs.require(bad).status) == (rerun_id, JobStatus.AVAILABLE)
    assert jobs.require(good).batch_id == batch_id


def test_completed_date_is_attached_not_downloaded_again(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    clients: AwsClients,
    queue: JobQueue,
) -> None:
    """A run for a date whose batch completed reports that batch and queues nothing."""
    day, stub = unique_day(), stub_factory(specs(entity, 1))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    (only,) = drain(clients, queue)
    work_done(jobs, only)
    assert flow.check_completion(batch_id, 1, False).status == "completed"
    again = flow.create_batch(day)
    assert again == batch_id
    assert flow.fetch_and_queue(again, day).sent == 0
    assert drain(clients, queue) == []


def test_completion_checks_while_files_are_pending_query_batch_index_and_get_no_file(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    clients: AwsClients,
    queue: JobQueue,
) -> None:
    """While a file is pending a poll reads no job by key: it counts BatchIndex (two Queries a
    shard: `available`, then the `downloading`..`failed` run), the sweeper asks StatusIndex
    for stale jobs (none), and the completed ones are not counted (derived) until nothing is
    pending."""
    day, stub = unique_day(), stub_factory(specs(entity, 4))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    ids = sorted(drain(clients, queue))
    keys_read: list[int] = []
    queried: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        keys_read.append(sum(len(r["Keys"]) for r in params["RequestItems"].values()))

    def query(params: dict[str, Any], **_: Any) -> None:
        values = params.get("ExpressionAttributeValues", {})
        status = values.get(":status", values.get(":first", {})).get("S")
        shard = values.get(":shard", {}).get("S", "")
        queried.append(f"{params['IndexName']}:{status or shard.partition('#')[0]}")

    events = clients.dynamodb.meta.events
    events.register("provide-client-params.dynamodb.BatchGetItem", count)
    events.register("provide-client-params.dynamodb.Query", query)
    try:
        for file_id in ids[:3]:
            work_done(jobs, file_id)
        first = flow.check_completion(batch_id, 1, False)
        second = flow.check_completion(batch_id, 2, False)
    finally:
        events.unregister("provide-client-params.dynamodb.BatchGetItem", count)
        events.unregister("provide-client-params.dynamodb.Query", query)
    assert (first.status, first.completed, first.pending) == (None, 3, 1)
    assert (second.status, second.pending) == (None, 1)
    # No job is read by key: the pending one is counted, and it is not stale.
    assert keys_read == []
    per_poll = [
        f"BatchIndex:{s}" for s in ("available", "downloading") for _ in range(BATCH_SHARDS)
    ]
    per_poll += [
        f"StatusIndex:{s}" for s in ("downloading", "available") for _ in range(STATUS_SHARDS)
    ]
    assert queried == per_poll * 2


def test_one_bad_file_ends_the_batch_failed_with_it_in_failed_files(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    batches: BatchesTable,
    clients: AwsClients,
    queue: JobQueue,
) -> None:
    """All files terminal, one in error: the batch ends failed and FailedFiles names it."""
    day, stub = unique_day(), stub_factory(specs(entity, 2))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    good, bad = sorted(drain(clients, queue))
    for file_id in (good, bad):
        jobs.claim(file_id, "w1", LEASE_S)
    jobs.complete(good, "w1", byte_count=1, sha256="a" * 64, destination_key="k")
    jobs.finish_unsuccessfully(bad, "w1", JobStatus.ERROR, "tag_mismatch: GCM tag did not verify")
    check = flow.check_completion(batch_id, 1, False)
    batch = batches.require(batch_id)
    assert (check.status, check.completed, check.failed, check.error) == ("failed", 1, 0, 1)
    assert (batch.status, batch.failed_files, batch.completed_files) == (
        BatchStatus.FAILED,
        {bad},
        {good},
    )


def test_files_still_pending_at_the_last_poll_time_the_batch_out(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    """No worker ran: the last poll ends the batch timeout with TimeoutAt set."""
    day, stub = unique_day(), stub_factory(specs(entity, 2))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    assert flow.check_completion(batch_id, 1, False).status is None
    clock.advance(3600)
    check = flow.check_completion(batch_id, 2, True)
    batch = batches.require(batch_id)
    assert (check.status, check.pending) == ("timeout", 2)
    assert batch.status is BatchStatus.TIMEOUT
    assert batch.timeout_at is not None


@pytest.mark.parametrize(
    ("outage", "cause"),
    [({"error_rate": 1.0}, r"GET /v1/files: HTTP 50\d"), ({"throttle_rate": 1.0}, "HTTP 429")],
    ids=["5xx", "429"],
)
def test_provider_outage_raises_provider_outage_and_leaves_the_batch_initiated(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    batches: BatchesTable,
    clock: ManualClock,
    outage: dict[str, float],
    cause: str,
) -> None:
    """Every call 5xx / 429: a transient ProviderOutage naming the cause and the time waited."""
    day = unique_day()
    stub = stub_factory(specs(entity, 1), faults=Faults(**outage))
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    clock.advance(90)
    with pytest.raises(ProviderOutage, match=cause) as caught:
        flow.fetch_and_queue(batch_id, day)
    assert (caught.value.batch_id, caught.value.elapsed_seconds) == (batch_id, 90)
    assert batches.require(batch_id).status is BatchStatus.INITIATED


def test_refused_token_raises_fetch_failed_and_fail_batch_records_why(
    make_flow: Any, stub_factory: StubFactory, entity: str, batches: BatchesTable
) -> None:
    """A 401 is permanent: FetchFailed (provider_refused) after one request; fail-batch says why."""
    day = unique_day()
    stub = stub_factory(specs(entity, 1))
    flow = make_flow(stub)
    flow.provider = fast_client(stub, token="not-the-token-0000")
    batch_id = flow.create_batch(day)
    with pytest.raises(FetchFailed, match=r"provider_refused: .*HTTP 401") as caught:
        flow.fetch_and_queue(batch_id, day)
    assert stub.request_count == 1
    flow.fail_batch(batch_id, str(caught.value))
    batch = batches.require(batch_id)
    assert batch.status is BatchStatus.FAILED
    assert (batch.error_message or "").startswith("provider_refused: ")


def test_rejected_listing_entries_become_error_jobs_or_a_batch_error(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    batches: BatchesTable,
    clients: AwsClients,
    queue: JobQueue,
) -> None:
    """An unknown cipher -> an `error` job; an entity like ../../etc -> the batch's ErrorMessage."""
    day = unique_day()
    hostile = {
        "entity": "../../etc",
        "url": "http://127.0.0.1:1/x",
        "encrypted_key": "a2V5",
        "iv": "aXY=",
        "cipher": CIPHER_GCM,
        "size": 1,
        "sha256": "0" * 64,
    }
    faults = Faults(unknown_cipher_entities={f"{entity}1"}, extra_listing_entries=[hostile])
    stub = stub_factory(specs(entity, 2), faults=faults)
    flow = make_flow(stub)
    batch_id = flow.create_batch(day)
    result = flow.fetch_and_queue(batch_id, day)
    assert (result.expected, result.sent) == (2, 1)
    refused = jobs.require(f"{entity}1-{day}")
    assert refused.status is JobStatus.ERROR
    assert refused.error_message is not None
    assert refused.error_message.startswith("rejected_listing:")
    batch = batches.require(batch_id)
    assert batch.error_message is not None
    assert "files[2]" in batch.error_message
    (good,) = drain(clients, queue)
    work_done(jobs, good)
    assert flow.check_completion(batch_id, 1, False).status == "failed"


def test_empty_day_completes_at_the_first_check(
    make_flow: Any, stub_factory: StubFactory, entity: str, batches: BatchesTable
) -> None:
    """A listing with no files: nothing queued, and the batch completes."""
    day = unique_day()
    flow = make_flow(stub_factory(specs(entity, 1), faults=Faults(empty_listing=True)))
    batch_id = flow.create_batch(day)
    assert flow.fetch_and_queue(batch_id, day).expected == 0
    assert flow.check_completion(batch_id, 1, False).status == "completed"


def test_sweeper_reports_and_requeues_a_job_whose_worker_died(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    jobs: JobsTable,
    clients: AwsClients,
    queue: JobQueue,
    clock: ManualClock,
) -> None:
    """An expired claim is counted in StuckJobs and, with sweeping on, requeued and re-sent."""
    day, stub = unique_day(), stub_factory(specs(entity, 1))
    flow = make_flow(stub, sweep_requeue=True)
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    (only,) = drain(clients, queue)
    jobs.claim(only, "dead-worker", LEASE_S)
    clock.advance(LEASE_S + 1)
    lines: list[str] = []
    metrics.set_sink(lines.append)
    try:
        assert flow.check_completion(batch_id, 1, False).status is None
    finally:
        metrics.set_sink(metrics.stdout_line)
    assert any('"StuckJobs":[1.0]' in line for line in lines)
    assert jobs.require(only).status is JobStatus.AVAILABLE
    assert drain(clients, queue) == [only]

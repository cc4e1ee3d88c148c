"""The poller's sweeper on the emulator: it finishes, requeues or re-sends what a dead worker
left, conditionally, and leaves live claims alone."""

from __future__ import annotations

from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.published import published_check
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.cipher_format import CIPHER_CBC
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator import sweeper
from tests.integration.test_orchestrator_flow import LEASE_S, drain, make_flow, queue
from tests.provider_support import StubFactory
from tests.support import ManualClock, unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.integration
__all__ = ["make_flow", "queue"]  # fixtures shared with the flow's tests
RESEND_S = 600


def one_claimed_file(
    make_flow: Any,
    stub: StubProvider,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    provisioned: Provisioned,
) -> tuple[Any, str, str]:
    """A day of one file whose worker claimed it and died; (flow, batch, FileID)."""
    flow = make_flow(
        stub,
        resend_after_seconds=RESEND_S,
        published=published_check(clients.s3, str(provisioned.destination_bucket)),
    )
    day = unique_day()
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    (file_id,) = drain(clients, queue)
    jobs.claim(file_id, "dead-worker", LEASE_S)
    return flow, batch_id, file_id


def publish(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    file_id: str,
    sha256: str | None = None,
) -> str:
    """Put the job's object at its deterministic key as the sink writes it (sha256 metadata)."""
    job = jobs.require(file_id)
    key = f"{job.entity}/{job.download_date}/{file_id}"
    body = b"x" * (job.expected_size or 0)
    clients.s3.put_object(
        Bucket=str(provisioned.destination_bucket),
        Key=key,
        Body=body,
        Metadata={"sha256": sha256 or str(job.expected_sha256)},
    )
    return key


@pytest.fixture
def stub(stub_factory: StubFactory, entity: str) -> StubProvider:
    """A provider listing one small file."""
    return stub_factory([StubFileSpec(entity, 100, CIPHER_CBC)])


def test_an_expired_claim_whose_file_is_published_is_completed_not_requeued(
    make_flow: Any,
    stub: StubProvider,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    provisioned: Provisioned,
    clock: ManualClock,
) -> None:
    """A worker that died between publish and complete: the sweeper completes the job, sends nothing."""
    flow, batch_id, file_id = one_claimed_file(make_flow, stub, clients, queue, jobs, provisioned)
    key = publish(clients, provisioned, jobs, file_id)
    clock.advance(LEASE_S + 1)
    assert flow.check_completion(batch_id, 1, False).status == "completed"
    job = jobs.require(file_id)
    assert job.status is JobStatus.COMPLETED
    assert job.destination_key == key
    assert job.sha256 == job.expected_sha256
    assert drain(clients, queue) == []


def test_a_live_claim_is_left_alone_even_when_its_file_is_published(
    make_flow: Any,
    stub: StubProvider,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    provisioned: Provisioned,
) -> None:
    """A claim under a live lease is neither completed nor requeued by the sweeper."""
    flow, batch_id, file_id = one_claimed_file(make_flow, stub, clients, queue, jobs, provisioned)
    publish(clients, provisioned, jobs, file_id)
    assert flow.check_completion(batch_id, 1, False).status is None
    assert jobs.require(file_id).lease_owner == "dead-worker"
    assert drain(clients, queue) == []


def test_an_expired_claim_with_a_wrong_object_is_requeued_and_sent_again(
    make_flow: Any,
    stub: StubProvider,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    provisioned: Provisioned,
    clock: ManualClock,
) -> None:
    """An object whose SHA-256 metadata does not match is not trusted: the job is run again."""
    flow, batch_id, file_id = one_claimed_file(make_flow, stub, clients, queue, jobs, provisioned)
    publish(clients, provisioned, jobs, file_id, sha256="0" * 64)
    clock.advance(LEASE_S + 1)
    assert flow.check_completion(batch_id, 1, False).status is None
    assert jobs.require(file_id).status is JobStatus.AVAILABLE
    assert drain(clients, queue) == [file_id]


def test_an_idle_available_job_is_sent_again_once_per_resend_bound(
    make_flow: Any,
    stub: StubProvider,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    provisioned: Provisioned,
    clock: ManualClock,
) -> None:
    """A job nobody claimed past the resend bound is re-sent, and not again before another bound."""
    flow = make_flow(stub, resend_after_seconds=RESEND_S)
    day = unique_day()
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    (file_id,) = drain(clients, queue)  # the message is lost
    clock.advance(RESEND_S - 1)
    flow.check_completion(batch_id, 1, False)
    assert drain(clients, queue) == []
    clock.advance(2)
    flow.check_completion(batch_id, 2, False)
    assert drain(clients, queue) == [file_id]
    clock.advance(RESEND_S - 1)
    flow.check_completion(batch_id, 3, False)
    assert drain(clients, queue) == []


def test_idle_jobs_are_not_resent_while_a_backlog_holds_as_many_messages(
    make_flow: Any,
    stub: StubProvider,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    clock: ManualClock,
) -> None:
    """A backlog of visible messages means idle jobs are waiting, not lost: nothing is re-sent."""
    flow = make_flow(stub, resend_after_seconds=RESEND_S)
    day = unique_day()
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)  # its message stays in the queue, visible
    clock.advance(RESEND_S + 1)
    flow.check_completion(batch_id, 1, False)
    (file_id,) = drain(clients, queue)  # only the first message: no re-send
    flow.check_completion(batch_id, 2, False)
    assert drain(clients, queue) == [file_id]  # the queue is empty now: re-sent


def test_a_sweep_larger_than_its_chunk_takes_back_and_resends_every_job_once(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sweeper holds SWEEP_CHUNK jobs at a time (here 3): 4 dead claims are taken back in
    two chunks, and 5 idle jobs (more than it keeps) are found again and each re-sent once."""
    monkeypatch.setattr(sweeper, "SWEEP_CHUNK", 3)
    stub = stub_factory([StubFileSpec(f"{entity}{i}", 100, CIPHER_CBC) for i in range(9)])
    flow = make_flow(stub, resend_after_seconds=RESEND_S)
    day = unique_day()
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    file_ids = drain(clients, queue)  # every message is lost
    assert len(file_ids) == 9
    for file_id in file_ids[:4]:
        jobs.claim(file_id, "dead-worker", LEASE_S)
    clock.advance(max(LEASE_S, RESEND_S) + 1)
    assert flow.check_completion(batch_id, 1, False).status is None
    assert sorted(drain(clients, queue)) == sorted(file_ids)
    assert {jobs.require(f).status for f in file_ids} == {JobStatus.AVAILABLE}


def _put(clients: AwsClients, provisioned: Provisioned, key: str, size: int, sha256: str) -> str:
    """One object version at `key` as the sink writes it; its VersionId."""
    put = clients.s3.put_object(
        Bucket=str(provisioned.destination_bucket),
        Key=key,
        Body=b"x" * size,
        Metadata={"sha256": sha256},
    )
    return str(put["VersionId"])


def test_an_abandoned_revision_is_completed_with_the_version_it_replaced(
    make_flow: Any,
    stub_factory: StubFactory,
    entity: str,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    provisioned: Provisioned,
    clock: ManualClock,
) -> None:
    """A restated file's worker published the revision's version and died before recording
    it: the sweeper completes the job with PreviousVersionID = the first revision's version,
    as the worker would have (the revision manifest names it as what `changed` replaced)."""
    day = unique_day()
    first = make_flow(stub_factory([StubFileSpec(entity, 100, CIPHER_CBC)]))
    batch_id = first.create_batch(day)
    first.fetch_and_queue(batch_id, day)
    (file_id,) = drain(clients, queue)
    job = jobs.claim(file_id, "w1", LEASE_S)
    key = f"{job.entity}/{job.download_date}/{file_id}"
    size, sha = int(job.expected_size or 0), str(job.expected_sha256)
    v1 = _put(clients, provisioned, key, size, sha)
    jobs.complete(file_id, "w1", byte_count=size, sha256=sha, destination_key=key)
    assert first.check_completion(batch_id, 1, False).status == "completed"

    restated = make_flow(
        stub_factory([StubFileSpec(entity, 120, CIPHER_CBC)]),
        resend_after_seconds=RESEND_S,
        published=published_check(clients.s3, str(provisioned.destination_bucket)),
    )
    revision = restated.create_batch(day)
    assert revision != batch_id
    restated.fetch_and_queue(revision, day)
    assert drain(clients, queue) == [file_id]
    job = jobs.claim(file_id, "dead-worker", LEASE_S)
    assert job.previous_sha256 == sha
    _put(clients, provisioned, key, int(job.expected_size or 0), str(job.expected_sha256))
    clock.advance(LEASE_S + 1)
    heads: list[str] = []
    clients.s3.meta.events.register(
        "before-parameter-build.s3.HeadObject", lambda params, **_: heads.append(params["Key"])
    )
    assert restated.check_completion(revision, 1, False).status == "completed"
    # One look at the object tells what it holds and which version it is.
    assert heads == [key]
    done = jobs.require(file_id)
    assert (done.status, done.batch_id, done.sha256) == (
        JobStatus.COMPLETED,
        revision,
        job.expected_sha256,
    )
    assert done.previous_version_id == v1

"""DownloadService against the emulator and the stub provider's real HTTP server and encryption."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.download import filerun
from dlpipe.services.download.service import Outcome
from tests.integration.test_downloader_kit import (
    FAST,
    MULTIPART_SIZE,
    PublishCounter,
    StubFactory,
    destination_key,
    make_service,
    object_exists,
    queue_files,
    uploads_in_progress,
    wall_clock_jobs,
)
from tests.support import ManualClock

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory


@pytest.fixture
def table(clients: AwsClients, provisioned: Provisioned) -> JobsTable:
    """The jobs table on the wall clock."""
    return wall_clock_jobs(clients, provisioned)


def one_file(
    stub_factory: StubFactory, table: JobsTable, entity: str, size: int, cipher: str
) -> tuple[str, str]:
    """Queue one file; return its FileID and expected SHA-256."""
    stub = stub_factory([StubFileSpec(entity, size, cipher)])
    ((file_id, expected),) = queue_files(stub, table).items()
    return file_id, expected.sha256


@pytest.mark.parametrize("cipher", [CIPHER_CBC, CIPHER_GCM])
def test_a_multipart_file_is_published_intact_and_the_job_completed(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
    cipher: str,
) -> None:
    """Object bytes hash to the stub's SHA-256, metadata holds it, the job records bytes/sha/key."""
    file_id, sha256 = one_file(stub_factory, table, entity, MULTIPART_SIZE, cipher)
    result = make_service(clients, provisioned, private_key).process(file_id)
    assert result.outcome is Outcome.COMPLETED
    bucket, key = provisioned.destination_bucket, destination_key(file_id)
    assert bucket
    body = clients.s3.get_object(Bucket=bucket, Key=key)
    assert hashlib.sha256(body["Body"].read()).hexdigest() == sha256
    assert body["Metadata"] == {"sha256": sha256}
    job = table.require(file_id)
    assert (job.status, job.byte_count, job.sha256, job.destination_key) == (
        JobStatus.COMPLETED,
        MULTIPART_SIZE,
        sha256,
        key,
    )
    assert job.lease_owner is None
    assert job.completed_at
    assert uploads_in_progress(clients, bucket, key) == []


@pytest.mark.parametrize(
    ("size", "cipher"), [(0, CIPHER_CBC), (0, CIPHER_GCM), (1, CIPHER_GCM), (17, CIPHER_CBC)]
)
def test_small_and_empty_files_are_one_put_after_verification(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
    size: int,
    cipher: str,
) -> None:
    """Zero-byte and tiny files publish as a single PutObject holding the right bytes."""
    file_id, sha256 = one_file(stub_factory, table, entity, size, cipher)
    counter = PublishCounter.create()
    service = make_service(clients, provisioned, private_key, s3=counter.client)
    assert service.process(file_id).outcome is Outcome.COMPLETED
    assert counter.published == ["PutObject"]
    head = clients.s3.head_object(
        Bucket=str(provisioned.destination_bucket), Key=destination_key(file_id)
    )
    assert (head["ContentLength"], head["Metadata"]["sha256"]) == (size, sha256)


def test_three_workers_racing_for_one_message_publish_once(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """The same FileID processed by three workers at once: one publish, one completion, no error."""
    file_id, _ = one_file(stub_factory, table, entity, MULTIPART_SIZE, CIPHER_GCM)
    counter = PublishCounter.create()
    services = [
        make_service(clients, provisioned, private_key, s3=counter.client) for _ in range(3)
    ]
    barrier, outcomes = threading.Barrier(3), []

    def work(index: int) -> None:
        barrier.wait()
        outcomes.append(services[index].process(file_id).outcome)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count(Outcome.COMPLETED) == 1
    assert set(outcomes) <= {Outcome.COMPLETED, Outcome.BUSY, Outcome.ALREADY_DONE}
    assert counter.published == ["CompleteMultipartUpload"]
    assert table.require(file_id).attempts == 1


def test_a_live_claim_of_another_worker_is_left_alone_and_reported_busy(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """BUSY: nothing changes, and the message should come back after the lease plus a margin."""
    file_id, _ = one_file(stub_factory, table, entity, 10, CIPHER_CBC)
    held = table.claim(file_id, "other-worker", 20)
    result = make_service(clients, provisioned, private_key).process(file_id)
    assert result.outcome is Outcome.BUSY
    assert result.retry_after_s is not None
    assert 20 <= result.retry_after_s <= 22
    assert table.require(file_id) == held


def test_an_expired_claim_is_taken_over_and_its_stale_upload_aborted(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """A dead worker's claim (lease run out, upload half done) is taken over and completed cleanly."""
    file_id, sha256 = one_file(stub_factory, table, entity, 100, CIPHER_GCM)
    past = JobsTable(
        clients.dynamodb, table.table_name, ManualClock(table._clock.now_ms() - 600_000)
    )
    past.claim(file_id, "dead-worker", 60)  # its lease ran out nine minutes ago
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    clients.s3.create_multipart_upload(Bucket=bucket, Key=key)  # what the dead worker left
    assert (
        make_service(clients, provisioned, private_key).process(file_id).outcome
        is Outcome.COMPLETED
    )
    job = table.require(file_id)
    assert (job.status, job.sha256, job.attempts) == (JobStatus.COMPLETED, sha256, 2)
    assert uploads_in_progress(clients, bucket, key) == []


def test_terminal_and_missing_jobs_are_acknowledged_without_work(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """A completed job's stale message is ALREADY_DONE; an unknown FileID is NOT_FOUND."""
    file_id, _ = one_file(stub_factory, table, entity, 10, CIPHER_CBC)
    service = make_service(clients, provisioned, private_key)
    assert service.process(file_id).outcome is Outcome.COMPLETED
    counter = PublishCounter.create()
    again = make_service(clients, provisioned, private_key, s3=counter.client)
    assert again.process(file_id).outcome is Outcome.ALREADY_DONE
    assert again.process(f"{entity}x-2026-02-28").outcome is Outcome.NOT_FOUND
    assert counter.published == []


def test_a_rerun_after_a_crash_between_publish_and_complete_reuses_the_object(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """The object is there with the job's SHA-256: the re-run completes without publishing again."""
    file_id, sha256 = one_file(stub_factory, table, entity, MULTIPART_SIZE, CIPHER_CBC)
    crashing = wall_clock_jobs(clients, provisioned)

    def crash(*_: object, **__: object) -> None:
        # The worker dies here. (A DynamoDB outage here is waited out under the claim, not a
        # crash: tests/unit/services/test_store_outage.py.)
        raise RuntimeError("worker killed between publish and complete")

    crashing.complete = crash  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="worker killed"):
        make_service(clients, provisioned, private_key, jobs=crashing).process(file_id)
    assert object_exists(clients, str(provisioned.destination_bucket), destination_key(file_id))
    counter = PublishCounter.create()
    rerun = make_service(clients, provisioned, private_key, s3=counter.client)
    assert rerun.process(file_id).outcome is Outcome.COMPLETED
    assert counter.published == []
    job = table.require(file_id)
    assert (job.status, job.sha256, job.byte_count) == (JobStatus.COMPLETED, sha256, MULTIPART_SIZE)


def test_a_lease_taken_over_mid_transfer_publishes_nothing(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """Another worker takes the claim as the transfer starts: no object, no upload, its claim stands."""
    file_id, _ = one_file(stub_factory, table, entity, MULTIPART_SIZE, CIPHER_GCM)
    future = JobsTable(
        clients.dynamodb, table.table_name, ManualClock(table._clock.now_ms() + 600_000)
    )
    service = make_service(clients, provisioned, private_key)

    def usurp(_visibility_s: int) -> None:
        if table.require(file_id).lease_owner != "usurper":
            future.claim(file_id, "usurper", 60)  # to its clock, our lease has long run out

    assert service.process(file_id, on_heartbeat=usurp).outcome is Outcome.LEASE_LOST
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    assert not object_exists(clients, bucket, key)
    assert uploads_in_progress(clients, bucket, key) == []
    assert table.require(file_id).lease_owner == "usurper"


def test_a_shutdown_mid_file_releases_the_claim(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """The stop event set while working: the job is available again and nothing is published."""
    file_id, _ = one_file(stub_factory, table, entity, MULTIPART_SIZE, CIPHER_CBC)
    stop = threading.Event()
    service = make_service(clients, provisioned, private_key, stop=stop)
    result = service.process(file_id, on_heartbeat=lambda _s: stop.set())
    assert result.outcome is Outcome.RELEASED
    job = table.require(file_id)
    assert (job.status, job.lease_owner) == (JobStatus.AVAILABLE, None)
    assert not object_exists(clients, str(provisioned.destination_bucket), destination_key(file_id))


def test_the_heartbeat_keeps_extending_the_lease_and_the_message(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a 1 s lease, a transfer slowed to 1.2 s is beaten every 1/3 s and still completes."""
    file_id, _ = one_file(stub_factory, table, entity, 100, CIPHER_CBC)
    service = make_service(clients, provisioned, private_key, lease_seconds=1)
    real_transfer = filerun.transfer_once

    def slow_transfer(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.2)
        return real_transfer(*args, **kwargs)

    monkeypatch.setattr(filerun, "transfer_once", slow_transfer)
    beats: list[int] = []
    assert service.process(file_id, on_heartbeat=beats.append).outcome is Outcome.COMPLETED
    assert len(beats) >= 3  # once at the claim, then every lease/3
    assert set(beats) == {1 + FAST.margin_s(1)}

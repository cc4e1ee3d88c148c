"""Exactly one published version per file: the publish is create-only (If-None-Match: *), so a
worker paused between its last lease check and its publish cannot add a second version."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.sink import MultipartSink
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec, plaintext_chunks
from dlpipe.services.download.service import DownloadService, Outcome, ProcessResult
from tests.integration.test_downloader_kit import (
    DAY,
    MULTIPART_SIZE,
    StubFactory,
    destination_key,
    make_service,
    queue_files,
    uploads_in_progress,
    wall_clock_jobs,
)
from tests.support import ManualClock

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory
PAUSED_THREAD = "paused-worker"
SMALL = 70_000  # one PutObject at publish
SKEW_MS = 600_000  # the successor's clock runs ten minutes ahead: our lease has expired to it


def versions(clients: AwsClients, bucket: str, key: str) -> list[dict[str, Any]]:
    """Every object version stored at exactly `key` (the bucket is versioned)."""
    listing = clients.s3.list_object_versions(Bucket=bucket, Prefix=key)
    return [dict(v) for v in listing.get("Versions", []) if v["Key"] == key]


@contextmanager
def paused_worker(
    monkeypatch: pytest.MonkeyPatch, work: Callable[[], ProcessResult]
) -> Iterator[Callable[[], ProcessResult]]:
    """Run `work` on a thread that stops after its lease renewal, just before it publishes (a
    GC pause, a frozen container); the yielded function resumes it and returns its result."""
    reached, resume = threading.Event(), threading.Event()
    original = MultipartSink.publish

    def publish(sink: MultipartSink, sha256_hex: str) -> None:
        if threading.current_thread().name == PAUSED_THREAD:
            reached.set()
            assert resume.wait(60), "the test never resumed the paused worker"
        original(sink, sha256_hex)

    def named() -> ProcessResult:
        threading.current_thread().name = PAUSED_THREAD
        return work()

    def resume_and_wait() -> ProcessResult:
        resume.set()
        return future.result(timeout=60)

    monkeypatch.setattr(MultipartSink, "publish", publish)
    with ThreadPoolExecutor(1) as pool:
        future: Future[ProcessResult] = pool.submit(named)
        try:
            assert reached.wait(30), "the paused worker never reached its publish"
            yield resume_and_wait
        finally:
            resume.set()


def skewed_successor(
    clients: AwsClients, provisioned: Provisioned, private_key: RSAPrivateKey, table: JobsTable
) -> DownloadService:
    """A second worker whose clock is far ahead: to it the paused worker's lease expired."""
    future = ManualClock(table._clock.now_ms() + SKEW_MS)
    skewed = JobsTable(clients.dynamodb, table.table_name, future)
    service = make_service(clients, provisioned, private_key, jobs=skewed)
    return DownloadService(replace(service.deps, clock=future))


@pytest.mark.parametrize("cipher", [CIPHER_CBC, CIPHER_GCM])
def test_a_worker_paused_after_its_lease_renewal_publishes_no_second_version(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    cipher: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Paused between renewal and publish while a successor completes: one version, lease_lost."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, SMALL, cipher)])
    ((file_id, expected),) = queue_files(stub, table).items()
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    first = make_service(clients, provisioned, private_key)
    with paused_worker(monkeypatch, lambda: first.process(file_id)) as resume:
        successor = skewed_successor(clients, provisioned, private_key, table)
        assert successor.process(file_id).outcome is Outcome.COMPLETED
        assert table.require(file_id).status is JobStatus.COMPLETED
        assert resume().outcome is Outcome.LEASE_LOST
    stored = versions(clients, bucket, key)
    assert len(stored) == 1, f"{len(stored)} versions of {key}: {stored}"
    body = clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == expected.sha256
    assert uploads_in_progress(clients, bucket, key) == []


def _publish_meanwhile(
    clients: AwsClients, bucket: str, key: str, body: bytes, sha256: str | None
) -> None:
    metadata = {"sha256": sha256} if sha256 else {}
    clients.s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata=metadata)


@pytest.mark.parametrize("with_metadata", [True, False])
def test_an_identical_object_published_meanwhile_completes_the_job_without_a_new_version(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    with_metadata: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CompleteMultipartUpload refused (412) by an identical object: verified, job completed, upload aborted."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, MULTIPART_SIZE, CIPHER_GCM)])
    ((file_id, expected),) = queue_files(stub, table).items()
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    # What another worker's publish left: the same plaintext the stub encrypted.
    plaintext = b"".join(plaintext_chunks(0, DAY, entity, MULTIPART_SIZE))
    assert hashlib.sha256(plaintext).hexdigest() == expected.sha256
    first = make_service(clients, provisioned, private_key)
    with paused_worker(monkeypatch, lambda: first.process(file_id)) as resume:
        sha = expected.sha256 if with_metadata else None
        _publish_meanwhile(clients, bucket, key, plaintext, sha)
        assert resume().outcome is Outcome.COMPLETED
    assert len(versions(clients, bucket, key)) == 1
    assert uploads_in_progress(clients, bucket, key) == []
    assert table.require(file_id).sha256 == expected.sha256


def test_a_different_object_at_the_key_is_an_error_and_is_never_overwritten(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """412 from an object with other bytes: job `error` destination_conflict, object untouched."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, MULTIPART_SIZE, CIPHER_CBC)])
    ((file_id, _expected),) = queue_files(stub, table).items()
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    first = make_service(clients, provisioned, private_key)
    with paused_worker(monkeypatch, lambda: first.process(file_id)) as resume:
        _publish_meanwhile(clients, bucket, key, b"someone else's bytes", None)
        assert resume().outcome is Outcome.ERROR
    job = table.require(file_id)
    assert job.status is JobStatus.ERROR
    assert (job.error_message or "").startswith("destination_conflict: ")
    stored = versions(clients, bucket, key)
    assert len(stored) == 1
    body = clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body == b"someone else's bytes"
    assert uploads_in_progress(clients, bucket, key) == []


def test_the_emulator_refuses_conditional_writes_to_an_existing_key_like_s3(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """On the versioned bucket, PutObject and CompleteMultipartUpload with If-None-Match: *
    answer 412 PreconditionFailed when the key exists, and store no second version."""
    bucket, key = str(provisioned.destination_bucket), f"probe/{threading.get_ident()}/k"
    status = clients.s3.get_bucket_versioning(Bucket=bucket).get("Status")
    assert status == "Enabled"
    clients.s3.put_object(Bucket=bucket, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as put:
        clients.s3.put_object(Bucket=bucket, Key=key, Body=b"second", IfNoneMatch="*")
    upload = clients.s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    try:
        etag = clients.s3.upload_part(
            Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"third"
        )["ETag"]
        with pytest.raises(ClientError) as complete:
            clients.s3.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload,
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]},
                IfNoneMatch="*",
            )
    finally:
        clients.s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload)
    for refused in (put.value, complete.value):
        assert refused.response["Error"]["Code"] == "PreconditionFailed"
        assert refused.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert len(versions(clients, bucket, key)) == 1

"""A restated file's revision against the emulator: the worker publishes it as a second version
of the same key (If-Match on revision 1's ETag), the job naming the version it replaced; a key
holding neither revision is refused; two workers on one revision still make one version."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.items import job_to_item
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.download.service import Outcome
from dlpipe.services.orchestrator.jobs_from_listing import job_from_descriptor
from tests.integration.test_downloader_kit import (
    DAY,
    MULTIPART_SIZE,
    PublishCounter,
    StubFactory,
    destination_key,
    make_service,
    queue_files,
    wall_clock_jobs,
)
from tests.provider_support import fast_client

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory


@pytest.fixture
def table(clients: AwsClients, provisioned: Provisioned) -> JobsTable:
    """The jobs table on the wall clock."""
    return wall_clock_jobs(clients, provisioned)


def _versions(clients: AwsClients, bucket: str, key: str) -> list[dict[str, Any]]:
    """The key's versions, newest first."""
    listing = clients.s3.list_object_versions(Bucket=bucket, Prefix=key)
    return [dict(v) for v in listing.get("Versions", []) if v["Key"] == key]


def _completed_first(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    spec: StubFileSpec,
) -> FileJob:
    """Revision 1 downloaded and published by the worker; the completed job."""
    ((file_id, _),) = queue_files(stub_factory([spec]), table).items()
    assert make_service(clients, provisioned, private_key).process(file_id).outcome is (
        Outcome.COMPLETED
    )
    return table.require(file_id)


def _revise(
    clients: AwsClients,
    provisioned: Provisioned,
    table: JobsTable,
    done: FileJob,
    revised: FileJob,
    *,
    previous_sha256: str | None = None,
) -> FileJob:
    """The completed job turned into revision 2 as the orchestrator leaves it: available, the
    new file's URL, key, IV and expected size and SHA-256, what revision 1 published."""
    job = replace(
        done,
        status=JobStatus.AVAILABLE,
        status_updated_at_ms=SystemClock().now_ms(),
        presigned_url=revised.presigned_url,
        url_expires_at=revised.url_expires_at,
        encrypted_aes_key=revised.encrypted_aes_key,
        encoded_aes_iv=revised.encoded_aes_iv,
        cipher=revised.cipher,
        expected_size=revised.expected_size,
        expected_sha256=revised.expected_sha256,
        revision=2,
        revised_as="changed",
        previous_sha256=previous_sha256 or done.sha256,
        previous_size=done.byte_count,
        byte_count=None,
        sha256=None,
        completed_at=None,
        lease_owner=None,
        lease_expires_at_ms=None,
        finished_by=None,
    )
    clients.dynamodb.put_item(TableName=provisioned.jobs_table, Item=job_to_item(job))
    return table.require(done.file_id)


def _second_file(stub_factory: StubFactory, spec: StubFileSpec, done: FileJob) -> FileJob:
    """The vendor's restated file: the same entity and day, other bytes (another seed)."""
    (descriptor,) = fast_client(stub_factory([spec], seed=1)).list_files(DAY).files
    revised = job_from_descriptor(descriptor, done.batch_id, SystemClock().now_ms())
    assert revised.file_id == done.file_id
    assert revised.expected_sha256 != done.sha256
    return revised


@pytest.mark.parametrize(
    ("size", "cipher"), [(700, CIPHER_CBC), (MULTIPART_SIZE, CIPHER_GCM)], ids=["put", "multipart"]
)
def test_a_revision_is_published_as_a_second_version_of_the_same_key(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
    size: int,
    cipher: str,
) -> None:
    """Two versions: revision 1's bytes kept, the current one the new plaintext; the job
    completed with the new facts and PreviousVersionID = revision 1's version."""
    spec = StubFileSpec(entity, size, cipher)
    done = _completed_first(clients, provisioned, private_key, stub_factory, table, spec)
    revised = _second_file(stub_factory, spec, done)
    _revise(clients, provisioned, table, done, revised)
    bucket, key = str(provisioned.destination_bucket), destination_key(done.file_id)
    (first,) = _versions(clients, bucket, key)

    result = make_service(clients, provisioned, private_key).process(done.file_id)

    assert result.outcome is Outcome.COMPLETED
    versions = _versions(clients, bucket, key)
    assert [v["VersionId"] for v in versions[1:]] == [first["VersionId"]]
    current = clients.s3.get_object(Bucket=bucket, Key=key)
    assert current["VersionId"] == versions[0]["VersionId"]
    assert hashlib.sha256(current["Body"].read()).hexdigest() == revised.expected_sha256
    old = clients.s3.get_object(Bucket=bucket, Key=key, VersionId=first["VersionId"])
    assert hashlib.sha256(old["Body"].read()).hexdigest() == done.sha256
    job = table.require(done.file_id)
    assert (job.status, job.sha256, job.byte_count, job.destination_key) == (
        JobStatus.COMPLETED,
        revised.expected_sha256,
        size,
        key,
    )
    assert job.previous_version_id == first["VersionId"]


def test_a_key_holding_neither_revision_ends_the_job_error_with_one_version(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """The object at the key is not what revision 1 published, nor revision 2: refused, the
    key still has its one version, the job `error` naming the key and both SHA-256s."""
    spec = StubFileSpec(entity, 300, CIPHER_GCM)
    done = _completed_first(clients, provisioned, private_key, stub_factory, table, spec)
    revised = _second_file(stub_factory, spec, done)
    _revise(clients, provisioned, table, done, revised, previous_sha256="f" * 64)
    bucket, key = str(provisioned.destination_bucket), destination_key(done.file_id)
    counter = PublishCounter.create()

    result = make_service(clients, provisioned, private_key, s3=counter.client).process(
        done.file_id
    )

    assert result.outcome is Outcome.ERROR
    assert counter.published == []
    assert len(_versions(clients, bucket, key)) == 1
    job = table.require(done.file_id)
    assert job.status is JobStatus.ERROR
    assert job.error_message is not None
    for named in (key, str(done.sha256), "f" * 64):
        assert named in job.error_message
    assert job.previous_version_id is None


def test_two_workers_on_one_revision_one_after_the_other_make_one_new_version(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """The first worker publishes revision 2, its completion lost (the job is revision 2's
    again); the second finds revision 2 at the key: it publishes nothing, and completes the
    job naming revision 1's version, found by listing the key's versions."""
    spec = StubFileSpec(entity, MULTIPART_SIZE, CIPHER_CBC)
    done = _completed_first(clients, provisioned, private_key, stub_factory, table, spec)
    revised = _second_file(stub_factory, spec, done)
    _revise(clients, provisioned, table, done, revised)
    bucket, key = str(provisioned.destination_bucket), destination_key(done.file_id)
    (first,) = _versions(clients, bucket, key)
    first_worker = make_service(clients, provisioned, private_key)
    assert first_worker.process(done.file_id).outcome is Outcome.COMPLETED
    _revise(clients, provisioned, table, done, revised)  # its completion never landed
    counter = PublishCounter.create()

    second = make_service(clients, provisioned, private_key, s3=counter.client)

    assert second.process(done.file_id).outcome is Outcome.COMPLETED
    assert counter.published == []
    versions = _versions(clients, bucket, key)
    assert len(versions) == 2
    assert versions[1]["VersionId"] == first["VersionId"]
    job = table.require(done.file_id)
    assert (job.status, job.sha256) == (JobStatus.COMPLETED, revised.expected_sha256)
    assert job.previous_version_id == first["VersionId"]

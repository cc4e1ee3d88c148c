"""Every bad input ends in its named status and message, leaving no object and no upload behind."""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from types import SimpleNamespace

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from structlog.testing import capture_logs

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.download.service import Outcome
from tests.integration.test_downloader_kit import (
    MULTIPART_SIZE,
    PublishCounter,
    Relay,
    StubFactory,
    destination_key,
    make_service,
    object_exists,
    queue_files,
    uploads_in_progress,
    wall_clock_jobs,
)

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory


@dataclass(frozen=True)
class Case:
    """A bad input, and the status and ErrorMessage code it must end in."""

    cipher: str
    size: int
    status: JobStatus
    code: str
    fault: str | None = None  # a stub fault switch applied to the file
    job_changes: tuple[tuple[str, str], ...] = ()  # a malformed job record


CASES = {
    "tampered_cbc": Case(CIPHER_CBC, MULTIPART_SIZE, JobStatus.ERROR, "checksum_mismatch", "tampered_entities"),
    "tampered_gcm": Case(CIPHER_GCM, MULTIPART_SIZE, JobStatus.ERROR, "tag_mismatch", "tampered_entities"),
    "wrong_key": Case(CIPHER_GCM, 1000, JobStatus.ERROR, "wrong_key", "wrong_key_entities"),
    "truncated_cbc": Case(CIPHER_CBC, MULTIPART_SIZE, JobStatus.ERROR, "bad_padding", "truncated_entities"),
    "truncated_gcm": Case(CIPHER_GCM, MULTIPART_SIZE, JobStatus.ERROR, "tag_mismatch", "truncated_entities"),
    "extra_bytes": Case(CIPHER_GCM, MULTIPART_SIZE, JobStatus.ERROR, "tag_mismatch", "extra_bytes_entities"),
    "bad_sha": Case(CIPHER_CBC, MULTIPART_SIZE, JobStatus.ERROR, "checksum_mismatch", "bad_sha_entities"),
    "bad_size": Case(CIPHER_GCM, MULTIPART_SIZE, JobStatus.ERROR, "size_mismatch", "bad_size_entities"),
    "missing_object": Case(CIPHER_CBC, 1000, JobStatus.ERROR, "source_not_found", "missing_object_entities"),
    "bad_iv": Case(CIPHER_CBC, 1000, JobStatus.ERROR, "invalid_iv", job_changes=(("encoded_aes_iv", base64.b64encode(b"short").decode()),)),
    "unknown_cipher": Case(CIPHER_GCM, 1000, JobStatus.ERROR, "unknown_cipher", job_changes=(("cipher", "AES-128-ECB"),)),
    "unknown_cipher_ctr": Case(CIPHER_GCM, 1000, JobStatus.ERROR, "unknown_cipher", job_changes=(("cipher", "AES-256-CTR"),)),
    "garbage_cipher": Case(CIPHER_GCM, 1000, JobStatus.ERROR, "unknown_cipher", job_changes=(("cipher", "\x00gcm;\u202e"),)),
    "bad_base64_key": Case(CIPHER_GCM, 1000, JobStatus.ERROR, "malformed_key", job_changes=(("encrypted_aes_key", "%%not*base64%%"),)),
    "unsafe_entity": Case(CIPHER_CBC, 1000, JobStatus.ERROR, "invalid_job", job_changes=(("entity", "../../etc"),)),
}  # fmt: skip


@pytest.fixture
def table(clients: AwsClients, provisioned: Provisioned) -> JobsTable:
    """The jobs table on the wall clock."""
    return wall_clock_jobs(clients, provisioned)


def assert_nothing_published(clients: AwsClients, provisioned: Provisioned, file_id: str) -> None:
    """No object at the file's key and no upload of it in progress."""
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    assert not object_exists(clients, bucket, key)
    assert uploads_in_progress(clients, bucket, key) == []


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_input_ends_in_its_status_and_message_with_nothing_published(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
    name: str,
) -> None:
    """Each fault is classified by type: the job ends with `<code>: ...`, the message is acked."""
    case = CASES[name]
    faults = Faults(**{case.fault: {entity}}) if case.fault else None
    stub = stub_factory([StubFileSpec(entity, case.size, case.cipher)], faults)

    def damage(job: FileJob) -> FileJob:
        return replace(job, **dict(case.job_changes))

    ((file_id, _),) = queue_files(stub, table, mutate=damage).items()
    result = make_service(clients, provisioned, private_key, stub=stub).process(file_id)
    assert result.acknowledge
    job = table.require(file_id)
    assert (job.status, job.error_message.split(":")[0] if job.error_message else None) == (
        case.status,
        case.code,
    )
    assert job.lease_owner is None
    assert_nothing_published(clients, provisioned, file_id)


def test_an_expired_url_is_refreshed_once_and_the_file_completes(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """403 "Request has expired": one fresh URL from the provider, stored on the job, then success."""
    stub = stub_factory(
        [StubFileSpec(entity, 1000, CIPHER_GCM)], Faults(expired_url_entities={entity})
    )
    ((file_id, expected),) = queue_files(stub, table).items()
    stale_url = table.require(file_id).presigned_url
    with capture_logs() as logs:
        result = make_service(clients, provisioned, private_key, stub=stub).process(file_id)
    assert result.outcome is Outcome.COMPLETED
    job = table.require(file_id)
    assert (job.status, job.sha256) == (JobStatus.COMPLETED, expected.sha256)
    assert job.presigned_url != stale_url
    assert [e["event"] for e in logs].count("job.url_refreshed") == 1


@pytest.mark.parametrize("with_provider", [True, False])
def test_a_url_that_stays_expired_ends_failed(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
    with_provider: bool,
) -> None:
    """Refreshed URL expired too (or no provider to ask): `failed` with "url_expired: ..."."""
    stub = stub_factory(
        [StubFileSpec(entity, 1000, CIPHER_CBC)], Faults(always_expired_entities={entity})
    )
    ((file_id, _),) = queue_files(stub, table).items()
    service = make_service(clients, provisioned, private_key, stub=stub if with_provider else None)
    assert service.process(file_id).outcome is Outcome.FAILED
    job = table.require(file_id)
    assert job.status is JobStatus.FAILED
    assert job.error_message is not None
    assert job.error_message.startswith("url_expired: ")
    assert_nothing_published(clients, provisioned, file_id)


def test_a_provider_refusing_to_re_sign_ends_error(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """Expired URL, and the provider refuses our token: `error` "provider_rejected: ..."."""
    stub = stub_factory(
        [StubFileSpec(entity, 1000, CIPHER_GCM)], Faults(expired_url_entities={entity})
    )
    ((file_id, _),) = queue_files(stub, table).items()
    service = make_service(
        clients, provisioned, private_key, stub=stub, provider_token="bogus-token-3141"
    )
    assert service.process(file_id).outcome is Outcome.ERROR
    job = table.require(file_id)
    assert job.error_message is not None
    assert job.error_message.startswith("provider_rejected: ")
    assert "bogus-token-3141" not in job.error_message
    assert_nothing_published(clients, provisioned, file_id)


def relayed(table: JobsTable, file_id: str, relay: Relay) -> None:
    """Point the job at the relay (as the poller would have stored its URL)."""
    job = table.require(file_id)
    table.claim(file_id, "setup", 1)
    table.update_url(file_id, "setup", relay.url, job.url_expires_at)
    table.release(file_id, "setup")


def test_transient_source_errors_are_retried_honoring_retry_after(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """Two 503s with Retry-After, then the bytes: the file completes on the third attempt."""
    stub = stub_factory([StubFileSpec(entity, MULTIPART_SIZE, CIPHER_GCM)])
    ((file_id, expected),) = queue_files(stub, table).items()
    relay = Relay(table.require(file_id).presigned_url, fail_first=2, headers={"Retry-After": "0"})
    with relay.running():
        relayed(table, file_id, relay)
        result = make_service(clients, provisioned, private_key).process(file_id)
    assert result.outcome is Outcome.COMPLETED
    assert relay.requests == 3
    assert table.require(file_id).sha256 == expected.sha256


def test_transient_errors_outlasting_the_retries_end_failed(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """A source answering 503 every time: four attempts, then `failed` "source_unavailable: ..."."""
    stub = stub_factory([StubFileSpec(entity, 1000, CIPHER_CBC)])
    ((file_id, _),) = queue_files(stub, table).items()
    relay = Relay(table.require(file_id).presigned_url, fail_first=99)
    with relay.running():
        relayed(table, file_id, relay)
        result = make_service(clients, provisioned, private_key).process(file_id)
    assert result.outcome is Outcome.FAILED
    assert relay.requests == 4
    job = table.require(file_id)
    assert job.error_message is not None
    assert job.error_message.startswith("source_unavailable: HTTP 503")
    assert_nothing_published(clients, provisioned, file_id)


def test_s3_throttling_mid_upload_restarts_the_transfer_cleanly(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    table: JobsTable,
    entity: str,
) -> None:
    """The first UploadPart answers 503 SlowDown: that upload is aborted, the retry publishes."""
    stub = stub_factory([StubFileSpec(entity, MULTIPART_SIZE, CIPHER_CBC)])
    ((file_id, expected),) = queue_files(stub, table).items()
    counter = PublishCounter.create()
    throttled: list[str] = []

    def slow_down(**_: object) -> tuple[object, dict[str, object]] | None:
        if throttled:
            return None
        throttled.append("UploadPart")
        error = {"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}
        return SimpleNamespace(status_code=503, headers={}), error

    counter.client.meta.events.register("before-call.s3.UploadPart", slow_down)
    service = make_service(clients, provisioned, private_key, s3=counter.client)
    assert service.process(file_id).outcome is Outcome.COMPLETED
    assert throttled == ["UploadPart"]
    assert counter.published == ["CompleteMultipartUpload"]
    assert table.require(file_id).sha256 == expected.sha256
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    assert uploads_in_progress(clients, bucket, key) == []

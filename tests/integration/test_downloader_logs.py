"""The downloader's logs carry no signature, no key material and no plaintext, even unredacted."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from structlog.testing import capture_logs

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec, plaintext_chunks
from tests.integration.test_downloader_kit import (
    DAY,
    MULTIPART_SIZE,
    Relay,
    StubFactory,
    make_service,
    queue_files,
    wall_clock_jobs,
)

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory


def test_logs_of_success_refresh_retry_and_faults_hold_no_secret(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    rsa_keypair: tuple[bytes, bytes],
    stub_factory: StubFactory,
    entity: str,
) -> None:
    """Raw event dicts (before redaction) never contain a signature, a key, or file content."""
    table: JobsTable = wall_clock_jobs(clients, provisioned)
    good, expired, wrong, flaky = (f"{entity}{n}" for n in ("g", "e", "w", "f"))
    specs = [
        StubFileSpec(good, MULTIPART_SIZE, CIPHER_CBC),
        StubFileSpec(expired, 2000, CIPHER_GCM),
        StubFileSpec(wrong, 2000, CIPHER_GCM),
        StubFileSpec(flaky, 2000, CIPHER_CBC),
    ]
    faults = Faults(expired_url_entities={expired}, wrong_key_entities={wrong})
    stub = stub_factory(specs, faults)
    file_ids = list(queue_files(stub, table))
    secrets = {table.require(f).encrypted_aes_key for f in file_ids}
    stale_urls = [table.require(f).presigned_url for f in file_ids]
    service = make_service(clients, provisioned, private_key, stub=stub)
    relay = Relay(table.require(f"{flaky}-{DAY}").presigned_url, fail_first=1)
    with capture_logs() as logs, relay.running():
        _point_at(table, f"{flaky}-{DAY}", relay.url)
        for file_id in file_ids:
            service.process(file_id)
        urls = [table.require(f).presigned_url for f in file_ids] + [relay.url, *stale_urls]
    text = "\n".join(repr(event) for event in logs)
    assert {"job.completed", "job.url_refreshed", "job.error", "job.retrying"} <= {
        e["event"] for e in logs
    }
    signatures = [parse_qs(urlsplit(u).query)["X-Amz-Signature"][0] for u in urls]
    assert all(signature not in text for signature in signatures)
    assert "X-Amz-Signature" not in text
    assert all(urlsplit(u).path not in text for u in urls)
    assert all(secret not in text for secret in secrets)
    pem_body = rsa_keypair[0].decode().splitlines()[1]
    assert pem_body not in text
    for spec in specs:
        sample = next(plaintext_chunks(0, DAY, spec.entity, spec.size))[:48]
        assert repr(sample)[2:-1] not in text
        assert sample.hex() not in text


def _point_at(table: JobsTable, file_id: str, url: str) -> None:
    job = table.require(file_id)
    table.claim(file_id, "setup", 1)
    table.update_url(file_id, "setup", url, job.url_expires_at)
    table.release(file_id, "setup")

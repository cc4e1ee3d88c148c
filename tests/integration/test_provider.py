"""The provider client against the stub provider, a real HTTP server backed by the emulator's S3."""

from __future__ import annotations

import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from structlog.testing import capture_logs

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.adapters.provider_token import token_from_settings
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.provider_errors import (
    MalformedResponseError,
    ProviderAuthError,
    ProviderNotFoundError,
    ProviderRefusedError,
    ProviderUnavailableError,
)
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from tests.provider_support import fast_client, fetch_and_decrypt

pytestmark = pytest.mark.integration
pytest_plugins = [
    "tests.provider_fixtures"
]  # rsa_keypair, private_key, provider_token, stub_factory

DAY = "2026-02-28"
MIB = 1024 * 1024
SMALL_DAY = [
    StubFileSpec("empty_cbc", 0, CIPHER_CBC),
    StubFileSpec("tiny_gcm", 17, CIPHER_GCM),
    StubFileSpec("block_cbc", 4096, CIPHER_CBC),
    StubFileSpec("mib_gcm", MIB + 3, CIPHER_GCM),
]


def test_listing_round_trip_decrypts_to_the_published_plaintext(stub_factory, private_key) -> None:
    """Every listed file downloads and decrypts to the plaintext whose digest the stub recorded."""
    stub = stub_factory(SMALL_DAY)
    listing = fast_client(stub).list_files(DAY)
    assert listing.rejected == []
    assert {d.entity for d in listing.files} == {s.entity for s in SMALL_DAY}
    expected = stub.expected(DAY)
    for descriptor in listing.files:
        plain = fetch_and_decrypt(descriptor, private_key)
        assert (plain.sha256, plain.size) == (
            expected[descriptor.file_id].sha256,
            expected[descriptor.file_id].size,
        )


def test_single_file_endpoint_signs_afresh_when_the_listing_url_expired(
    stub_factory, private_key
) -> None:
    """The listing's expired URL gets 403 from S3; the refresh endpoint's URL downloads."""
    stub = stub_factory(SMALL_DAY[:2], Faults(expired_url_entities={"tiny_gcm"}))
    client = fast_client(stub)
    listed = next(d for d in client.list_files(DAY).files if d.entity == "tiny_gcm")
    refused = requests.get(listed.url, timeout=10)
    assert refused.status_code == 403
    assert b"Request has expired" in refused.content
    fresh = client.get_file("tiny_gcm", DAY)
    assert fresh.file_id == f"tiny_gcm-{DAY}"
    assert fetch_and_decrypt(fresh, private_key).sha256 == stub.expected(DAY)[fresh.file_id].sha256


def test_always_expired_entity_is_expired_from_both_endpoints(stub_factory) -> None:
    """With always_expired_entities even the refresh endpoint hands out a URL S3 refuses."""
    stub = stub_factory(SMALL_DAY[:1], Faults(always_expired_entities={"empty_cbc"}))
    fresh = fast_client(stub).get_file("empty_cbc", DAY)
    assert requests.get(fresh.url, timeout=10).status_code == 403


def test_wrong_token_is_a_permanent_auth_error_and_is_not_retried(stub_factory) -> None:
    """A 401 raises ProviderAuthError at once; its message blames the token without showing it."""
    stub = stub_factory(SMALL_DAY[:1])
    with pytest.raises(ProviderAuthError, match="token") as caught:
        fast_client(stub, token="not-the-token-abc").list_files(DAY)
    assert caught.value.status_code == 401
    assert isinstance(caught.value, ProviderRefusedError)
    assert "not-the-token-abc" not in str(caught.value)
    assert stub.request_count == 1


def test_flaky_provider_is_retried_until_it_answers(stub_factory) -> None:
    """With 30% 5xx and 10% 429, every call still succeeds; each extra request was a logged retry."""
    stub = stub_factory(SMALL_DAY[:2], Faults(error_rate=0.3, throttle_rate=0.1), seed=7)
    stub.publish(DAY)
    client = fast_client(stub, max_attempts=20, sleep=lambda _s: None)
    with capture_logs() as logs:
        for _ in range(15):
            assert len(client.list_files(DAY).files) == 2
        client.get_file("empty_cbc", DAY)
    retries = [e for e in logs if e["event"] == "provider.retry"]
    assert retries, "the fault rates should have forced some retries"
    assert stub.request_count == 16 + len(retries)
    assert {e["reason"] for e in retries} <= {"HTTP 429", "HTTP 500", "HTTP 502", "HTTP 503"}


def test_provider_down_raises_unavailable_after_bounded_attempts(stub_factory) -> None:
    """100% 5xx: exactly max_attempts requests, then ProviderUnavailableError (transient)."""
    stub = stub_factory(SMALL_DAY[:1], Faults(error_rate=1.0))
    with pytest.raises(ProviderUnavailableError) as caught:
        fast_client(stub, max_attempts=3).list_files(DAY)
    assert stub.request_count == 3
    assert caught.value.attempts == 3
    assert caught.value.status_code in {500, 502, 503}
    assert caught.value.reason == f"GET /v1/files: HTTP {caught.value.status_code}"


@pytest.mark.parametrize(("max_wait_s", "waits"), [(30.0, [1.0, 1.0]), (0.25, [0.25, 0.25])])
def test_retry_after_is_honoured_and_capped(
    stub_factory, max_wait_s: float, waits: list[float]
) -> None:
    """429 with Retry-After: 1 waits one second between attempts, never more than max_wait_s."""
    stub = stub_factory(SMALL_DAY[:1], Faults(throttle_rate=1.0))
    slept: list[float] = []
    client = fast_client(stub, max_attempts=3, max_wait_s=max_wait_s, sleep=slept.append)
    with pytest.raises(ProviderUnavailableError, match="HTTP 429"):
        client.list_files(DAY)
    assert slept == waits


def test_a_stalled_call_times_out_and_is_retried(stub_factory) -> None:
    """A call stalled past the read timeout is abandoned and retried; the retry succeeds."""
    stub = stub_factory(SMALL_DAY[:1], Faults(stall_rate=1.0, stall_seconds=10.0))
    stub.publish(DAY)
    client = fast_client(stub, timeout=(1.0, 0.3), sleep=lambda _s: stub.faults.set(stall_rate=0.0))
    with capture_logs() as logs:
        assert len(client.list_files(DAY).files) == 1
    assert stub.request_count == 2
    assert [e["reason"] for e in logs if e["event"] == "provider.retry"] == ["ReadTimeout"]


def test_invalid_json_is_malformed_and_not_retried(stub_factory) -> None:
    """A 200 with a broken JSON body raises MalformedResponseError after one request."""
    stub = stub_factory(SMALL_DAY[:1], Faults(malformed_json=True))
    with pytest.raises(MalformedResponseError, match="invalid JSON") as caught:
        fast_client(stub).list_files(DAY)
    assert isinstance(caught.value, ProviderRefusedError)
    assert stub.request_count == 1


def test_unknown_entity_is_not_found(stub_factory) -> None:
    """The refresh endpoint answers 404 for an entity it does not publish."""
    stub = stub_factory(SMALL_DAY[:1])
    with pytest.raises(ProviderNotFoundError, match="nosuchfile"):
        fast_client(stub).get_file("nosuchfile", DAY)


def test_unsafe_identifiers_are_refused_before_any_request(stub_factory) -> None:
    """An unsafe entity or a non-date never reaches the provider's URL."""
    stub = stub_factory(SMALL_DAY[:1])
    client = fast_client(stub)
    with pytest.raises(InvalidIdentifierError):
        client.get_file("../../etc", DAY)
    with pytest.raises(InvalidIdentifierError):
        client.list_files("2026-02-30")
    assert stub.request_count == 0


def test_logs_carry_neither_the_token_nor_file_urls(stub_factory, provider_token: str) -> None:
    """Request and retry logs name the path and status, never the token or a presigned URL."""
    stub = stub_factory(SMALL_DAY[:2], Faults(error_rate=0.5), seed=3)
    client = fast_client(stub, max_attempts=30, sleep=lambda _s: None)
    with capture_logs() as logs:
        listing = client.list_files(DAY)
        client.get_file("tiny_gcm", DAY)
    text = repr(logs)
    assert any(e["event"] == "provider.request" for e in logs)
    assert provider_token not in text
    assert "X-Amz-" not in text
    assert all(d.url not in text for d in listing.files)


def test_token_from_settings_prefers_the_local_token(clients: AwsClients) -> None:
    """A local DLPIPE_PROVIDER_TOKEN is used as is, without Secrets Manager."""
    settings = Settings(provider_token="local-token", provider_token_secret_id="does-not-exist")
    assert token_from_settings(settings, clients) == "local-token"


def test_token_from_settings_reads_the_secret(clients: AwsClients) -> None:
    """On AWS the token comes from the Secrets Manager secret (whitespace trimmed)."""
    name = f"dlpipe-test/provider-token-{uuid.uuid4().hex[:8]}"
    clients.secretsmanager.create_secret(Name=name, SecretString="secret-token\n")
    assert token_from_settings(Settings(provider_token_secret_id=name), clients) == "secret-token"


@pytest.mark.parametrize("secret_id", [None, "dlpipe-test/never-created"])
def test_token_from_settings_without_a_token_is_a_config_error(
    clients: AwsClients, secret_id: str | None
) -> None:
    """No token and no (existing) secret: ConfigError naming what to set."""
    with pytest.raises(ConfigError):
        token_from_settings(Settings(provider_token_secret_id=secret_id), clients)


def test_client_repr_hides_the_token() -> None:
    """repr(client) shows where it points, not how it authenticates."""
    assert "hidden-token" not in repr(ProviderClient("https://127.0.0.1:1", "hidden-token"))


class _CorruptGzipProvider:
    """A provider answering every GET 200 with `Content-Encoding: gzip` and a body that is
    not gzip (as a broken proxy or encoder would); counts the requests."""

    def __init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests += 1
                body = b"\x00not-gzip" * 64
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.requests = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_a_body_that_does_not_decode_is_malformed_and_not_retried() -> None:
    """A 200 whose gzip body is corrupt is a MalformedResponseError (the same bytes would come
    again), from the listing and from the single-file endpoint, after one request each."""
    provider = _CorruptGzipProvider()
    try:
        client = ProviderClient(
            provider.base_url, "t", allow_http=True, allow_private=True, initial_wait_s=0.01
        )
        with pytest.raises(MalformedResponseError) as listing:
            list(client.iter_listing(DAY))
        assert provider.requests == 1
        with pytest.raises(MalformedResponseError) as single:
            client.get_file("accounts", DAY)
        assert provider.requests == 2
    finally:
        provider.close()
    assert str(listing.value) == (
        "the provider's listing does not decode (Content-Encoding) at entry 0 (page 1)"
    )
    assert str(single.value) == (
        "the provider's answer to /v1/files/accounts does not decode (Content-Encoding)"
    )

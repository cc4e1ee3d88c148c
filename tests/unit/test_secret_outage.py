"""Secrets Manager unavailable to a downloader (throttled, 5xx, timing out, not reachable) is a
dependency outage, never a verdict on the feed's key or token: DependencyUnavailableError at
the adapter edge (adapters/reread.py:get_secret), so a file that needs the secret comes out
UNAVAILABLE, unclaimed or with its claim given back, and its message goes the outage's way (a
delayed copy, no `message.failed`); at a process's start it is one warning line, and the key
is read when the first file needs it. A permanent refusal stays one: one line naming the
secret and AWS's code, a malformed key the job's own status. No AWS: a fake Secrets Manager."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
)
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from structlog.testing import capture_logs

from dlpipe.adapters import keys
from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.adapters.provider_token import token_from_settings
from dlpipe.adapters.reread import Rereadable
from dlpipe.bootstrap.download import build_service, provider_factory
from dlpipe.config import Settings
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.download_errors import InvalidPrivateKeyError, UrlExpiredError
from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError
from dlpipe.domain.feeds import feed_from_mapping
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import FileJob, JobStatus, make_batch_id, make_file_id
from dlpipe.entrypoints.dispatch import dispatch
from dlpipe.feed_settings import FileFeeds
from dlpipe.local.stub.crypto import (
    encrypt_bytes,
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    new_iv,
    wrap_aes_key,
)
from dlpipe.services.download.service import DownloadService, Outcome
from dlpipe.services.download.transfer import TransferTuning
from tests.fakes.download import FakeDestination, FakeSource
from tests.fakes.stores import FakeJobsTable
from tests.support import ManualClock, make_job

SECRETS_MANAGER = "Secrets Manager"
KEY_SECRET = "dlpipe/rsa-private-key"
TOKEN_SECRET = "dlpipe/provider-token"
DAY = "2026-02-28"
FEED = "vendor-x"
URL = "http://127.0.0.1:9/files/accounts?X-Amz-Signature=abc"
PLAINTEXT = b"id,name\n1,ada\n" * 50
TUNING = TransferTuning(attempts=2, retry_wait_s=0.0, retry_wait_max_s=0.0)
ENDPOINT = "http://127.0.0.1:9"


def client_error(code: str, status: int) -> ClientError:
    """Secrets Manager's refusal of a GetSecretValue, as botocore raises it."""
    answer: Any = {
        "Error": {"Code": code, "Message": "injected"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(answer, "GetSecretValue")


OUTAGES = [
    pytest.param(client_error("InternalServiceError", 500), id="5xx"),
    pytest.param(client_error("ThrottlingException", 400), id="throttled"),
    pytest.param(EndpointConnectionError(endpoint_url=ENDPOINT), id="refused"),
    pytest.param(ConnectTimeoutError(endpoint_url=ENDPOINT), id="connect-timeout"),
    pytest.param(ConnectionClosedError(endpoint_url=ENDPOINT), id="connection-closed"),
]


class FakeSecrets:
    """Secrets Manager holding `values` by SecretId; its next `failures` answers are `error`."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.calls = 0
        self.failures = 0
        self.error: Exception = client_error("InternalServiceError", 500)

    def get_secret_value(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        if self.failures > 0:
            self.failures -= 1
            raise self.error
        return {"SecretString": self.values[request["SecretId"]]}


class Clients:
    """What the wiring uses of AwsClients here: Secrets Manager only."""

    def __init__(self, secrets: FakeSecrets) -> None:
        self.secretsmanager = secrets


@pytest.fixture(autouse=True)
def fresh_keys() -> Any:
    """No key cached between tests (adapters/keys.py caches by source)."""
    keys.clear_cache()
    yield
    keys.clear_cache()


@pytest.fixture(scope="module")
def keypair() -> tuple[bytes, bytes]:
    return generate_rsa_keypair()


def encrypted_job(public_pem: bytes, source: FakeSource, **changes: Any) -> FileJob:
    """An available job whose file, encrypted for `public_pem`, `source` serves at URL."""
    aes_key, iv = new_aes_key(), new_iv(CIPHER_GCM)
    source.bodies[URL] = encrypt_bytes(PLAINTEXT, CIPHER_GCM, aes_key, iv)
    return make_job(
        "accounts",
        presigned_url=URL,
        cipher=CIPHER_GCM,
        encrypted_aes_key=wrap_aes_key(load_public_key(public_pem), aes_key),
        encoded_aes_iv=base64.b64encode(iv).decode(),
        expected_size=len(PLAINTEXT),
        expected_sha256=hashlib.sha256(PLAINTEXT).hexdigest(),
        **changes,
    )


def wired(
    secrets: FakeSecrets, source: FakeSource, feeds: FileFeeds | None = None
) -> tuple[DownloadService, FakeJobsTable]:
    """The default feed's service as `dlpipe worker` builds it: its key in KEY_SECRET."""
    jobs = FakeJobsTable(ManualClock())
    settings = Settings(
        destination_bucket="bucket",
        private_key_secret_id=KEY_SECRET,
        url_allowed_hosts=("127.0.0.1:*",),
        allow_http_urls=True,
        allow_private_url_hosts=True,
    )
    service = build_service(
        settings,
        Clients(secrets),  # type: ignore[arg-type]
        tuning=TUNING,
        jobs=jobs,
        destination=FakeDestination(),
        source=source,
        clock=jobs.clock,
        feeds=feeds or FileFeeds({}),
    )
    return service, jobs


def tracebacks(logs: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in logs if "exc_info" in e or e.get("log_level") == "error"]


@pytest.mark.parametrize("error", OUTAGES)
def test_a_key_or_token_secret_secrets_manager_cannot_serve_now_is_an_outage(
    error: Exception,
) -> None:
    """Throttled, 5xx, refused, timed out or dropped: DependencyUnavailableError naming
    Secrets Manager, for the key as for the downloader's token."""
    secrets = FakeSecrets({KEY_SECRET: "-", TOKEN_SECRET: "-"})
    secrets.failures, secrets.error = 2, error
    clients: Any = Clients(secrets)
    with pytest.raises(DependencyUnavailableError) as key_down:
        keys.key_source_from_settings(Settings(private_key_secret_id=KEY_SECRET), clients)
    with pytest.raises(DependencyUnavailableError) as token_down:
        token_from_settings(Settings(provider_token_secret_id=TOKEN_SECRET), clients, outage=True)
    assert (key_down.value.dependency, token_down.value.dependency) == (SECRETS_MANAGER,) * 2
    assert str(key_down.value).startswith(f"Secrets Manager GetSecretValue of '{KEY_SECRET}': ")


def test_the_orchestrator_s_token_read_still_leaves_botocore_s_errors_to_its_probe() -> None:
    """Without `outage` (the pre-run checks, which classify a refused connection apart) a
    5xx is the ClientError botocore raised; with it, an outage."""
    secrets = FakeSecrets({TOKEN_SECRET: "token"})
    settings, clients = Settings(provider_token_secret_id=TOKEN_SECRET), Clients(secrets)
    secrets.failures = 1
    with pytest.raises(ClientError):
        token_from_settings(settings, clients)  # type: ignore[arg-type]
    secrets.failures = 1
    with pytest.raises(DependencyUnavailableError):
        token_from_settings(settings, clients, outage=True)  # type: ignore[arg-type]
    assert token_from_settings(settings, clients, outage=True) == "token"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "code", ["AccessDeniedException", "ResourceNotFoundException", "DecryptionFailure"]
)
def test_a_key_secret_refused_for_good_is_one_line_naming_it_and_aws_s_code(code: str) -> None:
    """Not an outage (it will not pass by itself): AwsRequestError, which the CLI prints as
    one line, never a traceback."""
    secrets = FakeSecrets({KEY_SECRET: "-"})
    secrets.failures, secrets.error = 1, client_error(code, 400)
    with pytest.raises(AwsRequestError) as refused:
        keys.key_source_from_settings(
            Settings(private_key_secret_id=KEY_SECRET),
            Clients(secrets),  # type: ignore[arg-type]
        )
    assert not isinstance(refused.value, DependencyUnavailableError)
    assert f"on '{KEY_SECRET}' refused: {code}: " in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_worker_starts_through_a_key_outage_and_its_first_file_waits_it_out(
    keypair: tuple[bytes, bytes],
) -> None:
    """Secrets Manager down at the start: one `secret.unavailable` warning, no exception. The
    first file, while it lasts, is UNAVAILABLE (Secrets Manager) and never claimed; once it
    answers, the key is read once and the file completes."""
    private_pem, public_pem = keypair
    secrets, source = FakeSecrets({KEY_SECRET: private_pem.decode()}), FakeSource()
    secrets.failures = 3  # the start's read and the first file's two
    with capture_logs() as logs:
        service, jobs = wired(secrets, source)
        job = encrypted_job(public_pem, source)
        jobs.create(job)
        waiting = [service.process(job.file_id) for _ in range(2)]
        done = service.process(job.file_id)
        again = service.process(job.file_id)
    assert [(r.outcome, r.dependency) for r in waiting] == [
        (Outcome.UNAVAILABLE, SECRETS_MANAGER)
    ] * 2
    assert all(r.retry_after_s is not None and not r.acknowledge for r in waiting)
    assert (done.outcome, again.outcome) == (Outcome.COMPLETED, Outcome.ALREADY_DONE)
    assert jobs.require(job.file_id).attempts == 1  # claimed once: after the outage
    assert secrets.calls == 4  # start, two files in the outage, then one read that served
    warnings = [e["event"] for e in logs if e["log_level"] == "warning"]
    assert warnings.count("secret.unavailable") == 1
    assert [w for w in warnings if w not in ("secret.unavailable", "job.unavailable")] == []
    assert tracebacks(logs) == []


def test_a_key_found_malformed_after_the_outage_ends_the_job_error_as_at_start() -> None:
    """The key read after the outage is no key: the job ends `error` with the key's code,
    as a named feed's unusable key does; no traceback."""
    secrets, source = FakeSecrets({KEY_SECRET: "not a key at all"}), FakeSource()
    secrets.failures = 1
    with capture_logs() as logs:
        service, jobs = wired(secrets, source)
        job = make_job("accounts", presigned_url=URL)
        jobs.create(job)
        result = service.process(job.file_id)
    stored = jobs.require(job.file_id)
    assert (result.outcome, stored.status) == (Outcome.ERROR, JobStatus.ERROR)
    assert (stored.error_message or "").startswith(InvalidPrivateKeyError.code + ": ")
    assert "not a key at all" not in (stored.error_message or "")
    assert tracebacks(logs) == []


class Visibility:
    """One received message's visibility, recording what dispatch asked of it."""

    def __init__(self) -> None:
        self.hidden: list[int] = []
        self.copies: list[int] = []

    def __call__(self, seconds: int) -> None:
        self.hidden.append(seconds)

    def send_copy_later(self, body: str, delay_s: int, size_bytes: int | None = None) -> bool:
        self.copies.append(delay_s)
        return True


def test_a_named_feed_whose_key_secret_is_down_gets_a_delayed_copy_not_a_failure(
    keypair: tuple[bytes, bytes],
) -> None:
    """The feed's parts cannot be built while its key's secret is down: its message is
    replaced by a delayed copy (the outage's path), with no `message.failed` and no
    traceback; the next delivery after the outage completes the file with the feed's key."""
    private_pem, public_pem = keypair
    default_pem = generate_rsa_keypair()[0].decode()
    feed_secret = f"{FEED}/rsa-private-key"
    feed = feed_from_mapping(
        FEED,
        {
            "schedule": "rate(1 day)",
            "time_zone": "UTC",
            "destination_prefix": "pub-x",
            "provider_base_url": "http://127.0.0.1:9",
            "token_secret": f"{FEED}/provider-token",
            "private_key_secret": feed_secret,
            "url_allowed_hosts": ["127.0.0.1:*"],
        },
        local=True,
    )
    secrets = FakeSecrets({KEY_SECRET: default_pem, feed_secret: private_pem.decode()})
    source = FakeSource()
    service, jobs = wired(secrets, source, FileFeeds({FEED: feed}))
    file_id = make_file_id("accounts", DAY, FEED)
    batch_id = make_batch_id(DAY, "0b5e0b5e-0b5e-4b5e-8b5e-0b5e0b5e0b5e", FEED)
    jobs.create(encrypted_job(public_pem, source, file_id=file_id, batch_id=batch_id, feed=FEED))
    body = encode_message(JobMessage(file_id, batch_id))
    secrets.failures = 1
    down, up = Visibility(), Visibility()
    with capture_logs() as logs:
        acknowledged = dispatch(service, body, down, receive_count=1)
        completed = dispatch(service, body, up, receive_count=1)
    assert (acknowledged, down.copies, down.hidden) == (True, [1], [])  # the copy replaces it
    assert (completed, up.copies) == (True, [])
    assert jobs.require(file_id).status is JobStatus.COMPLETED
    assert [e["dependency"] for e in logs if e["event"] == "job.unavailable"] == [SECRETS_MANAGER]
    assert "message.failed" not in [e["event"] for e in logs]
    assert tracebacks(logs) == []


def test_a_deferred_secret_is_read_on_each_use_until_a_read_serves_then_kept() -> None:
    reads: list[str] = []
    down = [True]

    def read() -> str:
        reads.append("read")
        if down[0]:
            raise DependencyUnavailableError("Secrets Manager: 500", dependency=SECRETS_MANAGER)
        return "value"

    value = Rereadable(read, where="t", same=str.__eq__, interval_s=60.0, deferred=True)
    assert reads == []  # nothing read at construction
    for _ in range(2):
        with pytest.raises(DependencyUnavailableError):
            _ = value.value
    down[0] = False
    assert (value.value, value.value, len(reads)) == ("value", "value", 3)


def test_a_re_read_that_meets_an_outage_raises_it_and_spends_no_interval() -> None:
    """A refused value whose source cannot be read for an outage: the outage is raised (the
    file waits it out), and the next refusal reads again at once, not a minute later."""
    held, down, reads = ["old"], [True], list[str]()

    def read() -> str:
        reads.append("read")
        if down[0] and len(reads) > 1:
            raise DependencyUnavailableError("Secrets Manager: 500", dependency=SECRETS_MANAGER)
        return held[0]

    value = Rereadable(read, where="t", same=str.__eq__, interval_s=60.0, clock=lambda: 1.0)
    with pytest.raises(DependencyUnavailableError):
        value.newer_than("old")
    held[0], down[0] = "new", False  # rotated, and Secrets Manager answers again
    assert value.newer_than("old") == "new"  # same instant: the outage spent no interval
    assert len(reads) == 3


def test_a_wrong_key_whose_re_read_meets_an_outage_gives_the_claim_back(
    keypair: tuple[bytes, bytes],
) -> None:
    """The file's key does not unwrap and its source cannot be read again now: UNAVAILABLE
    with the claim released (the job available again), never `error` wrong_key."""
    private_pem, public_pem = keypair
    wrong = load_pem_private_key(generate_rsa_keypair()[0], password=None)
    assert isinstance(wrong, RSAPrivateKey)
    reads: list[str] = []

    def read() -> RSAPrivateKey:
        reads.append("read")
        if len(reads) > 1:
            raise DependencyUnavailableError("Secrets Manager: 500", dependency=SECRETS_MANAGER)
        return wrong

    key = Rereadable(read, where="t", same=keys.same_key, interval_s=60.0)
    source = FakeSource()
    service, jobs = wired(FakeSecrets({KEY_SECRET: private_pem.decode()}), source)
    service = DownloadService(replace(service.deps, decryption=KeyDecryption(key)))
    job = encrypted_job(public_pem, source)
    jobs.create(job)
    with capture_logs() as logs:
        result = service.process(job.file_id)
    stored = jobs.require(job.file_id)
    assert (result.outcome, result.dependency) == (Outcome.UNAVAILABLE, SECRETS_MANAGER)
    assert (stored.status, stored.lease_owner, stored.error_message) == (
        JobStatus.AVAILABLE,
        None,
        None,
    )
    assert tracebacks(logs) == []


def test_a_fresh_url_whose_token_secret_is_down_gives_the_claim_back() -> None:
    """The URL has expired and the provider token's secret cannot be read now: UNAVAILABLE,
    the claim released; no `job.crashed` traceback."""
    private_pem, public_pem = generate_rsa_keypair()
    secrets = FakeSecrets({KEY_SECRET: private_pem.decode(), TOKEN_SECRET: "token"})
    source = FakeSource()
    service, jobs = wired(secrets, source)
    settings = Settings(
        provider_base_url="http://127.0.0.1:9",
        provider_token_secret_id=TOKEN_SECRET,
        allow_http_urls=True,
        allow_private_url_hosts=True,
    )
    signer = provider_factory(settings, Clients(secrets))  # type: ignore[arg-type]
    service = DownloadService(replace(service.deps, provider=signer))
    job = encrypted_job(public_pem, source)
    source.bodies[URL] = UrlExpiredError()
    jobs.create(job)
    secrets.failures = 1
    with capture_logs() as logs:
        result = service.process(job.file_id)
    stored = jobs.require(job.file_id)
    assert (result.outcome, result.dependency) == (Outcome.UNAVAILABLE, SECRETS_MANAGER)
    assert (stored.status, stored.lease_owner) == (JobStatus.AVAILABLE, None)
    assert tracebacks(logs) == []

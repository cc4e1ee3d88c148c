"""Scenario 6: secrets stay secret. A day with URL refreshes, a flaky provider, a wrong key
and tampered files runs with every log captured (in-process poller and stub: dlpipe's real
JSON pipeline at DEBUG; the downloads: `dlpipe worker` processes' stderr at DEBUG). No log line, stored item or object metadata holds
a signature, the token, the private key, an AES key, a wrapped key, or file content."""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.crypto import unwrap_aes_key
from dlpipe.adapters.items import JOB_ATTRIBUTES
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.listing import ListingResult
from dlpipe.domain.model import JobStatus
from dlpipe.domain.schema import JOBS_KEY_ATTRIBUTE_TYPES
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub import publish as stub_publish
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from tests.e2e.test_worker_kit import queues, wait_until
from tests.provider_support import TEST_PROVIDER_TOKEN, fast_client
from tests.reliability.invariant import DayFacts
from tests.reliability.rig import LogTap, Rig, events_of, stopping_all, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
LEASE_S = 10
MARKER = f"PLAINTEXT-MARKER-{uuid.uuid4().hex}"
_SIGNED = re.compile(r"(?i)(X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)=([^&\s\"'\\]+)")
_KEYISH = re.compile(
    r"(?i)(^|_)(key|aes|secret|token|password|private|signature|credential)s?($|_)"
)
_KEY_LOOKING = re.compile(r"^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=|-----BEGIN)")


@dataclass(frozen=True)
class SecretDay:
    """The day's captured logs, facts, and the secrets that must not leak."""

    day: str
    text: str  # every log line, in-process and from the worker processes
    events: list[dict[str, Any]]
    facts: DayFacts
    aes_keys: dict[str, bytes]  # by entity, read from the stub's own store
    signatures: set[str]
    wrapped_keys: set[str]
    private_pem: bytes


class RecordingProvider:
    """The flow's provider client, remembering every URL signature it was handed."""

    def __init__(self, inner: ProviderClient) -> None:
        self._inner, self.signatures = inner, set[str]()

    def list_files(self, date: str) -> ListingResult:
        listing = self._inner.list_files(date)
        for descriptor in listing.files:
            self.signatures |= set(parse_qs(urlsplit(descriptor.url).query)["X-Amz-Signature"])
        return listing


def _marked_plaintext(real: Any, marked_entity: str) -> Any:
    def chunks(seed: int, date: str, entity: str, size: int) -> Iterator[bytes]:
        if entity != marked_entity:
            yield from real(seed, date, entity, size)
            return
        text = (MARKER.encode() + b"\n") * (size // (len(MARKER) + 1) + 1)
        yield text[:size]

    return chunks


@pytest.fixture(scope="module")
def secret_day(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    private_key: RSAPrivateKey,
    rsa_keypair: tuple[bytes, bytes],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SecretDay]:
    """Run the day once: the poller and the stub in-process, 2 `dlpipe worker` processes at DEBUG."""
    prefix, day, workdir = unique_entity(), unique_day(), tmp_path_factory.mktemp("secrets")
    names = {n: f"{prefix}{n}" for n in ("marked", "expired", "wrongkey", "tampered", "big", "ok")}
    specs = [
        StubFileSpec(names["marked"], 40_000, CIPHER_CBC),
        StubFileSpec(names["expired"], 3_000, CIPHER_GCM),
        StubFileSpec(names["wrongkey"], 3_000, CIPHER_GCM),
        StubFileSpec(names["tampered"], 9_000, CIPHER_CBC),
        StubFileSpec(names["big"], 6 * 1024 * 1024 + 3, CIPHER_GCM),
        StubFileSpec(names["ok"], 0, CIPHER_CBC),
    ]
    faults = Faults(
        expired_url_entities={names["expired"], names["marked"]},
        wrong_key_entities={names["wrongkey"]},
        tampered_entities={names["tampered"]},
        error_rate=0.2,
        throttle_rate=0.1,
    )
    key_file = workdir / "private.pem"
    key_file.write_bytes(rsa_keypair[0])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            stub_publish,
            "plaintext_chunks",
            _marked_plaintext(stub_publish.plaintext_chunks, names["marked"]),
        )
        stub = StubProvider(
            clients, rsa_keypair[1], TEST_PROVIDER_TOKEN, specs, faults=faults, seed=3,
            key_prefix=f"{prefix}/",
        )  # fmt: skip
        with queues(clients, visibility_s=10) as pair, stub:
            rig = Rig(clients, provisioned, pair, private_key, key_file, aws_env, workdir)
            expected = stub.expected(day)
            aes_keys = {
                e: p.aes_key for e, p in stub._days.get(day).items()
            }  # the stub keeps them private
            provider = RecordingProvider(fast_client(stub, max_attempts=8))
            tap, pool = LogTap("DEBUG"), []
            with tap.tapping(), stopping_all(pool):
                pool += [
                    rig.worker_process(
                        stub, f"w{n}", lease_seconds=LEASE_S, DLPIPE_LOG_LEVEL="DEBUG"
                    )
                    for n in range(2)
                ]
                for process in pool:
                    wait_until(lambda p=process: "worker.started" in p.event_names(), 30, "start")
                result = rig.run_day(rig.flow(stub, provider=provider), day, polls=90)  # type: ignore[arg-type]
            facts = rig.check_day(day, result["batch_id"], expected)
            stored = {j.presigned_url for j in facts.jobs.values()}
            signatures = provider.signatures | {
                s for url in stored for s in parse_qs(urlsplit(url).query)["X-Amz-Signature"]
            }
            process_text = "\n".join(p.log_path.read_text(errors="replace") for p in pool)
            yield SecretDay(
                day=day,
                text=tap.text + "\n" + process_text,
                events=tap.events() + events_of(pool),
                facts=facts,
                aes_keys=aes_keys,
                signatures=signatures,
                wrapped_keys={j.encrypted_aes_key for j in facts.jobs.values()},
                private_pem=rsa_keypair[0],
            )
            stub.purge()


def encodings(secret: bytes) -> set[str]:
    """The ways a byte string could show up in a log line."""
    return {
        secret.hex(),
        secret.hex().upper(),
        base64.b64encode(secret).decode(),
        base64.urlsafe_b64encode(secret).decode().rstrip("="),
        repr(secret)[2:-1],
    }


def test_the_secret_day_did_real_work_on_every_path(secret_day: SecretDay, figures: Any) -> None:
    """The captured day covers success, refresh, retries and errors, so the checks below bite."""
    names = {e["event"] for e in secret_day.events}
    figures(log_lines=secret_day.text.count("\n"), **secret_day.facts.counts())
    assert {"job.completed", "job.url_refreshed", "job.error", "provider.retry"} <= names
    assert {"job.claimed", "worker.started"} <= names
    assert secret_day.facts.by_status(JobStatus.ERROR)
    assert len(secret_day.facts.by_status(JobStatus.COMPLETED)) == 4


def test_no_log_line_holds_a_presigned_signature(secret_day: SecretDay) -> None:
    """Every X-Amz-Signature/Credential in the logs is `***`; no real signature appears."""
    shown = {value for _, value in _SIGNED.findall(secret_day.text)}
    assert shown <= {"***"}
    assert secret_day.signatures
    assert not [s for s in secret_day.signatures if s in secret_day.text]


def test_no_log_line_holds_the_token_or_the_private_key(secret_day: SecretDay) -> None:
    """Neither the provider's bearer token nor any line of our PEM private key is logged."""
    assert TEST_PROVIDER_TOKEN not in secret_day.text
    assert "PRIVATE KEY" not in secret_day.text
    body = secret_day.private_pem.decode().splitlines()[1:-1]
    assert not [line for line in body if line in secret_day.text]


def test_no_log_line_holds_an_aes_key_wrapped_or_not(secret_day: SecretDay) -> None:
    """No unwrapped AES key in any encoding, no wrapped key, and no key-ish field with a key."""
    for key in secret_day.aes_keys.values():
        assert not [form for form in encodings(key) if form in secret_day.text]
    assert not [w for w in secret_day.wrapped_keys if w and w in secret_day.text]
    for event in secret_day.events:
        for name, value in event.items():
            if _KEYISH.search(name) and isinstance(value, str):
                assert value == "***" or not _KEY_LOOKING.match(value), (name, event["event"])


def test_no_log_line_holds_file_content(secret_day: SecretDay) -> None:
    """The marked file's plaintext (and a sample of every other file's) never reaches a log."""
    assert MARKER not in secret_day.text
    assert MARKER[:24] not in secret_day.text
    for entity in secret_day.aes_keys:
        sample = next(iter(stub_publish.plaintext_chunks(3, secret_day.day, entity, 48)), b"")
        assert not [form for form in encodings(sample) if sample and form in secret_day.text]


def test_stored_items_and_object_metadata_hold_no_key_material(
    secret_day: SecretDay, clients: AwsClients, provisioned: Provisioned, private_key: RSAPrivateKey
) -> None:
    """Raw job and batch items carry only the RSA-wrapped key; objects carry only a SHA-256."""
    forbidden = {MARKER, TEST_PROVIDER_TOKEN, "PRIVATE KEY"}
    for key in secret_day.aes_keys.values():
        forbidden |= encodings(key)
    batch = clients.dynamodb.get_item(
        TableName=provisioned.batches_table,
        Key={"BatchID": {"S": secret_day.facts.batch.batch_id}},
    )["Item"]
    assert not [f for f in forbidden if f in repr(batch)]
    for file_id, job in secret_day.facts.jobs.items():
        item = clients.dynamodb.get_item(
            TableName=provisioned.jobs_table, Key={"FileID": {"S": file_id}}
        )["Item"]
        known = set(JOB_ATTRIBUTES.values()) | set(JOBS_KEY_ATTRIBUTE_TYPES)
        assert set(item) <= known, set(item) - known
        assert not [f for f in forbidden if f in repr(item)], file_id
        wrapped = item["EncryptedAESKey"]["S"]
        assert len(base64.b64decode(wrapped)) == private_key.key_size // 8
        if job.status is JobStatus.COMPLETED:
            assert unwrap_aes_key(private_key, wrapped) == secret_day.aes_keys[job.entity]
            head = clients.s3.head_object(
                Bucket=str(provisioned.destination_bucket), Key=str(job.destination_key)
            )
            assert head["Metadata"] == {"sha256": job.sha256}
            assert hashlib.sha256(MARKER.encode()).hexdigest() not in repr(head)

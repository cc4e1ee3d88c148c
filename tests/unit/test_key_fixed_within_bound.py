"""A key fixed within DLPIPE_SECRET_REREAD_SECONDS of its last re-read reaches the next file.

A file refused wrong_key while the re-read interval is not spent, and with no re-read since
its own first refusal, is not ended `error` on that old read: it is given back (BUSY, a fresh
copy of its message delayed by the interval's rest), and when it returns the key is read
again, so a key fixed since decrypts it. Only a wrong_key that a re-read made since the
file's refusal confirms ends the job `error`, and files that wait together cost one read.
A virtual clock for the re-reads, fakes for the stores: no wall clock, no AWS."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.adapters.keys import same_key
from dlpipe.adapters.reread import Rereadable, RereadDue
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.url_policy import UrlPolicy
from dlpipe.entrypoints.dispatch import dispatch
from dlpipe.local.stub.crypto import (
    encrypt_bytes,
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    new_iv,
    wrap_aes_key,
)
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.service import DownloadService
from dlpipe.services.download.transfer import TransferTuning
from tests.fakes.download import FakeDestination, FakeSource
from tests.fakes.stores import FakeJobsTable
from tests.support import ManualClock, make_job

INTERVAL_S = 60.0
PLAINTEXT = b"id,name\n1,ada\n" * 50
TUNING = TransferTuning(attempts=2, retry_wait_s=0.0, retry_wait_max_s=0.0)


class Clock:
    """The re-reads' virtual monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class KeySecret:
    """The key's secret: the operator changes `key`; `reads` counts its reads."""

    def __init__(self, key: RSAPrivateKey) -> None:
        self.key, self.reads = key, 0

    def read(self) -> RSAPrivateKey:
        self.reads += 1
        return self.key


class Visibility:
    """One received message's visibility, recording the delayed copies dispatch sent."""

    def __init__(self) -> None:
        self.copies: list[int] = []

    def __call__(self, seconds: int) -> None:
        """The claim's heartbeat hides it (nothing to check here)."""

    def send_copy_later(self, body: str, delay_s: int, size_bytes: int | None = None) -> bool:
        self.copies.append(delay_s)
        return True


def _key(pem: bytes) -> RSAPrivateKey:
    key = load_pem_private_key(pem, password=None)
    assert isinstance(key, RSAPrivateKey)
    return key


@pytest.fixture(scope="module")
def keys() -> tuple[RSAPrivateKey, RSAPrivateKey, bytes]:
    """A wrong key, the right key and the right key's public half."""
    right_private, right_public = generate_rsa_keypair()
    return _key(generate_rsa_keypair()[0]), _key(right_private), right_public


class Stack:
    """One feed's download service over fakes, its key read through `secret` on `clock`."""

    def __init__(self, secret: KeySecret, clock: Clock, public_pem: bytes) -> None:
        self.secret, self.clock, self.public_pem = secret, clock, public_pem
        self.key = Rereadable(
            secret.read, where="test-key", same=same_key, interval_s=INTERVAL_S, clock=clock
        )
        self.jobs = FakeJobsTable(ManualClock())
        self.source = FakeSource()
        self.service = DownloadService(
            ServiceDeps(
                jobs=self.jobs,
                destination=FakeDestination(),
                source=self.source,
                decryption=KeyDecryption(self.key),  # type: ignore[arg-type]
                provider=None,
                lease_seconds=300,
                url_policy=UrlPolicy.from_patterns(
                    ["127.0.0.1:*"], allow_http=True, allow_private=True
                ),
                tuning=TUNING,
                clock=self.jobs.clock,
            )
        )

    def job(self, entity: str) -> FileJob:
        """An available job whose file is encrypted for the right key."""
        aes_key, iv = new_aes_key(), new_iv(CIPHER_GCM)
        url = f"http://127.0.0.1:9/files/{entity}?X-Amz-Signature=abc"
        self.source.bodies[url] = encrypt_bytes(PLAINTEXT, CIPHER_GCM, aes_key, iv)
        job = make_job(
            entity,
            presigned_url=url,
            cipher=CIPHER_GCM,
            encrypted_aes_key=wrap_aes_key(load_public_key(self.public_pem), aes_key),
            encoded_aes_iv=base64.b64encode(iv).decode(),
            expected_size=len(PLAINTEXT),
            expected_sha256=hashlib.sha256(PLAINTEXT).hexdigest(),
        )
        self.jobs.create(job)
        return job

    def deliver(self, job: FileJob) -> tuple[bool, Visibility]:
        """One delivery of the job's message: acknowledged?, and what became of it."""
        visibility = Visibility()
        body = encode_message(JobMessage(job.file_id, job.batch_id))
        return dispatch(self.service, body, visibility, receive_count=1), visibility

    def status(self, job: FileJob) -> JobStatus:
        return self.jobs.require(job.file_id).status


def test_a_key_fixed_10_s_after_the_last_re_read_decrypts_the_next_file_after_the_interval(
    keys: tuple[RSAPrivateKey, RSAPrivateKey, bytes],
) -> None:
    wrong, right, public_pem = keys
    clock, secret = Clock(), KeySecret(wrong)
    stack = Stack(secret, clock, public_pem)
    first = stack.job("accounts")
    assert stack.deliver(first)[0]  # re-read now: still wrong, so `error` (a fresh verdict)
    assert stack.status(first) is JobStatus.ERROR
    assert secret.reads == 2
    clock.now += 10
    secret.key = right  # the operator fixes the key 10 s after that re-read
    later = stack.job("orders")
    acknowledged, visibility = stack.deliver(later)
    # Not ended on a read older than the fix: given back till the key is read again.
    assert stack.status(later) is JobStatus.AVAILABLE
    assert (acknowledged, visibility.copies) == (True, [50])  # a copy due at the re-read
    assert secret.reads == 2  # no read inside the interval
    clock.now += 50
    acknowledged, visibility = stack.deliver(later)  # the delayed copy
    assert (acknowledged, visibility.copies) == (True, [])
    assert stack.status(later) is JobStatus.COMPLETED
    assert secret.reads == 3  # one re-read, when the interval was spent


def test_a_key_that_stays_wrong_ends_the_waiting_files_error_after_one_re_read(
    keys: tuple[RSAPrivateKey, RSAPrivateKey, bytes],
) -> None:
    wrong, _, public_pem = keys
    clock, secret = Clock(), KeySecret(wrong)
    stack = Stack(secret, clock, public_pem)
    stack.deliver(stack.job("accounts"))  # the re-read the interval counts from
    clock.now += 10
    waiting = [stack.job("orders"), stack.job("payments")]
    for job in waiting:
        acknowledged, visibility = stack.deliver(job)
        assert (acknowledged, visibility.copies) == (True, [50])
    assert [stack.status(job) for job in waiting] == [JobStatus.AVAILABLE] * 2
    clock.now += 50
    for job in waiting:
        acknowledged, visibility = stack.deliver(job)
        assert (acknowledged, visibility.copies) == (True, [])
    assert [stack.status(job) for job in waiting] == [JobStatus.ERROR] * 2
    messages = [stack.jobs.require(job.file_id).error_message or "" for job in waiting]
    assert all(m.startswith("wrong_key: ") and "read again" not in m for m in messages)
    assert secret.reads == 3  # both answered by the one re-read the interval allowed


def test_a_refused_use_waits_for_a_re_read_made_since_its_refusal() -> None:
    clock, held = Clock(), ["old"]
    reads: list[str] = []

    def read() -> str:
        reads.append(held[0])
        return held[0]

    value = Rereadable(read, where="t", same=str.__eq__, interval_s=INTERVAL_S, clock=clock)
    assert value.newer_than("old", refused="a") is None  # read now: a fresh "still old"
    clock.now += 10
    with pytest.raises(RereadDue) as due:
        value.newer_than("old", refused="b")
    assert due.value.in_s == 50
    assert value.newer_than("old") is None  # a use that names no refusal: as before
    clock.now += 50
    assert value.newer_than("old", refused="b") is None  # read again: still old, the verdict
    assert len(reads) == 3
    clock.now += 1
    with pytest.raises(RereadDue) as due:  # refused after that read: waits for the next
        value.newer_than("old", refused="c")
    assert due.value.in_s == 59

"""The download use case on in-memory fakes: claim, publish, complete, and every way out."""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.download_errors import SourceUnavailableError, UrlExpiredError
from dlpipe.domain.errors import ClaimRefusedError, LeaseLostError, RequeueRefusedError
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.provider_errors import ProviderNotFoundError
from dlpipe.domain.url_policy import UrlPolicy
from dlpipe.local.stub.crypto import (
    encrypt_bytes,
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    new_iv,
    wrap_aes_key,
)
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.service import DownloadService, Outcome
from dlpipe.services.download.transfer import TransferTuning
from tests.fakes.download import FakeDestination, FakeSigner, FakeSource
from tests.fakes.stores import FakeJobsTable
from tests.support import ManualClock, make_job

LEASE_S = 30
URL = "http://127.0.0.1:9/files/accounts?X-Amz-Signature=abc"
KEY = "accounts/2026-02-28/accounts-2026-02-28"
PLAINTEXT = b"id,name\n1,ada\n2,grace\n" * 100
POLICY = UrlPolicy.from_patterns(["127.0.0.1:*"], allow_http=True, allow_private=True)
TUNING = TransferTuning(attempts=2, retry_wait_s=0.0, retry_wait_max_s=0.0)


@pytest.fixture(scope="module")
def keypair() -> tuple[RSAPrivateKey, bytes]:
    private_pem, public_pem = generate_rsa_keypair()
    private = load_pem_private_key(private_pem, password=None)
    assert isinstance(private, RSAPrivateKey)
    return private, public_pem


@dataclass
class Rig:
    """One service on fakes, and the job it is asked to process."""

    clock: ManualClock
    jobs: FakeJobsTable
    destination: FakeDestination
    source: FakeSource
    service: DownloadService
    job: FileJob

    def stored(self) -> FileJob:
        return self.jobs.require(self.job.file_id)


def make_rig(
    keypair: tuple[RSAPrivateKey, bytes],
    *,
    signer: FakeSigner | None = None,
    source: FakeSource | None = None,
    tuning: TransferTuning = TUNING,
) -> Rig:
    private_key, public_pem = keypair
    aes_key, iv = new_aes_key(), new_iv(CIPHER_GCM)
    job = make_job(
        "accounts",
        presigned_url=URL,
        cipher=CIPHER_GCM,
        encrypted_aes_key=wrap_aes_key(load_public_key(public_pem), aes_key),
        encoded_aes_iv=base64.b64encode(iv).decode(),
        expected_size=len(PLAINTEXT),
        expected_sha256=hashlib.sha256(PLAINTEXT).hexdigest(),
    )
    clock = ManualClock()
    jobs, destination = FakeJobsTable(clock), FakeDestination()
    source = source or FakeSource()
    source.bodies.setdefault(URL, encrypt_bytes(PLAINTEXT, CIPHER_GCM, aes_key, iv))
    jobs.create(job)
    deps = ServiceDeps(
        jobs=jobs,
        destination=destination,
        source=source,
        decryption=KeyDecryption(private_key),
        provider=(lambda: signer) if signer else None,
        lease_seconds=LEASE_S,
        url_policy=POLICY,
        tuning=tuning,
        stop=threading.Event(),
        owner_prefix="test:1",
        clock=clock,
    )
    return Rig(clock, jobs, destination, source, DownloadService(deps), job)


def test_an_available_job_is_claimed_verified_published_and_completed(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """The decrypted file lands at its key and the job completes with its size and SHA-256."""
    rig = make_rig(keypair)
    assert rig.service.process(rig.job.file_id).outcome is Outcome.COMPLETED
    job = rig.stored()
    assert rig.destination.objects[KEY] == PLAINTEXT
    assert (job.status, job.byte_count, job.destination_key) == (
        JobStatus.COMPLETED,
        len(PLAINTEXT),
        KEY,
    )
    assert (job.sha256, job.lease_owner, job.attempts) == (rig.job.expected_sha256, None, 1)


def test_a_job_under_a_live_claim_is_busy_until_its_lease_ends(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Another worker's live claim: nothing is done, the message waits lease left + margin."""
    rig = make_rig(keypair)
    rig.jobs.claim(rig.job.file_id, "other", LEASE_S)
    rig.clock.advance(10)
    result = rig.service.process(rig.job.file_id)
    assert (result.outcome, result.retry_after_s) == (Outcome.BUSY, 20 + TUNING.margin_s(LEASE_S))
    assert (rig.stored().lease_owner, rig.source.opened) == ("other", [])


def test_an_expired_claim_is_taken_over_and_completed(keypair: tuple[RSAPrivateKey, bytes]) -> None:
    """A claim whose lease ran out (its worker died) is taken over: attempt 2 completes."""
    rig = make_rig(keypair)
    rig.jobs.claim(rig.job.file_id, "dead-worker", LEASE_S)
    rig.clock.advance(LEASE_S + 1)
    assert rig.service.process(rig.job.file_id).outcome is Outcome.COMPLETED
    assert (rig.stored().status, rig.stored().attempts) == (JobStatus.COMPLETED, 2)


def test_a_finished_job_is_acknowledged_without_a_download(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """A stale message for a completed job: ALREADY_DONE, no claim, no request."""
    rig = make_rig(keypair)
    assert rig.service.process(rig.job.file_id).outcome is Outcome.COMPLETED
    rig.source.opened.clear()
    assert rig.service.process(rig.job.file_id).outcome is Outcome.ALREADY_DONE
    assert (rig.stored().attempts, rig.source.opened) == (1, [])


def test_a_missing_job_is_not_found(keypair: tuple[RSAPrivateKey, bytes]) -> None:
    rig = make_rig(keypair)
    assert rig.service.process("nothing-2026-02-28").outcome is Outcome.NOT_FOUND


def test_a_file_already_at_its_key_completes_the_job_without_a_download(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """A predecessor published the verified file and died: the job completes from it."""
    rig = make_rig(keypair)
    rig.destination.objects[KEY] = PLAINTEXT
    assert rig.service.process(rig.job.file_id).outcome is Outcome.COMPLETED
    assert (rig.stored().status, rig.source.opened) == (JobStatus.COMPLETED, [])


def test_a_provider_refusing_a_fresh_url_ends_the_job_error_named_provider_rejected(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Expired URL, then the provider has no such file: `error`, ErrorMessage names why."""
    signer = FakeSigner(ProviderNotFoundError("no file accounts for 2026-02-28"))
    source = FakeSource({URL: UrlExpiredError()})
    rig = make_rig(keypair, signer=signer, source=source)
    assert rig.service.process(rig.job.file_id).outcome is Outcome.ERROR
    job = rig.stored()
    assert (job.status, job.lease_owner, signer.calls) == (JobStatus.ERROR, None, 1)
    assert (job.error_message or "").startswith("provider_rejected: ")
    assert rig.destination.objects == {}


def test_transient_faults_that_outlast_the_retries_end_the_job_failed(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """The source stays down through every attempt: `failed` with the fault's code."""
    source = FakeSource({URL: SourceUnavailableError("HTTP 503 from 127.0.0.1")})
    rig = make_rig(keypair, source=source)
    assert rig.service.process(rig.job.file_id).outcome is Outcome.FAILED
    assert (rig.stored().error_message or "").startswith("source_unavailable: ")
    assert len(rig.source.opened) == TUNING.attempts


@dataclass
class TakenOverMidway(FakeSource):
    """While the file streams, the lease runs out and another worker takes the job over."""

    rig: Rig | None = None

    @contextmanager
    def open(self, url: str, **kwargs: Any) -> Iterator[Iterator[bytes]]:
        assert self.rig is not None
        self.rig.clock.advance(LEASE_S + 1)
        self.rig.jobs.claim(self.rig.job.file_id, "successor", LEASE_S)
        with super().open(url, **kwargs) as chunks:
            yield chunks


def test_a_worker_that_lost_its_lease_publishes_nothing_and_leaves_the_job_alone(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """LEASE_LOST: the successor's claim stands, and no object was published by the loser."""
    source = TakenOverMidway()
    rig = make_rig(keypair, source=source)
    source.rig = rig
    assert rig.service.process(rig.job.file_id).outcome is Outcome.LEASE_LOST
    job = rig.stored()
    assert (job.status, job.lease_owner, job.attempts) == (JobStatus.DOWNLOADING, "successor", 2)
    assert rig.destination.objects == {}


def test_the_fake_table_refuses_what_the_real_one_refuses(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Claim only when available or expired; owner-only writes; never back from completed."""
    rig = make_rig(keypair)
    file_id = rig.job.file_id
    rig.jobs.claim(file_id, "a", LEASE_S)
    with pytest.raises(ClaimRefusedError):
        rig.jobs.claim(file_id, "b", LEASE_S)
    with pytest.raises(LeaseLostError):
        rig.jobs.complete(file_id, "b", byte_count=1, sha256="0", destination_key=KEY)
    with pytest.raises(RequeueRefusedError):
        rig.jobs.requeue(file_id)
    rig.jobs.complete(file_id, "a", byte_count=1, sha256="0", destination_key=KEY)
    with pytest.raises(RequeueRefusedError):
        rig.jobs.requeue(file_id, force=True)
    rig.clock.advance(LEASE_S * 10)
    with pytest.raises(ClaimRefusedError):
        rig.jobs.claim(file_id, "b", LEASE_S)
    assert rig.stored().status is JobStatus.COMPLETED

"""A restated file's revision on in-memory fakes: published as a new version of the same key
over the previous revision's object only, one version per revision however workers race
(dlpipe/services/download/revision.py's rules, each with what was published and how the job
ended)."""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.download_errors import ObjectExists
from dlpipe.domain.model import FileJob, JobStatus, Verified
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
from tests.fakes.download import FakeDestination, FakeSource
from tests.fakes.stores import FakeJobsTable
from tests.support import ManualClock, make_job

URL = "http://127.0.0.1:9/files/accounts?X-Amz-Signature=rev2"
KEY = "accounts/2026-02-28/accounts-2026-02-28"
FIRST = b"id,name\n1,ada\n" * 50  # revision 1, published earlier
SECOND = b"id,name\n1,ada\n2,grace\n" * 50  # the vendor's restated file: revision 2
OTHER = b"nobody's revision\n"
POLICY = UrlPolicy.from_patterns(["127.0.0.1:*"], allow_http=True, allow_private=True)
TUNING = TransferTuning(attempts=2, retry_wait_s=0.0, retry_wait_max_s=0.0)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Version:
    """One version of a key, as a versioned bucket keeps it."""

    version_id: str
    data: bytes

    @property
    def etag(self) -> str:
        return f'"{hashlib.md5(self.data, usedforsecurity=False).hexdigest()}"'


@dataclass(frozen=True)
class Current:
    """CurrentObject: the newest version of a key."""

    etag: str
    version_id: str | None
    verified: Verified


@dataclass
class VersionedUpload:
    """An upload published create-only, or with `replaces_etag` over that object only
    (If-Match), as MultipartSink's; `before_publish` runs first (a racing worker's write)."""

    destination: VersionedDestination
    key: str
    replaces_etag: str | None
    data: bytearray = field(default_factory=bytearray)
    published: bool = False
    aborted: bool = False

    @property
    def part_count(self) -> int:
        return 1 if self.data else 0

    def write(self, data: bytes) -> None:
        self.data += data

    def publish(self, sha256_hex: str) -> None:
        hook, self.destination.before_publish = self.destination.before_publish, None
        if hook is not None:
            hook()
        current = self.destination.current_object(self.key)
        if self.replaces_etag is None and current is not None:
            raise ObjectExists(f"{self.key} already exists")
        if self.replaces_etag is not None and (
            current is None or current.etag != self.replaces_etag
        ):
            raise ObjectExists(f"{self.key} holds another object")
        self.destination.put(self.key, bytes(self.data))
        self.published = True

    def abort(self) -> None:
        self.aborted = True


@dataclass
class VersionedDestination(FakeDestination):
    """A versioned bucket: every publish adds a version; `objects` holds the current ones."""

    versions: dict[str, list[Version]] = field(default_factory=dict)  # newest last
    opened: list[VersionedUpload] = field(default_factory=list)
    before_publish: Callable[[], object] | None = None

    def put(self, key: str, data: bytes) -> Version:
        history = self.versions.setdefault(key, [])
        version = Version(f"v{len(history) + 1}", data)
        history.append(version)
        self.objects[key] = data
        return version

    def open_upload(  # type: ignore[override]
        self,
        key: str,
        *,
        part_bytes: int,
        max_in_flight: int,
        expected_sha256: str | None,
        replaces_etag: str | None = None,
    ) -> VersionedUpload:
        upload = VersionedUpload(self, key, replaces_etag)
        self.opened.append(upload)
        return upload

    def current_object(self, key: str) -> Current | None:
        history = self.versions.get(key)
        if not history:
            return None
        newest = history[-1]
        return Current(
            newest.etag, newest.version_id, Verified(len(newest.data), _sha(newest.data))
        )

    def version_before(self, key: str, version_id: str) -> str | None:
        ids = [v.version_id for v in reversed(self.versions.get(key, []))]
        if version_id not in ids or ids.index(version_id) + 1 >= len(ids):
            return None
        return ids[ids.index(version_id) + 1]

    def bodies(self) -> list[bytes]:
        """The key's versions' bytes, oldest first."""
        return [v.data for v in self.versions.get(KEY, [])]


@pytest.fixture(scope="module")
def keypair() -> tuple[RSAPrivateKey, bytes]:
    private_pem, public_pem = generate_rsa_keypair()
    private = load_pem_private_key(private_pem, password=None)
    assert isinstance(private, RSAPrivateKey)
    return private, public_pem


@dataclass
class Rig:
    jobs: FakeJobsTable
    destination: VersionedDestination
    source: FakeSource
    service: DownloadService
    job: FileJob

    def run(self) -> Outcome:
        return self.service.process(self.job.file_id).outcome

    def stored(self) -> FileJob:
        return self.jobs.require(self.job.file_id)


def make_rig(
    keypair: tuple[RSAPrivateKey, bytes],
    *,
    at_key: tuple[bytes, ...] = (FIRST,),
    expected_sha256: bool = True,
) -> Rig:
    """Revision 2 of a file whose revision 1 was FIRST, the key holding `at_key` (oldest first)."""
    private_key, public_pem = keypair
    aes_key, iv = new_aes_key(), new_iv(CIPHER_GCM)
    job = make_job(
        "accounts",
        presigned_url=URL,
        cipher=CIPHER_GCM,
        encrypted_aes_key=wrap_aes_key(load_public_key(public_pem), aes_key),
        encoded_aes_iv=base64.b64encode(iv).decode(),
        expected_size=len(SECOND),
        expected_sha256=_sha(SECOND) if expected_sha256 else None,
        revision=2,
        revised_as="changed",
        previous_sha256=_sha(FIRST),
        previous_size=len(FIRST),
        destination_key=KEY,
    )
    clock = ManualClock()
    jobs, destination, source = FakeJobsTable(clock), VersionedDestination(), FakeSource()
    source.bodies[URL] = encrypt_bytes(SECOND, CIPHER_GCM, aes_key, iv)
    for data in at_key:
        destination.put(KEY, data)
    jobs.create(job)
    deps = ServiceDeps(
        jobs=jobs,
        destination=destination,
        source=source,
        decryption=KeyDecryption(private_key),
        provider=None,
        lease_seconds=30,
        url_policy=POLICY,
        tuning=TUNING,
        stop=threading.Event(),
        owner_prefix="test:1",
        clock=clock,
    )
    return Rig(jobs, destination, source, DownloadService(deps), job)


def _completed_with(job: FileJob, previous_version_id: str | None) -> None:
    assert (job.status, job.byte_count, job.sha256, job.destination_key) == (
        JobStatus.COMPLETED,
        len(SECOND),
        _sha(SECOND),
        KEY,
    )
    assert job.previous_version_id == previous_version_id


def test_the_previous_revision_at_the_key_is_replaced_by_a_new_version(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """If-Match on revision 1's ETag: a second version holding the new file; the job names
    the version it replaced."""
    rig = make_rig(keypair)
    assert rig.run() is Outcome.COMPLETED
    assert rig.destination.bodies() == [FIRST, SECOND]
    assert [u.replaces_etag for u in rig.destination.opened] == [Version("v1", FIRST).etag]
    _completed_with(rig.stored(), "v1")


def test_a_key_holding_nothing_is_published_create_only(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Revision 1's object is gone (deleted since): the revision is the key's first object."""
    rig = make_rig(keypair, at_key=())
    assert rig.run() is Outcome.COMPLETED
    assert rig.destination.bodies() == [SECOND]
    assert [u.replaces_etag for u in rig.destination.opened] == [None]
    _completed_with(rig.stored(), None)


def test_a_revision_published_before_us_completes_the_job_without_a_download(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """A worker whose completion was lost published revision 2 already: nothing is fetched
    or written, and the job names the version before it."""
    rig = make_rig(keypair, at_key=(FIRST, SECOND))
    assert rig.run() is Outcome.COMPLETED
    assert rig.destination.bodies() == [FIRST, SECOND]
    assert (rig.destination.opened, rig.source.opened) == ([], [])
    _completed_with(rig.stored(), "v1")


def test_a_key_holding_neither_revision_ends_the_job_error_and_writes_nothing(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Someone else's object over revision 1: refused before any download, the message naming
    the key and both SHA-256s."""
    rig = make_rig(keypair, at_key=(FIRST, OTHER))
    assert rig.run() is Outcome.ERROR
    assert rig.destination.bodies() == [FIRST, OTHER]
    assert (rig.destination.opened, rig.source.opened) == ([], [])
    job = rig.stored()
    assert job.status is JobStatus.ERROR
    assert job.error_message is not None
    assert "\n" not in job.error_message
    for named in (KEY, _sha(OTHER), _sha(FIRST)):
        assert named in job.error_message
    assert job.previous_version_id is None


def test_a_racing_publish_of_the_same_revision_refuses_ours_and_completes_the_job(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Revision 2 published by another worker between our read and our publish: If-Match
    refuses ours (no third version), theirs is exactly our file, the job names v1."""
    rig = make_rig(keypair)
    rig.destination.before_publish = lambda: rig.destination.put(KEY, SECOND)
    assert rig.run() is Outcome.COMPLETED
    assert rig.destination.bodies() == [FIRST, SECOND]
    assert [u.published for u in rig.destination.opened] == [False]
    _completed_with(rig.stored(), "v1")


def test_a_racing_write_of_other_bytes_ends_the_job_error_and_is_left_as_it_is(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Other bytes land over revision 1 between our read and our publish: If-Match refuses
    ours, and theirs is not our file: error, nothing of ours written."""
    rig = make_rig(keypair)
    rig.destination.before_publish = lambda: rig.destination.put(KEY, OTHER)
    assert rig.run() is Outcome.ERROR
    assert rig.destination.bodies() == [FIRST, OTHER]
    assert rig.stored().status is JobStatus.ERROR


def test_a_revision_of_unknown_sha256_published_before_us_is_verified_and_completed(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """The job does not say what revision 2 is: only the transfer tells that the object over
    revision 1 is ours; create-only refuses a second copy, and the job names v1."""
    rig = make_rig(keypair, at_key=(FIRST, SECOND), expected_sha256=False)
    assert rig.run() is Outcome.COMPLETED
    assert rig.destination.bodies() == [FIRST, SECOND]
    assert [(u.replaces_etag, u.published) for u in rig.destination.opened] == [(None, False)]
    _completed_with(rig.stored(), "v1")


def test_a_revision_of_unknown_sha256_over_other_bytes_ends_the_job_error(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """Unknown SHA-256, and the key holds neither revision: nothing written, error."""
    rig = make_rig(keypair, at_key=(FIRST, OTHER), expected_sha256=False)
    assert rig.run() is Outcome.ERROR
    assert rig.destination.bodies() == [FIRST, OTHER]
    assert rig.stored().status is JobStatus.ERROR


def test_a_first_revision_over_an_existing_object_is_never_replaced(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """A job with no previous revision stays create-only: another object at its key is a
    conflict, never an If-Match publish over it."""
    rig = make_rig(keypair, at_key=(OTHER,))
    job = replace(rig.job, previous_sha256=None, previous_size=None, revision=None)
    rig.jobs.items[job.file_id] = job
    assert rig.run() is Outcome.ERROR
    assert rig.destination.bodies() == [OTHER]
    assert [u.replaces_etag for u in rig.destination.opened] == [None]

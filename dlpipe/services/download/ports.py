"""What the download service needs of its adapters (ports): the real ones in dlpipe.adapters
fit them structurally (bootstrap passes them, mypy checks), tests pass in-memory fakes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from dlpipe.domain.cipher_format import Cipher, UnknownCipher
from dlpipe.domain.model import FileJob, JobStatus, Verified

if TYPE_CHECKING:
    from dlpipe.domain.listing import FileDescriptor
    from dlpipe.domain.url_policy import UrlPolicy


class JobLeases(Protocol):
    """The jobs table as a worker uses it. Every write is conditional: a claim only on an
    available job or an expired lease (ClaimRefusedError), the others only by the claim's
    owner (LeaseLostError), each error carrying the stored job."""

    def get(self, file_id: str, *, consistent: bool = True) -> FileJob | None:
        """The job, or None (absent or past its TTL)."""
        ...

    def claim(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        """available (or an expired claim) -> downloading, owned by `owner`."""
        ...

    def extend_lease(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        """Push the lease of a claim `owner` still holds further out."""
        ...

    def update_url(self, file_id: str, owner: str, url: str, url_expires_at: str | None) -> FileJob:
        """Store a freshly signed URL for a claim `owner` holds."""
        ...

    def complete(
        self,
        file_id: str,
        owner: str,
        *,
        byte_count: int,
        sha256: str,
        destination_key: str,
        previous_version_id: str | None = None,
    ) -> FileJob:
        """downloading -> completed with the verified object's facts; a restated file's also
        with the version its revision replaced (PreviousVersionID), when known."""
        ...

    def finish_unsuccessfully(
        self, file_id: str, owner: str, status: JobStatus, error_message: str
    ) -> FileJob:
        """downloading -> failed or error, with the error message."""
        ...

    def release(self, file_id: str, owner: str, *, error_message: str | None = None) -> FileJob:
        """downloading -> available: give the claim back (with the reason, if given, as the
        job's last error)."""
        ...


class UrlSigner(Protocol):
    """The provider, as far as the downloader needs it: a freshly signed URL for one file."""

    def get_file(self, entity: str, date: str) -> FileDescriptor:
        """The file's descriptor with a fresh presigned URL."""
        ...


class Upload(Protocol):
    """One object being written (dlpipe.adapters.sink.MultipartSink fits): nothing is visible
    until `publish`, which is create-only (ObjectExists when someone published first), or for
    a restated file's revision replaces one given object only (ObjectExists otherwise)."""

    @property
    def published(self) -> bool:
        """True once `publish` succeeded."""
        ...

    @property
    def part_count(self) -> int:
        """Parts written so far."""
        ...

    def write(self, data: bytes) -> None:
        """Append plaintext."""
        ...

    def publish(self, sha256_hex: str) -> None:
        """Make the object visible at its key, with its SHA-256; ObjectExists if taken."""
        ...

    def abort(self) -> None:
        """Drop what was written."""
        ...


class Destination(Protocol):
    """The destination bucket (dlpipe.adapters.destination.S3Destination fits)."""

    def open_upload(
        self,
        key: str,
        *,
        part_bytes: int,
        max_in_flight: int,
        expected_sha256: str | None,
        replaces_etag: str | None = None,
    ) -> Upload:
        """A new upload to `key`, published create-only, or (a restated file's revision) over
        the object of `replaces_etag` only."""
        ...

    def current_object(self, key: str) -> CurrentObject | None:
        """The object at `key` now; None when there is none."""
        ...

    def version_before(self, key: str, version_id: str) -> str | None:
        """The version of `key` just older than `version_id`; None if none is found."""
        ...

    def already_published(self, key: str, job: FileJob) -> Verified | None:
        """The object at `key` if it is this job's verified file, else None."""
        ...

    def verify_existing(self, key: str, ours: Verified) -> Verified:
        """The object at `key` if it is exactly `ours`; a permanent error otherwise."""
        ...

    def abort_stale_uploads(self, key: str) -> int:
        """Abort uploads to `key` a previous claim left behind; how many."""
        ...


class CurrentObject(Protocol):
    """The object at a key now (dlpipe.adapters.destination.StoredObject fits)."""

    @property
    def etag(self) -> str:
        """Its ETag: what a revision's publish replaces (If-Match)."""
        ...

    @property
    def version_id(self) -> str | None:
        """Its version (None: the bucket never had versioning)."""
        ...

    @property
    def verified(self) -> Verified:
        """What it holds: size and SHA-256."""
        ...


class Source(Protocol):
    """Where ciphertext comes from (dlpipe.adapters.source.HttpSource fits)."""

    def open(
        self, url: str, *, chunk_bytes: int, timeout_s: tuple[float, float], policy: UrlPolicy
    ) -> AbstractContextManager[Iterator[bytes]]:
        """The object at `url` as chunks; typed download errors on faults."""
        ...


class StreamDecryptor(Protocol):
    """Ciphertext in, plaintext out; `finalize` checks the padding or the GCM tag."""

    def update(self, chunk: bytes) -> bytes:
        """Plaintext for `chunk` (possibly held back until more arrives)."""
        ...

    def finalize(self) -> bytes:
        """The last plaintext; a permanent error if the padding or tag does not check out."""
        ...


class PlaintextCheck(Protocol):
    """Counts and hashes plaintext against the declared size and SHA-256."""

    @property
    def byte_count(self) -> int:
        """Plaintext bytes seen so far."""
        ...

    @property
    def sha256_hex(self) -> str:
        """SHA-256 (hex) of the plaintext seen so far."""
        ...

    def update(self, data: bytes) -> None:
        """Count and hash `data`; a permanent error as soon as it outgrows the size."""
        ...

    def verify(self) -> None:
        """Check the final size, then the SHA-256; a permanent error if either differs."""
        ...


class Decryption(Protocol):
    """Our private key at work (dlpipe.adapters.decryption.KeyDecryption fits)."""

    def open_decryptor(
        self, cipher: Cipher | UnknownCipher, encrypted_key_b64: str, iv_b64: str
    ) -> StreamDecryptor:
        """A decryptor for one file; typed download errors for a bad key, IV or cipher. A
        WrongKeyError with `reread_after_s` (int): the key may have been fixed since it was
        last read, and is read again in that many seconds; the file is given back till then."""
        ...

    def verifier(self, expected_size: int | None, expected_sha256: str | None) -> PlaintextCheck:
        """The check of one file's plaintext; InvalidMetadataError if the declared values are
        malformed."""
        ...

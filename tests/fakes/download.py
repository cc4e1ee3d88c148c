"""In-memory destination bucket, ciphertext source and provider for the download service."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dlpipe.adapters.destination import StoredObject
from dlpipe.domain.download_errors import DestinationConflictError, ObjectExists
from dlpipe.domain.listing import FileDescriptor
from dlpipe.domain.model import FileJob, Verified
from dlpipe.domain.url_policy import UrlPolicy, check_url


@dataclass
class FakeUpload:
    """Upload: buffered until publish, which is create-only like the real sink's."""

    destination: FakeDestination
    key: str
    data: bytearray = field(default_factory=bytearray)
    published: bool = False
    aborted: bool = False

    @property
    def part_count(self) -> int:
        return 1 if self.data else 0

    def write(self, data: bytes) -> None:
        self.data += data

    def publish(self, sha256_hex: str) -> None:
        if self.key in self.destination.objects:
            raise ObjectExists(self.key)
        self.destination.objects[self.key] = bytes(self.data)
        self.published = True

    def abort(self) -> None:
        self.aborted = True


@dataclass
class FakeDestination:
    """Destination: objects by key; `already_published` compares SHA-256 and size as HEAD does."""

    objects: dict[str, bytes] = field(default_factory=dict)
    uploads: list[FakeUpload] = field(default_factory=list)

    def open_upload(
        self,
        key: str,
        *,
        part_bytes: int,
        max_in_flight: int,
        expected_sha256: str | None,
        replaces_etag: str | None = None,
    ) -> FakeUpload:
        assert replaces_etag is None, "FakeDestination keeps one version a key: no revisions"
        upload = FakeUpload(self, key)
        self.uploads.append(upload)
        return upload

    def current_object(self, key: str) -> StoredObject | None:
        """An unversioned bucket's object (its SHA-256 stands in for the ETag)."""
        found = self.stored(key)
        return None if found is None else StoredObject(found.sha256, None, found)

    def version_before(self, key: str, version_id: str) -> str | None:
        return None  # one version a key

    def stored(self, key: str) -> Verified | None:
        data = self.objects.get(key)
        return None if data is None else Verified(len(data), hashlib.sha256(data).hexdigest())

    def already_published(self, key: str, job: FileJob) -> Verified | None:
        found = self.stored(key)
        if found is None or not job.expected_sha256:
            return None
        if found.sha256 != job.expected_sha256.lower():
            return None
        if job.expected_size is not None and found.byte_count != job.expected_size:
            return None
        return found

    def verify_existing(self, key: str, ours: Verified) -> Verified:
        theirs = self.stored(key)
        if theirs != ours:
            raise DestinationConflictError(f"{key} holds another file")
        return ours

    def abort_stale_uploads(self, key: str) -> int:
        return 0


@dataclass
class FakeSource:
    """Source: ciphertext by URL, or an exception to raise when it is opened."""

    bodies: dict[str, bytes | Exception] = field(default_factory=dict)
    opened: list[str] = field(default_factory=list)

    @contextmanager
    def open(
        self, url: str, *, chunk_bytes: int, timeout_s: tuple[float, float], policy: UrlPolicy
    ) -> Iterator[Iterator[bytes]]:
        check_url(policy, url)  # as the real source does, before any request
        self.opened.append(url)
        body = self.bodies[url]
        if isinstance(body, Exception):
            raise body
        yield iter([body[i : i + chunk_bytes] for i in range(0, len(body), chunk_bytes)])


@dataclass
class FakeSigner:
    """UrlSigner: hands out the given descriptor, or raises the given error."""

    answer: FileDescriptor | Exception
    calls: int = 0

    def get_file(self, entity: str, date: str) -> FileDescriptor:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

"""An in-memory ManifestStore: manifests rendered by the domain (without the file lists, which
only the S3 store writes), the pointer compare-and-swap on a counter standing in for the ETag."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from dlpipe.domain.manifest import (
    DayPointer,
    ManifestConflictError,
    ManifestEntry,
    ManifestHeader,
    ManifestRef,
    PublishedFile,
    StoredObject,
    manifest_key,
    render,
)
from dlpipe.domain.manifest_lists import PENDING, UnpublishedFile, WithdrawnFile
from dlpipe.domain.outcome import FILES_PER_CODE

BUCKET = "fake-bucket"


@dataclass
class FakeManifestStore:
    """Objects by key; `refuse_pointer` refuses that many pointer writes (a racing writer)."""

    objects: dict[str, bytes] = field(default_factory=dict)
    pointers: dict[tuple[str, str], tuple[DayPointer, str]] = field(default_factory=dict)
    refuse_pointer: int = 0
    writes: int = 0
    heads: dict[str, StoredObject] = field(default_factory=dict)  # the files' objects

    def write(
        self,
        header: ManifestHeader,
        files: Iterable[PublishedFile],
        unpublished: Iterable[UnpublishedFile] = (),
        withdrawn: Iterable[WithdrawnFile] = (),
    ) -> ManifestRef:
        missing = sorted(unpublished, key=lambda f: f.file_id)
        entries = sorted(
            (
                ManifestEntry(f.file_id, f.entity, BUCKET, f.key, f.size, f.sha256, "v1")
                for f in files
            ),
            key=lambda e: e.file_id,
        )
        gone = sorted(withdrawn, key=lambda f: f.file_id)
        data = b"".join(render(header, lambda: iter(entries), missing, withdrawn=gone))
        key = manifest_key(header.feed, header.date, header.batch_id, header.status)
        if key in self.objects and self.objects[key] != data:
            raise ManifestConflictError(f"the manifest {key} conflicts")
        if key not in self.objects:
            self.objects[key] = data
            self.writes += 1
        digest = hashlib.sha256(data).hexdigest()
        pending = tuple(f.file_id for f in missing if f.status == PENDING)[:FILES_PER_CODE]
        return ManifestRef(
            BUCKET, key, "v1", digest, len(data), len(entries), pending_files=pending
        )

    def read_pointer(self, feed: str, date: str) -> tuple[DayPointer, str] | None:
        return self.pointers.get((feed, date))

    def put_pointer(self, pointer: DayPointer, *, etag: str | None) -> bool:
        current = self.pointers.get((pointer.feed, pointer.date))
        if self.refuse_pointer or (current[1] if current else None) != etag:
            self.refuse_pointer = max(0, self.refuse_pointer - 1)
            return False
        self.pointers[(pointer.feed, pointer.date)] = (pointer, f"etag-{self.writes}-{id(pointer)}")
        return True

    def read_object(self, key: str, version_id: str | None = None) -> bytes | None:
        return self.objects.get(key)

    def head(self, key: str, version_id: str | None = None) -> StoredObject | None:
        if key in self.heads or key not in self.objects:
            return self.heads.get(key)
        data = self.objects[key]  # a manifest: written once, so always the "v1" write() names
        return StoredObject("v1", len(data), hashlib.sha256(data).hexdigest())

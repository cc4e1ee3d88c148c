"""What the write-manifest step needs from the destination bucket (dlpipe.adapters.manifest_store
fits it structurally; `dlpipe.bootstrap.orchestrator` wires it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from dlpipe.domain.manifest import (
    DayPointer,
    ManifestHeader,
    ManifestRef,
    PublishedFile,
    StoredObject,
)
from dlpipe.domain.manifest_lists import UnpublishedFile, WithdrawnFile


class ManifestStore(Protocol):
    """The day manifests and their per-date pointers in the destination bucket."""

    def write(
        self,
        header: ManifestHeader,
        files: Iterable[PublishedFile],
        unpublished: Iterable[UnpublishedFile] = (),
        withdrawn: Iterable[WithdrawnFile] = (),
    ) -> ManifestRef:
        """Write the batch's file lists, then its manifest, each create-only, its entries in
        FileID order (each file's object looked at first: only present, matching objects
        become entries) and its unpublished files (and a revision's withdrawn ones) in FileID
        order. If one exists with the same bytes, it is kept; with other bytes,
        ManifestConflictError."""
        ...

    def head(self, key: str, version_id: str | None = None) -> StoredObject | None:
        """An object's current version (or `version_id`), size and SHA-256 metadata; None if
        there is none (a revision names the manifest it supersedes at its current version)."""
        ...

    def read_pointer(self, feed: str, date: str) -> tuple[DayPointer, str] | None:
        """The day's pointer and its ETag, or None if there is none."""
        ...

    def put_pointer(self, pointer: DayPointer, *, etag: str | None) -> bool:
        """Write the pointer if it is still at `etag` (None: if there is none); False if not."""
        ...

"""What the write-manifest step needs from the destination bucket (dlpipe.adapters.manifest_store
fits it structurally; `dlpipe.bootstrap.orchestrator` wires it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from dlpipe.domain.manifest import DayPointer, ManifestHeader, ManifestRef, PublishedFile


class ManifestStore(Protocol):
    """The day manifests and their per-date pointers in the destination bucket."""

    def write(self, header: ManifestHeader, files: Iterable[PublishedFile]) -> ManifestRef:
        """Write the batch's manifest create-only, its entries in FileID order (each file's
        object looked at first: only present, matching objects become entries). If it exists
        with the same bytes, its ref; with other bytes, ManifestConflictError."""
        ...

    def read_pointer(self, feed: str, date: str) -> tuple[DayPointer, str] | None:
        """The day's pointer and its ETag, or None if there is none."""
        ...

    def put_pointer(self, pointer: DayPointer, *, etag: str | None) -> bool:
        """Write the pointer if it is still at `etag` (None: if there is none); False if not."""
        ...

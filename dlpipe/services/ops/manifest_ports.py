"""What the manifest audit reads from the destination bucket (dlpipe.adapters.manifest_store's
S3ManifestStore fits it structurally; `dlpipe.bootstrap.ops` builds it)."""

from __future__ import annotations

from typing import Protocol

from dlpipe.domain.manifest import DayPointer, StoredObject


class ManifestReader(Protocol):
    """The day manifests, their pointers and the objects they name: GET and HEAD only."""

    def read_pointer(self, feed: str, date: str) -> tuple[DayPointer, str] | None:
        """The day's pointer and its ETag, or None."""
        ...

    def read_object(self, key: str, version_id: str | None = None) -> bytes | None:
        """The object's bytes (that version, if given), or None if there is none."""
        ...

    def head(self, key: str, version_id: str | None = None) -> StoredObject | None:
        """The object's current version, size and SHA-256 metadata (HEAD, no body), or None."""
        ...

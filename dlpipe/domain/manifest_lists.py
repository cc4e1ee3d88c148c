"""What a day manifest says beyond its published files, and the two file lists written beside it
(docs/ARCHITECTURE.md, "Hand-off: the day manifest"; README.md, "Reading a day's files").

- `unpublished`: every file the batch expected that has no verified object, each with its
  FileID, entity, `status` (`failed`, `error`, or `pending`: never finished, a timed-out day's
  missing file) and its error code where one is known (the outcome summary's taxonomy,
  dlpipe/domain/outcome.py).
- The JSON Lines file list: one object per published file with exactly FILE_LIST_KEYS, which
  pandas (`read_json(lines=True)`), Spark (`read.json`) and Athena (the OpenX JSON SerDe) read
  as it is. Written for every manifest (empty for a day without files).
- The Redshift COPY manifest: `{"entries": [...]}` and nothing else, each entry exactly `url`,
  `mandatory` and `meta.content_length`. Written only for a day with files (COPY refuses an
  empty manifest).

Rendering is pure and ordered by FileID, as the manifest's: the same batch renders the same
bytes, so a replayed step verifies them instead of writing again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlpipe.domain.manifest import ManifestEntry

PENDING = "pending"  # an unpublished file's status while its job never ended
FILE_LIST_KEYS = ("s3_uri", "version_id", "size", "sha256", "entity", "file_id")


def canonical_json(value: Any) -> str:
    """The manifests' one spelling of a value: sorted keys, no spaces, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True)
class UnpublishedFile:
    """An expected file without a verified object: failed, error or pending."""

    file_id: str
    entity: str
    status: str
    error_code: str | None

    def record(self) -> dict[str, Any]:
        """The manifest's `unpublished` item."""
        return {
            "file_id": self.file_id,
            "entity": self.entity,
            "status": self.status,
            "error_code": self.error_code,
        }


@dataclass(frozen=True)
class ListedObject:
    """A file list written beside the manifest: its key, and its bytes' SHA-256 and size (no
    version: a re-created list with the same bytes still matches the manifest)."""

    key: str
    sha256: str
    size: int

    def to_dict(self, bucket: str) -> dict[str, Any]:
        """The manifest's `file_list` / `copy_manifest` value."""
        return {
            "key": self.key,
            "uri": f"s3://{bucket}/{self.key}",
            "sha256": self.sha256,
            "size": self.size,
        }


@dataclass(frozen=True)
class ManifestLists:
    """The manifest's two file lists (no COPY manifest for a day without files)."""

    bucket: str
    file_list: ListedObject
    copy_manifest: ListedObject | None

    def fields(self) -> dict[str, Any]:
        """The manifest's top-level `file_list` and `copy_manifest`."""
        copy = self.copy_manifest
        return {
            "file_list": self.file_list.to_dict(self.bucket),
            "copy_manifest": None if copy is None else copy.to_dict(self.bucket),
        }


def file_list_record(entry: ManifestEntry) -> dict[str, Any]:
    """One line of the JSON Lines file list: exactly FILE_LIST_KEYS."""
    return {
        "s3_uri": entry.url,
        "version_id": entry.version_id,
        "size": entry.size,
        "sha256": entry.sha256,
        "entity": entry.entity,
        "file_id": entry.file_id,
    }


def render_file_list(entries: Iterable[ManifestEntry]) -> Iterator[bytes]:
    """The JSON Lines file list: a line per entry, each ending in a newline."""
    for entry in entries:
        yield f"{canonical_json(file_list_record(entry))}\n".encode()


def render_copy_manifest(entries: Iterable[ManifestEntry]) -> Iterator[bytes]:
    """Redshift COPY's manifest: `{"entries":[...]}`, an entry a line."""
    yield b'{"entries":['
    yield from render_items(entry.copy_entry() for entry in entries)
    yield b"]}\n"


def render_items(items: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """A JSON list's items, one a line (the caller writes the brackets)."""
    separator = "\n"
    for item in items:
        yield f"{separator}{canonical_json(item)}".encode()
        separator = ",\n"


def named_file_list(named: object) -> str | None:
    """A manifest's `file_list` value read back: its `uri` or `key` (a string as it is)."""
    if isinstance(named, Mapping):
        named = named.get("uri") or named.get("key")
    return named if isinstance(named, str) and named else None

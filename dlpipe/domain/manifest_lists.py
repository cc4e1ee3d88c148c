"""What a day manifest says beyond its published files, the two file lists written beside it,
and the write-manifest step's reference to what it wrote (docs/ARCHITECTURE.md, "Hand-off: the
day manifest"; README.md, "Reading a day's files").

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
- A revision batch's (dlpipe/domain/restatement.py): its number, the manifest it supersedes,
  each file's mark (`revised`: unchanged, changed or added, a changed one with the version and
  SHA-256 it replaced), the files it `withdrew` (named, never in the file lists: COPY must not
  load one) and the counts of each, taken from what the manifest lists. An ordinary batch's
  manifest has none of these keys, so its bytes are what they were before revisions.

Rendering is pure and ordered by FileID, as the manifest's: the same batch renders the same
bytes, so a replayed step verifies them instead of writing again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from dlpipe.domain.restatement import Revised
from dlpipe.domain.statuses import ERROR_JOB_STATUSES, FAILED_JOB_STATUSES, count_of

if TYPE_CHECKING:
    from dlpipe.domain.manifest import ManifestEntry, ManifestHeader

PENDING = "pending"  # an unpublished file's status while its job never ended
# A revision manifest's marks of the files it lists (a withdrawn file is listed apart).
LISTED_MARKS = (Revised.UNCHANGED, Revised.CHANGED, Revised.ADDED)
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


@dataclass(frozen=True)
class WithdrawnFile:
    """A file the revision withdrew: named with the object and SHA-256 it last published (the
    object is kept), and in no list a loader reads."""

    file_id: str
    entity: str
    key: str
    sha256: str

    def record(self) -> dict[str, Any]:
        """The manifest's `withdrawn` item."""
        return {
            "file_id": self.file_id,
            "entity": self.entity,
            "key": self.key,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class Revision:
    """What a revision batch's manifest says beyond an ordinary one's: its number, the
    manifest it supersedes (key and version, None: that object was gone when this one was
    written) and how many files of each mark it names."""

    number: int
    supersedes_key: str
    supersedes_version_id: str | None
    unchanged: int = 0
    changed: int = 0
    added: int = 0
    withdrawn: int = 0

    def counts(self) -> dict[str, int]:
        """The marks' counts, which the manifest's `counts` carry beside the statuses'."""
        return {str(kind): getattr(self, kind.value) for kind in Revised}

    def supersedes(self) -> dict[str, Any]:
        """The manifest's and the event's `supersedes`."""
        return {"key": self.supersedes_key, "version_id": self.supersedes_version_id}

    def to_dict(self) -> dict[str, Any]:
        """The write-manifest step's reference carries it to the outcome event."""
        return {"revision": self.number, "supersedes": self.supersedes(), "counts": self.counts()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Revision:
        """Read back `to_dict`'s output, or a manifest's top level (the same keys)."""
        counts, named = data["counts"], data["supersedes"]
        version = named.get("version_id")
        return cls(
            int(data["revision"]), str(named["key"]), None if version is None else str(version),
            *(int(counts[str(kind)]) for kind in Revised),
        )  # fmt: skip


def revision_of(doc: Mapping[str, Any]) -> Revision | None:
    """A manifest's revision; None for an ordinary one (it has no `revision` key)."""
    return None if doc.get("revision") is None else Revision.from_dict(doc)


def mark_record(entry: ManifestEntry) -> dict[str, Any]:
    """A revision's keys of a `files` item: the mark, and what a changed or added file
    replaced (None for a file new to the day); nothing for an ordinary manifest's."""
    if entry.revised is None:
        return {}
    if entry.revised == Revised.UNCHANGED:
        return {"revised": entry.revised}
    replaced = {"previous_version_id": entry.previous_version_id}
    return {"revised": entry.revised, **replaced, "previous_sha256": entry.previous_sha256}


def counted(
    header: ManifestHeader, marks: Mapping[str, int], unpublished: Mapping[str, int], withdrawn: int
) -> ManifestHeader:
    """A revision's header with its counts taken from what the manifest lists (its entries'
    marks, its unpublished files' statuses, its withdrawn files), so they always add up to
    the lists a reader finds; an ordinary header as it is (the batch item's counts)."""
    if header.revision is None:
        return header
    failed = count_of(unpublished, FAILED_JOB_STATUSES)
    error = count_of(unpublished, ERROR_JOB_STATUSES)
    unchanged, changed, added = (marks.get(str(kind), 0) for kind in LISTED_MARKS)
    completed = unchanged + changed + added
    expected = completed + failed + error + unpublished.get(PENDING, 0)
    revision = replace(
        header.revision, unchanged=unchanged, changed=changed, added=added, withdrawn=withdrawn
    )
    return replace(
        header,
        expected=expected,
        completed=completed,
        failed=failed,
        error=error,
        revision=revision,
    )


@dataclass(frozen=True)
class ManifestRef:
    """Where a written manifest is and how to check it: the write-manifest step's result."""

    bucket: str
    key: str
    version_id: str | None
    sha256: str
    size: int
    entries: int
    file_list_key: str | None = None
    copy_key: str | None = None
    pending_files: tuple[str, ...] = ()  # the first pending FileIDs (the event names them)
    revision: Revision | None = None  # a revision batch's (the event says Day Revised)

    @property
    def uri(self) -> str:
        """s3://bucket/key."""
        return f"s3://{self.bucket}/{self.key}"

    def _uri(self, key: str | None) -> str | None:
        return None if key is None else f"s3://{self.bucket}/{key}"

    def to_dict(self) -> dict[str, Any]:
        """The step's JSON result (URIs included, for consumers that want one string)."""
        uris = {
            "file_list_uri": self._uri(self.file_list_key),
            "copy_uri": self._uri(self.copy_key),
        }
        fields = {**asdict(self), "pending_files": list(self.pending_files), "uri": self.uri}
        del fields["revision"]  # an ordinary batch's reference has no key of a revision's
        revision = {"revision": self.revision.to_dict()} if self.revision else {}
        return fields | uris | revision

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ManifestRef:
        """Rebuild from `to_dict` output (a checkpoint; one written before the file lists
        has none)."""
        version = data.get("version_id")
        return cls(
            str(data["bucket"]), str(data["key"]), None if version is None else str(version),
            str(data["sha256"]), int(data["size"]), int(data["entries"]),
            data.get("file_list_key"), data.get("copy_key"),
            tuple(str(f) for f in data.get("pending_files", ())),
            Revision.from_dict(data["revision"]) if data.get("revision") else None,
        )  # fmt: skip

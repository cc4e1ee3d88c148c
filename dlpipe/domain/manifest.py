"""The day manifest's format: one immutable JSON object per ended batch, and the per-date pointer
that names the day's current one (docs/ARCHITECTURE.md, "Hand-off: the day manifest").

The top-level `entries` list is Redshift COPY's manifest as it is: each entry has exactly
`url`, `mandatory` and `meta.content_length`, so `COPY ... MANIFEST` (and Spectrum, which needs
the length) reads the object unchanged. COPY documents only those entry keys, so our per-file
facts go in a parallel top-level list, `files` (same order, same length); extra top-level keys
are what UNLOAD's own verbose manifests carry too. Rendering is pure and ordered by FileID, so
the same batch always renders the same bytes (a replayed step can verify, not rewrite).

Every expected file is named: `files` the published ones, `unpublished` the others (failed,
error, pending), and `counts` add up (completed + failed + error + pending = expected); `cause`
says why a batch failed or timed out as a whole. Beside each manifest, a JSON Lines file list
and a COPY-only manifest (dlpipe/domain/manifest_lists.py), which the manifest names with their
SHA-256. These keys were added within format 1: every earlier key keeps its meaning, and a
reader ignores keys it does not know (a manifest written before them parses too); so were a
revision batch's (`revision`, `supersedes`, the files' marks, `withdrawn`: manifest_lists.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from dlpipe.domain.feeds import is_feed_name
from dlpipe.domain.manifest_lists import (
    ManifestLists,
    Revision,
    UnpublishedFile,
    WithdrawnFile,
    canonical_json,
    mark_record,
    named_file_list,
    render_items,
    revision_of,
)
from dlpipe.domain.manifest_lists import ManifestRef as ManifestRef  # noqa: PLC0414 (re-exported)
from dlpipe.domain.model import validate_batch_id, validate_date
from dlpipe.domain.statuses import BATCH_OPEN, SUCCESSFUL_BATCH_STATUSES, TERMINAL_BATCH_STATUSES

MANIFEST_ROOT = "_dlpipe/manifests"
FORMAT = "dlpipe-day-manifest/1"
POINTER_NAME = "latest.json"
FILE_LIST_DIR = "files"  # the JSON Lines file lists, alone in a folder (Athena reads a folder)
HEAD_WORKERS = 8  # a manifest's objects HEADed at once, by the write-manifest step and the audit


def _provisional(status: str) -> bool:
    """A status a batch ended in but may still leave (timeout: its files may be repaired)."""
    return status in BATCH_OPEN


class ManifestError(ValueError):
    """A manifest or pointer that is not in this format (one line, names what is wrong)."""


class ManifestConflictError(RuntimeError):
    """The batch's manifest already exists with other bytes: it is never overwritten."""


def day_prefix(feed: str, date: str) -> str:
    """`_dlpipe/manifests/{feed}/{date}/`: every manifest of one feed's day, and its pointer."""
    if not is_feed_name(feed):
        raise ManifestError(f"feed must be a feed name, got {feed!r}")
    return f"{MANIFEST_ROOT}/{feed}/{validate_date(date)}/"


def manifest_key(feed: str, date: str, batch_id: str, status: str) -> str:
    """Where the manifest of `batch_id` ended `status` lives (feed `default` for the default
    feed): `{batch_id}.json` for its final status, completed or failed, and
    `{batch_id}.timeout.json` for timeout, the one status a batch may leave (repaired to
    completed or failed), so each of a batch's at most two manifests has its own key."""
    if status not in TERMINAL_BATCH_STATUSES:
        raise ManifestError(f"status must be one a batch ends with, got {status!r}")
    suffix = f".{status}.json" if _provisional(status) else ".json"
    return f"{day_prefix(feed, date)}{validate_batch_id(batch_id)}{suffix}"


def file_list_key(feed: str, date: str, batch_id: str, status: str) -> str:
    """The JSON Lines file list beside a manifest: `files/{batch_id}[.timeout].jsonl`."""
    name = manifest_key(feed, date, batch_id, status).rpartition("/")[2]
    return f"{day_prefix(feed, date)}{FILE_LIST_DIR}/{name.removesuffix('.json')}.jsonl"


def copy_manifest_key(feed: str, date: str, batch_id: str, status: str) -> str:
    """The Redshift COPY manifest beside a manifest: `{batch_id}[.timeout].copy.json`."""
    return f"{manifest_key(feed, date, batch_id, status).removesuffix('.json')}.copy.json"


def pointer_key(feed: str, date: str) -> str:
    """Where the pointer to the day's current manifest lives."""
    return f"{day_prefix(feed, date)}{POINTER_NAME}"


@dataclass(frozen=True)
class ManifestHeader:
    """The batch's facts: who, which day, how it ended, and the counts over all its files."""

    feed: str
    date: str
    batch_id: str
    status: str
    expected: int
    completed: int
    failed: int
    error: int
    created_at: str
    finished_at: str
    cause: str | None = None  # the outcome summary's: why the batch failed or timed out
    revision: Revision | None = None  # a revision batch's (None: an ordinary batch)

    @property
    def pending(self) -> int:
        """Expected files that never ended (a timed-out day's), so the counts add up."""
        return max(0, self.expected - self.completed - self.failed - self.error)

    def fields(self) -> dict[str, Any]:
        """The top-level keys besides the lists."""
        names = ("expected", "completed", "failed", "error", "pending")
        counts = {k: getattr(self, k) for k in names}
        revision = self.revision
        if revision is not None:  # an ordinary header renders no key of a revision's
            counts |= revision.counts()
        extra = (
            {"revision": revision.number, "supersedes": revision.supersedes()} if revision else {}
        )
        return {
            "format": FORMAT,
            "feed": self.feed,
            "date": self.date,
            "batch_id": self.batch_id,
            "status": self.status,
            "counts": counts,
            "cause": self.cause,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
        } | extra


@dataclass(frozen=True)
class ManifestEntry:
    """One published, verified file: its object (and version) and what the job verified."""

    file_id: str
    entity: str
    bucket: str
    key: str
    size: int
    sha256: str
    version_id: str | None
    revised: str | None = None  # a revision's mark (manifest_lists.mark_record), and what
    previous_version_id: str | None = None  # a changed or added file replaced
    previous_sha256: str | None = None

    @property
    def url(self) -> str:
        """The object's S3 URI, as COPY reads it."""
        return f"s3://{self.bucket}/{self.key}"

    def copy_entry(self) -> dict[str, Any]:
        """The Redshift COPY entry: nothing else, so COPY reads it as it is."""
        return {"url": self.url, "mandatory": True, "meta": {"content_length": self.size}}

    def file_record(self) -> dict[str, Any]:
        """Our facts about the same file (the `files` list, index for index)."""
        return {
            "file_id": self.file_id,
            "entity": self.entity,
            "key": self.key,
            "version_id": self.version_id,
            "size": self.size,
            "sha256": self.sha256,
        } | mark_record(self)


_dumps = canonical_json


def render(
    header: ManifestHeader,
    entries: Callable[[], Iterable[ManifestEntry]],
    unpublished: Iterable[UnpublishedFile] = (),
    lists: ManifestLists | None = None,
    withdrawn: Iterable[WithdrawnFile] = (),
) -> Iterator[bytes]:
    """The manifest's bytes, a line per entry; `entries` is called twice (once per list) and
    must yield the same entries in FileID order both times, `unpublished` and (a revision's)
    `withdrawn` in FileID order."""
    fields = header.fields() | (lists.fields() if lists else {})
    head = _dumps(fields)[:-1]  # the header object, left open for the lists
    yield f'{head},\n"entries":['.encode()
    yield from render_items(entry.copy_entry() for entry in entries())
    yield b'],\n"files":['
    yield from render_items(entry.file_record() for entry in entries())
    yield b'],\n"unpublished":['
    yield from render_items(file.record() for file in unpublished)
    if header.revision is not None:
        yield b'],\n"withdrawn":['
        yield from render_items(file.record() for file in withdrawn)
    yield b"]}\n"


@dataclass(frozen=True)
class Manifest:
    """A manifest read back: its header fields and its entries."""

    header: ManifestHeader
    entries: tuple[ManifestEntry, ...]
    unpublished: tuple[UnpublishedFile, ...] = ()
    file_list: str | None = None  # its JSON Lines file list, as it names it (key or s3:// URI)
    withdrawn: tuple[WithdrawnFile, ...] = ()  # a revision's


def parse_manifest(data: bytes) -> Manifest:
    """Read a manifest's bytes; ManifestError if they are not one in this format."""
    try:
        doc = _document(data, "manifest")
        entries, files = doc["entries"], doc["files"]
        pairs = zip(entries, files, strict=True)  # ValueError if their lengths differ
        entries_read = tuple(_entry(e, f) for e, f in pairs)
        unpublished = tuple(UnpublishedFile(**u) for u in doc.get("unpublished", []))
        listed = named_file_list(doc.get("file_list"))
        withdrawn = tuple(WithdrawnFile(**w) for w in doc.get("withdrawn", []))
        return Manifest(_header(doc), entries_read, unpublished, listed, withdrawn)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, ManifestError):
            raise
        raise ManifestError(f"malformed manifest: {type(exc).__name__}: {exc}") from exc


def _document(data: bytes, what: str) -> dict[str, Any]:
    doc = json.loads(data)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ManifestError(f"not a {FORMAT} {what}")
    return doc


def _header(doc: Mapping[str, Any]) -> ManifestHeader:
    counts = doc["counts"]
    return ManifestHeader(
        str(doc["feed"]), str(doc["date"]), str(doc["batch_id"]), str(doc["status"]),
        int(counts["expected"]), int(counts["completed"]), int(counts["failed"]),
        int(counts["error"]), str(doc["created_at"]), str(doc["finished_at"]),
        None if doc.get("cause") is None else str(doc["cause"]), revision_of(doc),
    )  # fmt: skip


def _entry(copy_entry: Mapping[str, Any], record: Mapping[str, Any]) -> ManifestEntry:
    url = str(copy_entry["url"])
    bucket, _, key = url.removeprefix("s3://").partition("/")
    if not url.startswith("s3://") or key != record["key"]:
        raise ManifestError(f"entry {url!r} does not match its file record")
    size = int(copy_entry["meta"]["content_length"])
    return ManifestEntry(
        str(record["file_id"]), str(record["entity"]), bucket, key, size,
        str(record["sha256"]), record["version_id"], record.get("revised"),
        record.get("previous_version_id"), record.get("previous_sha256"),
    )  # fmt: skip


@dataclass(frozen=True)
class DayPointer:
    """`latest.json`: which batch's manifest is the day's current one, and how to check it
    (its own SHA-256 and version are recorded here, as the object cannot carry a hash of
    itself)."""

    feed: str
    date: str
    batch_id: str
    status: str
    created_at: str  # the batch's: a rerun is always created after the batches it follows
    finished_at: str
    key: str
    version_id: str | None
    sha256: str
    size: int
    file_list_key: str | None = None  # the manifest's JSON Lines file list
    copy_key: str | None = None  # its Redshift COPY manifest (None: a day without files)

    def to_bytes(self) -> bytes:
        """Its JSON object, one spelling."""
        return (_dumps({"format": FORMAT, **asdict(self)}) + "\n").encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> DayPointer:
        """Read a pointer back; ManifestError if it is not one."""
        try:
            doc = _document(data, "pointer")
            return cls(**{k: v for k, v in doc.items() if k != "format"})
        except (ValueError, TypeError, AttributeError) as exc:
            if isinstance(exc, ManifestError):
                raise
            raise ManifestError(f"malformed pointer: {type(exc).__name__}: {exc}") from exc


def supersedes(new: DayPointer, current: DayPointer | None) -> bool:
    """The pointer rule: a completed batch's manifest replaces any earlier one (a rerun's
    supersedes); a failed or timed-out batch's is the day's only while no completed one is,
    so a failed rerun never hides a completed day. Among equals the later-created batch wins,
    so a late retry of an older batch's step cannot take the pointer back. The same batch's
    manifest replaces only its own timeout one (timeout -> completed or failed, repaired)."""
    if current is None:
        return True
    if current.batch_id == new.batch_id:
        # Its later status's manifest, never the timeout one back over it (a late retry).
        return _provisional(current.status) and not _provisional(new.status)
    completed = new.status in SUCCESSFUL_BATCH_STATUSES
    if (current.status in SUCCESSFUL_BATCH_STATUSES) != completed:
        return completed
    return new.created_at > current.created_at


@dataclass(frozen=True)
class PublishedFile:
    """What a completed job says about its object (before the store looks at the object)."""

    file_id: str
    entity: str
    key: str
    size: int
    sha256: str
    revised: str | None = None  # a revision's marks (ManifestEntry's)
    previous_version_id: str | None = None
    previous_sha256: str | None = None


@dataclass(frozen=True)
class StoredObject:
    """What a HEAD says about an object: its current version, size and our SHA-256 metadata."""

    version_id: str | None
    size: int
    sha256: str | None

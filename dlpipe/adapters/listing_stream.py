"""A day's listing parsed as a stream: one validated entry at a time, any number of pages.

`ListingParser` turns the bytes of all pages (`{"date", "files", "next"?}`: docs/ARCHITECTURE.md,
"The provider's contract") into FileDescriptors and RejectedFiles through an incremental JSON
parser (ijson), building only the entry being read: memory is O(one entry). Per-file faults are
RejectedFiles, whole-listing faults MalformedResponseError. What is refused, and where this
differs from `parse_listing`: docs/ARCHITECTURE.md, "Why the listing is a stream".
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import ijson

from dlpipe.config import Settings
from dlpipe.domain.descriptor import kind, parse_file, safe_entity, show_value
from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile
from dlpipe.domain.provider_errors import MalformedResponseError

# Defaults are the settings' (DLPIPE_PROVIDER_LISTING_MAX_*): one entry is 1-2.3 KB, so 64 KiB
# is no file; 200,000 files is twice the largest day the design plans for.
DEFAULT_MAX_ENTRY_BYTES: int = Settings.provider_listing_max_entry_bytes
DEFAULT_MAX_FILES: int = Settings.provider_listing_max_files
DEFAULT_MAX_PAGES: int = Settings.provider_listing_max_pages
_FEED_BYTES = 8 * 1024  # the parser is fed slices this size: bounds how late a cap trips
_BACKEND_ENV = "DLPIPE_IJSON_BACKEND"  # tests and benches may force "python"
_PAGE_KEYS = frozenset({"date", "files", "next"})  # each at most once a page
_BROKE_OFF = "the answer breaks off or has trailing data"  # a parse error at end of input


def _pick_backend() -> ModuleType:
    forced = os.environ.get(_BACKEND_ENV)
    for name in [forced] if forced else ["yajl2_c", "yajl2_cffi", "python"]:
        try:
            backend: ModuleType = ijson.get_backend(name)
        except ImportError:
            continue
        return backend
    raise ImportError(f"ijson backend {forced!r} is not available")


BACKEND = _pick_backend()
BACKEND_NAME: str = getattr(BACKEND, "backend_name", BACKEND.__name__.rsplit(".", 1)[-1])


@dataclass(frozen=True)
class ListingLimits:
    """Sanity caps of a streamed listing; each breach is a whole-listing fault."""

    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_pages: int = DEFAULT_MAX_PAGES

    def __post_init__(self) -> None:
        if min(self.max_entry_bytes, self.max_files, self.max_pages) < 1:
            raise ValueError("listing limits must be positive")

    @classmethod
    def from_settings(cls, settings: Settings) -> ListingLimits:
        """The caps configured by DLPIPE_PROVIDER_LISTING_MAX_{ENTRY_BYTES,FILES,PAGES}."""
        return cls(
            settings.provider_listing_max_entry_bytes,
            settings.provider_listing_max_files,
            settings.provider_listing_max_pages,
        )


Entry = FileDescriptor | RejectedFile


class ListingParser:
    """The pages of one day's listing, in order: `page` per answer until `next_cursor` is None."""

    def __init__(self, expected_date: str, limits: ListingLimits | None = None) -> None:
        self.expected_date = expected_date
        self.limits = limits or ListingLimits()
        self.entries = 0  # entries read so far, all pages
        self.pages = 0
        # Digests, not cursors: a hostile provider's 10,000 pages x 72 KB cursors are 720 MB.
        self._cursors: set[bytes] = set()
        self.next_cursor: str | None = None  # the last page's `next`

    def page(self, chunks: Iterable[bytes]) -> Iterator[Entry]:
        """Entries of one answer, in order; afterwards `next_cursor` holds its `next` or None."""
        self.pages += 1
        if self.pages > self.limits.max_pages:
            raise MalformedResponseError(
                f"listing: more than {self.limits.max_pages} pages (the page cap)"
            )
        self.next_cursor = None
        page = _Page(self)
        yield from page.run(chunks)
        cursor = page.next_cursor
        if cursor is not None:
            digest = hashlib.sha256(cursor.encode("utf-8", "surrogatepass")).digest()
            if digest in self._cursors:
                raise MalformedResponseError(
                    f"listing.next: page {self.pages} repeats an earlier cursor"
                    " (the listing would never end)"
                )
            self._cursors.add(digest)
        self.next_cursor = cursor

    def _entry(self, item: object) -> Entry:
        index = self.entries
        self.entries += 1
        if self.entries > self.limits.max_files:
            raise MalformedResponseError(
                f"listing: more than {self.limits.max_files} files (the listing's file cap)"
            )
        where = f"files[{index}]"
        try:
            return parse_file(item, self.expected_date, where)
        except MalformedResponseError as exc:
            entity = safe_entity(item)
            return RejectedFile(entity or where, str(exc), entity)


class _Page:
    """One answer's event loop: top-level keys, the `files` array, one entry built at a time."""

    def __init__(self, parser: ListingParser) -> None:
        self._parser = parser
        self._cap = parser.limits.max_entry_bytes
        self._feed = max(1, min(_FEED_BYTES, self._cap))
        self._where = f"page {parser.pages}"
        self._key: str | None = None  # the top-level key whose value is being read
        self._keys: set[str] = set()  # the page keys (_PAGE_KEYS) seen so far
        self._level = 0  # nesting depth outside an entry: 1 in the page object
        self._seen_date = False
        self._seen_files = False
        self._started = False
        self._builder: Any = None  # ijson.ObjectBuilder of the entry being read
        self._depth = 0
        self._entry_from = 0  # bytes fed before the slice in which the entry began
        self._fed = 0
        self._quiet_from = 0  # bytes fed when the parser last emitted an event
        self.next_cursor: str | None = None

    def run(self, chunks: Iterable[bytes]) -> Iterator[Entry]:
        events: list[tuple[str, str, Any]] = ijson.sendable_list()
        coroutine = BACKEND.parse_coro(events, use_float=True)
        for chunk in chunks:
            for start in range(0, len(chunk), self._feed):
                piece = chunk[start : start + self._feed]
                before = self._fed
                self._fed += len(piece)
                error = _send(coroutine, piece)
                yield from self._events(events, before)
                if error is not None:  # after the events parsed before it: "at entry N" is exact
                    raise self._malformed(error)
                self._check_sizes()
        error = _send(coroutine, None)  # end of input: an error if the JSON broke off
        yield from self._events(events, self._fed)
        if error is not None:
            raise self._malformed(error)
        if not self._started:
            raise self._malformed("the answer is empty")
        if not self._seen_date:
            raise MalformedResponseError(f"listing.date: missing ({self._where})")
        if not self._seen_files:
            raise MalformedResponseError(f"listing.files: missing ({self._where})")

    def _events(self, events: list[tuple[str, str, Any]], fed_before: int) -> Iterator[Entry]:
        if events:
            self._quiet_from = self._fed
        for prefix, event, value in events:
            if (outcome := self._event(prefix, event, value, fed_before)) is not None:
                yield outcome
        del events[:]

    def _malformed(self, detail: str) -> MalformedResponseError:
        """`detail` is one of this module's fixed texts, never the parser's (see _send)."""
        return MalformedResponseError(
            f"malformed listing: invalid JSON ({detail}) at entry {self._parser.entries}"
            f" ({self._where})"
        )

    def _check_sizes(self) -> None:
        # An entry still open after more than the cap (give or take one slice), or a token the
        # parser has been buffering that long, could be a gigabyte: refuse it.
        if self._builder is not None and self._fed - self._entry_from > self._cap + self._feed:
            raise MalformedResponseError(
                f"listing.files[{self._parser.entries}]: the entry is larger than"
                f" {self._cap} bytes (the per-entry cap; {self._where})"
            )
        if self._fed - self._quiet_from > self._cap + self._feed:
            raise MalformedResponseError(
                f"listing: a JSON value longer than {self._cap} bytes"
                f" at entry {self._parser.entries} (the per-entry cap; {self._where})"
            )

    def _event(self, prefix: str, event: str, value: Any, fed_before: int) -> Entry | None:
        # Places are tracked by nesting level, not by ijson's dotted prefix: a key may itself
        # hold a dot ("files.item") or be empty, and the prefix then names another place.
        if self._builder is not None:
            return self._inside_entry(event, value)
        if not self._started:
            self._started = True
            if event != "start_map":
                raise MalformedResponseError(
                    f"listing: expected a JSON object, got {_event_kind(event, value)}"
                    f" ({self._where})"
                )
            self._level = 1
            return None
        if event in ("end_map", "end_array"):
            self._level -= 1
            return None
        if self._level == 2 and self._key == "files":  # `files` was checked to be a list
            return self._entry_start(event, value, fed_before)
        if self._level == 1:
            if event == "map_key":
                self._top_key(value)
                return None
            self._top_value(event, value)
        if event in ("start_map", "start_array"):
            self._level += 1
        return None  # unknown top-level fields are ignored, as `parse_listing` does

    def _top_key(self, key: str) -> None:
        if key in _PAGE_KEYS:
            # A second copy would stream the files twice or replace a checked date or cursor.
            if key in self._keys:
                raise MalformedResponseError(f"listing.{key}: given twice ({self._where})")
            self._keys.add(key)
        self._key = key

    def _top_value(self, event: str, value: Any) -> None:
        if self._key == "date":
            self._date(event, value)
        elif self._key == "files":
            self._files(event, value)
        elif self._key == "next":
            self._next(event, value)

    def _date(self, event: str, value: Any) -> None:
        self._seen_date = True
        expected = self._parser.expected_date
        if event != "string" or value != expected:
            shown = show_value(value) if event == "string" else _event_kind(event, value)
            raise MalformedResponseError(
                f"listing.date: expected {expected!r}, got {shown} ({self._where})"
            )

    def _files(self, event: str, value: Any) -> None:
        if event == "start_array":
            # Entries are handed on as they are read: a page must have proved its day first,
            # or files of another day would be queued before its `date` came (or did not).
            if not self._seen_date:
                raise MalformedResponseError(
                    f"listing.date: must come before files ({self._where})"
                )
            self._seen_files = True
        else:
            raise MalformedResponseError(
                f"listing.files: expected a list, got {_event_kind(event, value)} ({self._where})"
            )

    def _next(self, event: str, value: Any) -> None:
        if event == "null":
            return
        if event != "string" or not value:
            raise MalformedResponseError(
                f"listing.next: expected a non-empty string cursor, got"
                f" {_event_kind(event, value)} ({self._where})"
            )
        self.next_cursor = value

    def _entry_start(self, event: str, value: Any, fed_before: int) -> Entry | None:
        if event in ("start_map", "start_array"):
            self._builder = ijson.ObjectBuilder()
            self._builder.event(event, value)
            self._depth = 1
            self._entry_from = fed_before
            return None
        scalar = None if event == "null" else value  # a scalar entry: rejected by parse_file
        return self._parser._entry(scalar)

    def _inside_entry(self, event: str, value: Any) -> Entry | None:
        self._builder.event(event, value)
        if event in ("start_map", "start_array"):
            self._depth += 1
        elif event in ("end_map", "end_array"):
            self._depth -= 1
            if self._depth == 0:
                item, self._builder = self._builder.value, None
                return self._parser._entry(item)
        return None


def _send(coroutine: Any, piece: bytes | None) -> str | None:
    """Feed the parser (None: end of input); a fixed description of its error, if any.

    Never the parser's own words: yajl quotes ~30 bytes of input around the fault (as a
    `bytes` repr for invalid UTF-8), the Python backend the offending token, and either may
    be part of a presigned URL or a wrapped key; the message ends up in the batch item.
    """
    try:
        if piece is None:
            coroutine.close()
        else:
            coroutine.send(piece)
    except ijson.JSONError as exc:
        # Only yajl's fixed first words are read, to name an overflow; nothing is copied.
        if str(exc).startswith("parse error:") and "overflow" in str(exc).split("\n", 1)[0]:
            return "a number out of range"
        return "a bad token or byte" if piece is not None else _BROKE_OFF
    return None


def _event_kind(event: str, value: Any) -> str:
    names = {"start_map": "dict", "start_array": "list", "null": "null", "string": "str"}
    return names.get(event) or kind(value)


def collect_listing(date: str, entries: Iterable[Entry]) -> ListingResult:
    """The whole listing, as `parse_listing` returns it: every copy of a duplicate refused."""
    files: list[FileDescriptor] = []
    rejected: list[RejectedFile] = []
    places: dict[str, list[int]] = {}  # entity -> the indexes of its copies
    for index, entry in enumerate(entries):  # one outcome per entry, in order: index = N
        if entry.entity is not None:
            places.setdefault(entry.entity, []).append(index)
        if isinstance(entry, FileDescriptor):
            files.append(entry)
        else:
            rejected.append(entry)
    duplicated = {entity: found for entity, found in places.items() if len(found) > 1}
    if not duplicated:
        return ListingResult(date, files, rejected)
    files = [f for f in files if f.entity not in duplicated]
    rejected = [r for r in rejected if r.entity not in duplicated]
    for entity, found in sorted(duplicated.items(), key=lambda item: item[1][0]):
        where = ", ".join(f"files[{i}]" for i in found)
        reason = f"duplicate entity {entity!r} in the listing ({where}): all copies refused"
        rejected.append(RejectedFile(entity, reason, entity))
    return ListingResult(date, files, rejected)

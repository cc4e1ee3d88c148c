"""Verifying a day's manifest against its pointer and the objects it lists: the one home of
these checks, which `dlpipe batch audit` (audit.py) and `dlpipe handoff show` (handoff.py)
both run. A manifest is read as a consumer following the pointer's key reads it (the key's
current object), and each object by HEAD only: no file is read twice. The JSON Lines file
list and the COPY manifest beside it, which pandas, Spark, Athena and Redshift read instead,
are read whole and must hold exactly the manifest's entries."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from dlpipe.domain.manifest import (
    HEAD_WORKERS,
    DayPointer,
    Manifest,
    ManifestEntry,
    ManifestError,
    copy_manifest_key,
    parse_manifest,
)
from dlpipe.domain.manifest_lists import file_list_record
from dlpipe.services.ops.manifest_ports import ManifestReader


class ManifestProblemError(Exception):
    """The manifest the pointer names is missing, differs from the pointer or does not parse
    (one line, naming its key)."""


def read_manifest(reader: ManifestReader, pointer: DayPointer) -> tuple[Manifest, bytes]:
    """The manifest at the pointer's key, parsed, and its bytes; ManifestProblemError if the
    key's current object is missing (a delete marker over the recorded version included),
    holds other bytes than the pointer's SHA-256 and size, or is no manifest."""
    data = reader.read_object(pointer.key)
    if data is None:
        raise ManifestProblemError(f"manifest {pointer.key} missing")
    if hashlib.sha256(data).hexdigest() != pointer.sha256 or len(data) != pointer.size:
        raise ManifestProblemError(
            f"manifest {pointer.key} does not verify (SHA-256 or size differs)"
        )
    try:
        return parse_manifest(data), data
    except ManifestError as exc:
        raise ManifestProblemError(f"manifest {pointer.key} unreadable: {exc}") from exc


def version_problems(reader: ManifestReader, pointer: DayPointer) -> list[str]:
    """The key's current version is the one the pointer names: the same bytes written again at
    another version (the named one deleted, the manifest re-created) are not the object the
    pointer names, and a consumer pinning the version would find nothing."""
    current = reader.head(pointer.key)
    if pointer.version_id is None or (
        current is not None and current.version_id == pointer.version_id
    ):
        return []
    found = current.version_id if current else None
    return [
        f"manifest {pointer.key} is version {found}, latest.json names version"
        f" {pointer.version_id} (deleted or re-created)"
    ]


def object_problems(reader: ManifestReader, entries: tuple[ManifestEntry, ...]) -> Iterator[str]:
    """At most one line per entry whose object is missing, at another version, or of another
    size or SHA-256 (HEADs on HEAD_WORKERS threads)."""
    with ThreadPoolExecutor(HEAD_WORKERS) as pool:
        for entry, found in zip(
            entries, pool.map(lambda e: reader.head(e.key), entries), strict=True
        ):
            if found is None:
                yield f"object {entry.key} missing"
            elif found.version_id != entry.version_id:
                yield (
                    f"object {entry.key} changed: version {found.version_id},"
                    f" the manifest lists {entry.version_id}"
                )
            elif found.size != entry.size or found.sha256 != entry.sha256:
                yield f"object {entry.key} differs from its manifest entry (size or SHA-256)"


def versioned_object_problems(
    reader: ManifestReader, entries: tuple[ManifestEntry, ...]
) -> Iterator[str]:
    """At most one line per entry whose object is not there at the version the entry names,
    or is there of another size or SHA-256 (versioned HEADs on HEAD_WORKERS threads): what a
    superseded manifest must still hold, its keys' current versions being a later revision's."""
    with ThreadPoolExecutor(HEAD_WORKERS) as pool:
        found = pool.map(lambda e: reader.head(e.key, e.version_id), entries)
        for entry, stored in zip(entries, found, strict=True):
            if stored is None:
                yield f"object {entry.key} version {entry.version_id} missing"
            elif stored.size != entry.size or stored.sha256 != entry.sha256:
                yield (
                    f"object {entry.key} version {entry.version_id} differs from its manifest"
                    " entry (size or SHA-256)"
                )


# At most this many lines name a list's mismatches; one more line counts the rest.
LIST_PROBLEMS_SHOWN = 10


def list_problems(reader: ManifestReader, manifest: Manifest) -> Iterator[str]:
    """The two file lists beside the manifest hold exactly its published entries: each line
    of the JSON Lines file list is one entry's FILE_LIST_KEYS, each entry once and nothing
    else; the COPY manifest is `{"entries": [...]}` with each entry's URL and content_length
    once and nothing else, and there is one only for a day with files. A manifest that names
    no file list (written before there were lists) has none to check."""
    if manifest.file_list is None:
        return
    head = manifest.header
    entries = manifest.entries
    listed = _named_key(manifest.file_list)
    data = reader.read_object(listed)
    if data is None:
        yield f"file list {listed} missing"
    else:
        # Line by line over the one copy of its bytes: a day of 100,000 files is ~28 MB.
        records = ((f"line {n}", _json_or_none(line)) for n, line in enumerate(io.BytesIO(data), 1))
        check = _ListCheck(
            f"file list {listed}", entries, file_list_record, "file_id", lambda e: e.file_id
        )
        yield from check.problems(records)
        del data
    copy_key = copy_manifest_key(head.feed, head.date, head.batch_id, head.status)
    if not entries:
        if reader.head(copy_key) is not None:
            yield f"COPY manifest {copy_key} exists for a day without files"
        return
    copy = reader.read_object(copy_key)
    if copy is None:
        yield f"COPY manifest {copy_key} missing"
        return
    doc = _json_or_none(copy)
    del copy
    if not isinstance(doc, dict) or set(doc) != {"entries"} or not isinstance(doc["entries"], list):
        yield f'COPY manifest {copy_key} is not {{"entries": [...]}}'
        return
    items = ((f"entry {n}", item) for n, item in enumerate(doc["entries"], 1))
    copy_check = _ListCheck(
        f"COPY manifest {copy_key}", entries, ManifestEntry.copy_entry, "url", lambda e: e.url
    )
    yield from copy_check.problems(items)


def _named_key(named: str) -> str:
    """A key in the manifests' bucket, from the manifest's key or S3 URI."""
    return named.removeprefix("s3://").partition("/")[2] if named.startswith("s3://") else named


def _json_or_none(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


@dataclass
class _ListCheck:
    """One list beside the manifest checked item by item against the manifest's entries: an
    item is an entry's `expected` record, found by its `id_name` (`id_of` the entry)."""

    what: str
    entries: tuple[ManifestEntry, ...]
    expected: Callable[[ManifestEntry], dict[str, Any]]
    id_name: str
    id_of: Callable[[ManifestEntry], str]
    seen: set[int] = field(default_factory=set)

    def problems(self, found: Iterable[tuple[str, Any]]) -> Iterator[str]:
        """A line per item that is not an entry's record or repeats one, then one for the
        entries the list lacks; at most LIST_PROBLEMS_SHOWN, and a line counting the rest."""
        index = {self.id_of(entry): n for n, entry in enumerate(self.entries)}
        problems = 0
        for where, item in found:
            problem = self._item_problem(item, index)
            if problem is None:
                continue
            problems += 1
            if problems <= LIST_PROBLEMS_SHOWN:
                yield f"{self.what} {where}: {problem}"
        if problems > LIST_PROBLEMS_SHOWN:
            yield f"{self.what}: {problems - LIST_PROBLEMS_SHOWN} more item(s) differ"
        lacking = [self.id_of(e) for n, e in enumerate(self.entries) if n not in self.seen]
        if lacking:
            more = " ..." if len(lacking) > 1 else ""
            yield (
                f"{self.what} lacks {len(lacking)} of the manifest's {len(self.entries)}"
                f" entries ({self.id_name} {lacking[0]}{more})"
            )

    def _item_problem(self, item: Any, index: dict[str, int]) -> str | None:
        """Why one item is not the record of the manifest's entry it names (None: it is)."""
        if not isinstance(item, dict):
            return "not a JSON object"
        named = item.get(self.id_name)
        n = index.get(str(named))
        if n is None:
            return f"{self.id_name} {named!r} is not one of the manifest's entries"
        if n in self.seen:
            return f"{self.id_name} {named} listed again"
        self.seen.add(n)
        want = self.expected(self.entries[n])
        if item == want:
            return None
        fields = ", ".join(sorted(k for k in {*item, *want} if item.get(k) != want.get(k)))
        return f"{self.id_name} {named} differs from the manifest's entry ({fields})"

"""Verifying a day's manifest against its pointer and the objects it lists: the one home of
these checks, which `dlpipe batch audit` (audit.py) and `dlpipe handoff show` (handoff.py)
both run. A manifest is read as a consumer following the pointer's key reads it (the key's
current object), and each object by HEAD only: no file is read twice."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from dlpipe.domain.manifest import (
    HEAD_WORKERS,
    DayPointer,
    Manifest,
    ManifestEntry,
    ManifestError,
    parse_manifest,
)
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

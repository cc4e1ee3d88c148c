"""`dlpipe batch audit` of a restated day: every revision's manifest, not only the latest.

The day's pointer names its latest revision's manifest, which audit.py checks as any day's.
Each revision's manifest names the one it supersedes (key and version), back to the day's
first batch's; each of those is checked here against what it names, as a consumer that loaded
it (or reloads it to compare) reads it: the manifest at that version is there and is the batch
its superseding revision revises, its bytes are the ones its batch's hand-off event named
(version and SHA-256), every entry's object is there **at the version the entry names** with
its size and SHA-256 (versioned HEADs: the key's current version may be a later revision's),
its JSON Lines file list and COPY manifest hold exactly its entries, and its counts are its
batch item's. Then every completed revision batch of the day must be on that chain (one that
is not is superseded by nothing the pointer leads to). Each problem is one line naming the
revision and its batch: `revision 1 (batch-...): object K version V missing`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dlpipe.domain.handoff_events import HandoffEvent
from dlpipe.domain.manifest import Manifest, ManifestError, manifest_key, parse_manifest
from dlpipe.domain.model import Batch, BatchStatus
from dlpipe.services.ops.feed_filter import record_feed
from dlpipe.services.ops.manifest_check import list_problems, versioned_object_problems
from dlpipe.services.ops.manifest_ports import ManifestReader


@dataclass
class RevisionCheck:
    """One superseded manifest of the day (or a completed revision off the chain): which
    revision and batch, the manifest and version checked, its entries and what is wrong."""

    revision: int
    batch_id: str
    manifest_key: str | None
    version_id: str | None
    entries: int | None = None
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """`revision 1 (batch-...): <problem>`, one per problem."""
        return [f"revision {self.revision} ({self.batch_id}): {p}" for p in self.problems]

    def to_dict(self) -> dict[str, Any]:
        """Stable keys for `--json`."""
        return {
            "revision": self.revision,
            "batch": self.batch_id,
            "manifest": self.manifest_key,
            "version_id": self.version_id,
            "entries": self.entries,
            "problems": len(self.problems),
            "problem_lines": self.lines(),
        }


def revision_checks(
    reader: ManifestReader, day: Sequence[Batch], latest: Manifest
) -> list[RevisionCheck]:
    """The manifests `latest` (the pointer's) supersedes, newest first, each checked (module
    docstring); then, when `latest` is a revision, a check for each completed revision batch
    of `day` (one feed's) that is on no revision's chain (a pointer at an ordinary manifest
    while a revision completed is audit.py's `latest.json names batch ...` problem)."""
    by_id = {b.batch_id: b for b in day}
    checks: list[RevisionCheck] = []
    on_chain = {latest.header.batch_id}
    manifest: Manifest | None = latest
    while manifest is not None and (revision := manifest.header.revision) is not None:
        superseding = by_id.get(manifest.header.batch_id)
        revised = None if superseding is None else superseding.revises
        known = None if revised is None else by_id.get(revised)
        check = RevisionCheck(
            revision.number - 1 if known is None else known.revision or 1,
            revised or "?",
            revision.supersedes_key,
            revision.supersedes_version_id,
        )
        checks.append(check)
        if revised is None or revised in on_chain or revised not in by_id:
            check.problems.append(_unfollowed(revision.number, revised, on_chain))
            break
        on_chain.add(revised)
        manifest = _superseded(reader, check, by_id[revised])
    for batch in day if latest.header.revision is not None else ():
        if batch.revision is None or batch.status is not BatchStatus.COMPLETED:
            continue
        if batch.batch_id not in on_chain:
            key = manifest_key(
                record_feed(batch), batch.polling_date, batch.batch_id, str(batch.status)
            )
            off = RevisionCheck(batch.revision, batch.batch_id, key, None)
            off.problems.append("completed, but latest.json's chain of revisions skips it")
            checks.append(off)
    return checks


def _unfollowed(number: int, revised: str | None, on_chain: set[str]) -> str:
    """Why the chain stops at revision `number`: its batch names no batch it revises, one
    gone from the table, or one already on the chain."""
    if revised is None:
        return f"revision {number}'s batch names no batch it revises"
    if revised in on_chain:
        return f"revision {number} revises {revised}, already on the chain (a loop)"
    return f"revision {number} revises {revised}, which is not in the batches table"


def _superseded(reader: ManifestReader, check: RevisionCheck, batch: Batch) -> Manifest | None:
    """The superseded manifest `check` names, read at its version and checked against
    `batch` (the revised batch); None when it cannot be read (nothing further to follow)."""
    key, version = str(check.manifest_key), check.version_id
    status = str(batch.status)
    expected = manifest_key(record_feed(batch), batch.polling_date, batch.batch_id, status)
    if key != expected:
        check.problems.append(
            f"the superseded manifest is {key}, not {batch.batch_id}'s {expected}"
        )
    data = reader.read_object(key, version)
    if data is None:
        check.problems.append(f"manifest {key} version {version} missing")
        return None
    check.problems += _event_problems(batch, key, version, data)
    try:
        manifest = parse_manifest(data)
    except ManifestError as exc:
        check.problems.append(f"manifest {key} version {version} unreadable: {exc}")
        return None
    head = manifest.header
    if head.batch_id != batch.batch_id:
        check.problems.append(f"manifest {key} is batch {head.batch_id}'s, not {batch.batch_id}'s")
    check.entries = len(manifest.entries)
    check.problems += versioned_object_problems(reader, manifest.entries)
    check.problems += list_problems(reader, manifest)
    recorded = (batch.expected, batch.completed, batch.unsuccessful)
    listed = (head.expected, head.completed, head.failed + head.error)
    if recorded != listed:
        check.problems.append(
            f"manifest counts {listed} (expected, completed, unsuccessful) differ from"
            f" the batch's {recorded}"
        )
    return manifest


def _event_problems(batch: Batch, key: str, version: str | None, data: bytes) -> list[str]:
    """The superseded manifest's bytes are those the batch's hand-off event named (when that
    event names this key): its version and SHA-256."""
    if not batch.handoff_event:
        return []
    try:
        named = HandoffEvent.from_dict(json.loads(batch.handoff_event)).detail.get("manifest")
    except (ValueError, KeyError, TypeError):
        return [f"its {batch.handoff_type} event as recorded is unreadable"]
    if not named or str(named.get("uri", "")).removeprefix("s3://").partition("/")[2] != key:
        return []
    sha256 = hashlib.sha256(data).hexdigest()
    if named.get("version_id") == version and named.get("sha256") == sha256:
        return []
    return [
        f"manifest {key} version {version} is not what the {batch.handoff_type} event sent"
        f" named (version {named.get('version_id')}, its SHA-256)"
    ]

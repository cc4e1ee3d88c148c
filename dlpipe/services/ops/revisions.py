"""A day's revisions as the operator screens show them (`dlpipe status`, `batch show`, `jobs
list`, the day page): which batch is a revision of the day (docs/ARCHITECTURE.md,
"Restatements: a day's revisions"), the batch it revises, when it was created, how many files
it changed, added and withdrew, and which later revision replaced a batch.

Cheap: the facts are the batch items' (Revision, Revises, CreatedAt), from the PollingDateIndex
query the screen makes anyway, and the counts those of the `Day Revised` event the item keeps
as first sent (HandoffEvent): no job is read. A revision that ended without that event
(failed, timed out, its hand-off withheld) has its counts in its manifest alone: one GET of
it, only for the batches the caller names and only with a destination bucket configured. A
running revision has no counts yet (its manifest counts them when it ends).

The files a revision withdrew stay completed in the earlier batches' BatchIndex partitions
(WithdrawnBy names the revision): `withdrawn_files` reads those partitions' index items, for
one revision batch's file list only."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlpipe.domain.errors import RecordsError
from dlpipe.domain.handoff_events import REVISED_COUNTS, HandoffEvent
from dlpipe.domain.job_row import JobRow
from dlpipe.domain.manifest import ManifestError, manifest_key, parse_manifest
from dlpipe.domain.model import Batch, JobStatus
from dlpipe.log import get_logger
from dlpipe.services.ops.feed_filter import record_feed
from dlpipe.services.ops.manifest_ports import ManifestReader

log = get_logger(component="ops")
EVENT, MANIFEST = "event", "manifest"  # where a revision's counts were read


def counts_text(counts: Mapping[str, int] | None, *, ended: bool) -> str:
    """`1 changed, 1 added, 1 withdrawn`; without counts, why: a running revision's come
    when it ends (its manifest counts them), an ended one's were not found."""
    if counts is not None:
        return ", ".join(f"{counts.get(k, 0)} {k}" for k in REVISED_COUNTS)
    if ended:
        return "changes not counted: no Day Revised event, no manifest read"
    return "changes counted when it ends"


@dataclass(frozen=True)
class RevisionFacts:
    """One revision batch: its number, the batch it revises, when it was created and (once
    known) its changed, added and withdrawn files' counts, and where those were read."""

    batch_id: str
    revision: int
    revises: str
    created_at: str
    counts: Mapping[str, int] | None = None
    counts_from: str | None = None  # EVENT, MANIFEST, or None: not known (yet)

    def tally(self, *, ended: bool) -> str:
        """counts_text of its counts (`ended`: the batch has ended)."""
        return counts_text(self.counts, ended=ended)

    def to_dict(self) -> dict[str, Any]:
        """Stable keys for `--json`."""
        return {
            "batch_id": self.batch_id,
            "revision": self.revision,
            "revises": self.revises,
            "created_at": self.created_at,
            "counts": None if self.counts is None else dict(self.counts),
            "counts_from": self.counts_from,
        }


@dataclass(frozen=True)
class DayRevisions:
    """The revisions among a day's batches: each revision batch's facts, and for each batch
    a revision replaced, that revision's BatchID."""

    facts: Mapping[str, RevisionFacts] = field(default_factory=dict)
    revised_by: Mapping[str, str] = field(default_factory=dict)

    def of(self, batch_id: str) -> RevisionFacts | None:
        """The facts of `batch_id` if it is a revision batch."""
        return self.facts.get(batch_id)

    def by(self, batch_id: str) -> RevisionFacts | None:
        """The revision that replaced `batch_id`, if one did."""
        revised_by = self.revised_by.get(batch_id)
        return None if revised_by is None else self.facts.get(revised_by)


def day_revisions(
    batches: Sequence[Batch],
    manifests: Callable[[], ManifestReader | None] | None = None,
    *,
    read: Collection[str] = (),
) -> DayRevisions:
    """The revisions of a day's `batches` (any feeds': a revision names its own batch). The
    counts come from each revision's recorded event; for one that ended without it and whose
    BatchID is in `read`, from its manifest (`manifests`: the reader, None when none is
    configured), one GET each."""
    facts: dict[str, RevisionFacts] = {}
    revised_by: dict[str, str] = {}
    for batch in batches:
        if batch.revision is None or batch.revises is None:
            continue
        revised_by[batch.revises] = batch.batch_id
        counts, source = event_counts(batch), EVENT
        if counts is None and manifests is not None and batch.batch_id in read:
            counts, source = manifest_counts(manifests, batch), MANIFEST
        facts[batch.batch_id] = RevisionFacts(
            batch.batch_id,
            batch.revision,
            batch.revises,
            batch.created_at,
            counts,
            None if counts is None else source,
        )
    return DayRevisions(facts, revised_by)


def latest_revisions(batches: Sequence[Batch]) -> set[str]:
    """The BatchID of each feed's latest batch of the day (`batches` oldest first) that is a
    revision: the one whose counts a day's screen reads from its manifest if need be."""
    latest: dict[str, Batch] = {}
    for batch in batches:
        latest[record_feed(batch)] = batch
    return {b.batch_id for b in latest.values() if b.revision is not None}


def event_counts(batch: Batch) -> dict[str, int] | None:
    """The changed, added and withdrawn counts of the `Day Revised` event the batch item keeps
    (None: no such event recorded, or one that does not say)."""
    if not batch.handoff_event:
        return None
    try:
        detail = HandoffEvent.from_dict(json.loads(batch.handoff_event)).detail
        if detail.get("revision") is None:
            return None
        counts = detail["counts"]
        return {name: int(counts[name]) for name in REVISED_COUNTS}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def manifest_counts(
    manifests: Callable[[], ManifestReader | None], batch: Batch
) -> dict[str, int] | None:
    """The counts of an ended revision's manifest (one GET of the key its status gives), or
    None: still running, no bucket configured, no manifest, or one that does not read."""
    if not batch.is_terminal:
        return None
    try:
        reader = manifests()
        if reader is None:
            return None
        key = manifest_key(
            record_feed(batch), batch.polling_date, batch.batch_id, str(batch.status)
        )
        data = reader.read_object(key)
        revision = None if data is None else parse_manifest(data).header.revision
    except (ManifestError, RecordsError) as exc:
        log.warning("ops.revision_manifest_unread", batch_id=batch.batch_id, error=str(exc))
        return None
    if revision is None:
        return None
    counts = revision.counts()
    return {name: counts[name] for name in REVISED_COUNTS}


@dataclass(frozen=True)
class WithdrawnFile:
    """A file a revision withdrew: its FileID, the batch whose partition keeps its completed
    job, and the object it published (kept)."""

    file_id: str
    batch_id: str
    destination_key: str | None
    sha256: str | None

    def to_dict(self) -> dict[str, Any]:
        """Stable keys for `--json`."""
        return {
            "file_id": self.file_id,
            "batch_id": self.batch_id,
            "destination_key": self.destination_key,
            "sha256": self.sha256,
        }


def withdrawn_files(
    rows: Callable[[str, JobStatus], Iterator[JobRow]], revision: Batch, day: Sequence[Batch]
) -> list[WithdrawnFile]:
    """The files the revision batch withdrew, FileID order (index items only; the day's
    earlier completed partitions, as the revision's manifest reads them)."""
    found: list[WithdrawnFile] = []
    feed = record_feed(revision)
    for batch in day:
        if record_feed(batch) != feed or batch.created_at >= revision.created_at:
            continue
        for row in rows(batch.batch_id, JobStatus.COMPLETED):
            if row.withdrawn_by == revision.batch_id:
                found.append(
                    WithdrawnFile(row.file_id, batch.batch_id, row.destination_key, row.sha256)
                )
    return sorted(found, key=lambda f: f.file_id)

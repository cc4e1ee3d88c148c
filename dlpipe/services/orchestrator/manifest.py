"""write-manifest: the end of a batch handed on, as one immutable manifest object of the day's
published files and a pointer naming the day's current manifest (docs/ARCHITECTURE.md,
"Hand-off: the day manifest"). The manifest names every file the batch expected: the day's
published files, and the batch's others (failed, error, pending) with their error codes.

A revision batch's (Batch.revision) lists the day's current files only: a file some revision
withdrew (WithdrawnBy) is left out, and those this one withdrew are named apart. Each entry is
marked: changed or added when its job sits in this batch's partition with RevisedAs (it was
moved here), else unchanged. It supersedes the manifest of the batch it revises, named by key
and that object's current version (read, never recorded, so a replay renders the same)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Protocol

from dlpipe.domain.job_row import JobRow
from dlpipe.domain.manifest import (
    DayPointer,
    ManifestHeader,
    ManifestRef,
    PublishedFile,
    manifest_key,
    supersedes,
)
from dlpipe.domain.manifest_lists import PENDING, Revision, UnpublishedFile, WithdrawnFile
from dlpipe.domain.model import Batch, BatchStatus, JobStatus
from dlpipe.domain.outcome import error_code
from dlpipe.domain.restatement import Revised
from dlpipe.domain.statuses import PENDING_JOB_STATUSES, UNSUCCESSFUL_JOB_STATUSES
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.feed_day import feed_batches
from dlpipe.services.orchestrator.manifest_ports import ManifestStore
from dlpipe.services.orchestrator.store_ports import FlowStores, JobStore

log = get_logger(component="orchestrator")


class ManifestFlow(FlowStores, Protocol):
    """What write-manifest reads of the flow: the stores and the manifests' bucket (None: none)."""

    @property
    def manifests(self) -> ManifestStore | None: ...


# Pointer writes are compare-and-swap on its ETag: a lost race re-reads and decides again.
POINTER_ATTEMPTS = 5


class PointerContendedError(RuntimeError):
    """The day's pointer kept changing under this write (transient: the step is retried)."""


def write_manifest(flow: ManifestFlow, batch_id: str) -> ManifestRef | None:
    """The ended batch's manifest (None when no destination bucket is wired) and the day's
    pointer, if this manifest is now the day's current one."""
    if flow.manifests is None:
        return None
    batch = flow.batches.require(batch_id)
    day = _day_batches(flow, batch)
    unpublished = _unpublished(flow.jobs, batch_id)
    if batch.revision is None:
        ref = flow.manifests.write(header_of(batch), _published(flow.jobs, day), unpublished)
    else:
        header = header_of(batch, _revision(flow, flow.manifests, batch))
        withdrawn: list[WithdrawnFile] = []  # filled as the entries are read, read after them
        files = _current(flow.jobs, day, batch, withdrawn)
        ref = flow.manifests.write(header, files, unpublished, _after(files, withdrawn))
    _point(flow.manifests, batch, ref)
    log.info("batch.manifest_written", batch_id=batch_id, key=ref.key, entries=ref.entries)
    return ref


def header_of(batch: Batch, revision: Revision | None = None) -> ManifestHeader:
    """The manifest's header from the ended batch's item (stable once it has ended); a
    revision's counts are then counted from what its manifest lists (manifest_lists.counted)."""
    return ManifestHeader(
        batch.feed, batch.polling_date, batch.batch_id, str(batch.status),
        batch.expected, batch.completed, batch.failed_count or 0, batch.error_count or 0,
        batch.created_at, _finished_at(batch),
        batch.outcome.cause if batch.outcome else batch.error_message, revision,
    )  # fmt: skip


def _revision(flow: ManifestFlow, store: ManifestStore, batch: Batch) -> Revision:
    """The revision's number and the manifest it supersedes: the revised batch's, at the key
    its status gives and at that object's current version (None: there is none)."""
    if batch.revision is None or batch.revises is None:
        raise ValueError(f"batch {batch.batch_id} is no revision of another batch")
    revised = flow.batches.require(batch.revises)
    key = manifest_key(revised.feed, revised.polling_date, revised.batch_id, str(revised.status))
    found = store.head(key)
    if found is None:
        log.error("manifest.superseded_missing", batch_id=batch.batch_id, key=key)
    return Revision(batch.revision, key, None if found is None else found.version_id)


def _finished_at(batch: Batch) -> str:
    # A timed-out batch's UpdatedAt moves with each later check's counts, so its end is the
    # TimeoutAt it recorded; the item keeps that after a repair, when UpdatedAt (not moved
    # once the status is completed or failed) is the end.
    if batch.status is BatchStatus.TIMEOUT and batch.timeout_at:
        return batch.timeout_at
    return batch.updated_at


def _day_batches(flow: ManifestFlow, batch: Batch) -> list[Batch]:
    """This batch and the feed's earlier batches of the date: a rerun never adopts completed
    jobs, so the day's completed files sit in these partitions, each FileID in one of them.
    Later batches are left out, so a replay renders what the first attempt did."""
    same_feed = feed_batches(flow.batches, batch.polling_date, batch.feed)
    earlier = [b for b in same_feed if b.created_at < batch.created_at]
    return [*earlier, batch]


def _published(jobs: JobStore, day: list[Batch]) -> Iterator[PublishedFile]:
    """The day's completed files, from BatchIndex's items alone (it projects what an entry
    names: no job is fetched)."""
    for batch in day:
        for row in jobs.rows_by_batch(batch.batch_id, JobStatus.COMPLETED):
            published = _file(batch, row)
            if published is not None:
                yield published


def _file(batch: Batch, row: JobRow) -> PublishedFile | None:
    key, size, sha256 = row.destination_key, row.byte_count, row.sha256
    if row.entity is None or key is None or sha256 is None or size is None:
        log.error("manifest.job_incomplete", batch_id=batch.batch_id, file_id=row.file_id)
        return None
    return PublishedFile(row.file_id, row.entity, key, size, sha256)


def _current(
    jobs: JobStore, day: list[Batch], revision: Batch, withdrawn: list[WithdrawnFile]
) -> Iterator[PublishedFile]:
    """A revision's entries: the day's completed files no revision withdrew, each marked; the
    files this revision withdrew (still completed in their earlier batch's partition, their
    objects kept, WithdrawnBy naming it) go to `withdrawn` as they are read, so each partition
    is read once."""
    for batch in day:
        for row in jobs.rows_by_batch(batch.batch_id, JobStatus.COMPLETED):
            if row.withdrawn_by == revision.batch_id and batch.batch_id != revision.batch_id:
                key, sha256 = row.destination_key or "", row.sha256 or ""
                withdrawn.append(WithdrawnFile(row.file_id, row.entity or "", key, sha256))
            published = None if row.withdrawn_by else _file(batch, row)
            if published is None:
                continue
            mark = _mark(row) if batch.batch_id == revision.batch_id else Revised.UNCHANGED
            moved = mark is not Revised.UNCHANGED  # what a changed or added file replaced
            yield replace(
                published,
                revised=mark,
                previous_version_id=row.previous_version_id if moved else None,
                previous_sha256=row.previous_sha256 if moved else None,
            )


def _after(
    files: Iterator[PublishedFile], withdrawn: list[WithdrawnFile]
) -> Iterator[WithdrawnFile]:
    """`withdrawn`, once `files` has been read to its end (the store reads the entries first:
    reading them here first, if it has not, keeps the list whole whatever its order)."""
    for _ in files:
        raise RuntimeError("the manifest store read the withdrawn files before the entries")
    yield from withdrawn


def _mark(row: JobRow) -> Revised:
    """What the revision that moved the job here found it (RevisedAs): changed or added; a
    job of its partition without one (adopted, say) is unchanged."""
    if row.revised_as in (Revised.CHANGED, Revised.ADDED):
        return Revised(row.revised_as)
    if row.revised_as is not None:
        log.error("manifest.unknown_mark", file_id=row.file_id, revised_as=row.revised_as)
    return Revised.UNCHANGED


def _unpublished(jobs: JobStore, batch_id: str) -> Iterator[UnpublishedFile]:
    """The batch's files that ended failed or error, then those that never ended (pending),
    each with its error code (a pending job's last one, if it has one)."""
    for status in (*UNSUCCESSFUL_JOB_STATUSES, *PENDING_JOB_STATUSES):
        unsuccessful = status in UNSUCCESSFUL_JOB_STATUSES
        for row in jobs.rows_by_batch(batch_id, status):
            message = row.error_message
            code = error_code(message) if unsuccessful or message else None
            label = str(status) if unsuccessful else PENDING
            yield UnpublishedFile(row.file_id, row.entity or "", label, code)


def _point(store: ManifestStore, batch: Batch, ref: ManifestRef) -> None:
    header = header_of(batch)
    new = DayPointer(
        header.feed, header.date, header.batch_id, header.status, header.created_at,
        header.finished_at, ref.key, ref.version_id, ref.sha256, ref.size,
        ref.file_list_key, ref.copy_key,
    )  # fmt: skip
    for _ in range(POINTER_ATTEMPTS):
        found = store.read_pointer(header.feed, header.date)
        current, etag = found if found else (None, None)
        if not supersedes(new, current) and not _recreated(new, current):
            return
        if store.put_pointer(new, etag=etag):
            log.info("batch.manifest_pointed", batch_id=batch.batch_id, key=ref.key)
            return
    raise PointerContendedError(f"the pointer of {header.feed} {header.date} kept changing")


def _recreated(new: DayPointer, current: DayPointer | None) -> bool:
    """The pointer names this very manifest at a version that is gone (its object was deleted
    and this write made it again): it follows the object, so the two always agree."""
    return current is not None and current.key == new.key and current.version_id != new.version_id

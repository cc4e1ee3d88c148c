"""Writing one chunk's jobs: a new job is put and sent; a FileID already taken is a replay of
this entry (sent again while available), another batch's job (adopted by a rerun) or a later
copy of an entity listed twice (refused: fanout.py, "Duplicates"); a refused entry becomes an
error job or a line on the batch."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import NamedTuple, Protocol

from dlpipe.domain.errors import (
    BatchTransitionRefusedError,
    JobExistsError,
    ListedTwiceError,
    NotFoundError,
    RequeueRefusedError,
)
from dlpipe.domain.listing import FileDescriptor, RejectedFile
from dlpipe.domain.model import FileJob, JobStatus, listed_index
from dlpipe.domain.restatement import DayFile, ListedFile, Revised, changed_content
from dlpipe.domain.transitions import may_adopt
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.fanout import Entry, ListingPosition, in_parallel, refusal
from dlpipe.services.orchestrator.jobs_from_listing import error_job, job_from_descriptor
from dlpipe.services.orchestrator.store_ports import FlowStores

log = get_logger(component="orchestrator")


class PlacingFlow(FlowStores, Protocol):
    """What writing a chunk's jobs reads of the flow: the stores, and the earlier batches this
    invocation already marked adopted, with the lock that guards them."""

    @property
    def adopted_from(self) -> set[str]: ...

    @property
    def adopted_lock(self) -> threading.Lock: ...


def write_jobs(
    flow: PlacingFlow, batch_id: str, chunk: list[Entry], start: int, position: ListingPosition
) -> tuple[list[FileJob], int]:
    """Write the chunk's jobs (WRITE_WORKERS at a time; entry i of the chunk is entry
    start + i of the day); the jobs to send, and how many were there with nothing to send."""
    now_ms = flow.clock.now_ms()
    # Every copy of an entity listed twice is refused. Copies within this chunk are found
    # here, before anything is written or sent; a copy of an entity an earlier chunk wrote
    # is found by its put (fanout.py, "Duplicates").
    places: dict[str, list[int]] = {}  # entity -> its entries in this chunk
    for index, entry in enumerate(chunk, start):
        if entry.entity is not None:
            places.setdefault(entry.entity, []).append(index)
    duplicated = {entity: found for entity, found in places.items() if len(found) > 1}
    jobs = [
        job_from_descriptor(entry, batch_id, now_ms, index, feed=position.feed)
        for index, entry in enumerate(chunk, start)
        if isinstance(entry, FileDescriptor) and entry.entity not in duplicated
    ]
    if position.revision is not None:
        # A revision batch's new jobs are the day's added files (restatement.py).
        added = str(Revised.ADDED)
        jobs = [replace(j, revision=position.revision, revised_as=added) for j in jobs]
    placed = in_parallel(lambda job: _place_job(flow, job, position.revision), jobs)
    to_send: list[FileJob] = []
    present = 0
    for job, outcome in zip(jobs, placed, strict=True):
        if outcome.duplicate_of is not None and job.listing_index is not None:
            line = _later_copy(job.entity, [outcome.duplicate_of, job.listing_index])
            _refuse(flow, batch_id, position, line)
            continue
        position.expected.add(job.file_id)
        if outcome.send:
            to_send.append(job)
        else:
            present += 1
    refused: list[tuple[int, RejectedFile]] = [
        (found[0], _all_copies_refused(entity, found)) for entity, found in duplicated.items()
    ]
    refused += [
        (index, entry)
        for index, entry in enumerate(chunk, start)
        if isinstance(entry, RejectedFile) and entry.entity not in duplicated
    ]
    for index, rejected in sorted(refused, key=lambda item: item[0]):
        _record_refusal(flow, batch_id, position, rejected, index=index, now_ms=now_ms)
    return to_send, present


def _refuse(flow: PlacingFlow, batch_id: str, position: ListingPosition, line: str) -> None:
    log.warning("batch.entry_rejected", batch_id=batch_id, problem=line)
    position.refusals.add(line)


def _record_refusal(
    flow: PlacingFlow,
    batch_id: str,
    position: ListingPosition,
    rejected: RejectedFile,
    *,
    index: int,
    now_ms: int,
) -> None:
    """An error job for a refused entry (counted as expected), or a line on the batch when
    it has no safe FileID or its FileID belongs to another job."""
    job = error_job(rejected, batch_id, position.date, now_ms, index, feed=position.feed)
    if job is None:
        _refuse(flow, batch_id, position, refusal(rejected))
        return
    try:
        flow.jobs.create(job)
    except JobExistsError as exists:
        current = exists.current
        if current is None or current.batch_id != batch_id:
            # Another batch's job: this refusal is not on record; the batch names it.
            _refuse(flow, batch_id, position, refusal(rejected))
            return
        if current.listing_index is not None and current.listing_index != index:
            if current.status is not JobStatus.ERROR:
                line = _later_copy(job.entity, [current.listing_index, index])
                _refuse(flow, batch_id, position, line)
            return  # (or a later copy of an entity refused already: its error job stands)
        if current.status is not JobStatus.ERROR:
            _refuse(flow, batch_id, position, refusal(rejected))
            return
    position.expected.add(job.file_id)  # written now, or by a replay of this entry


def _place_job(flow: PlacingFlow, job: FileJob, revision: int | None = None) -> _Placed:
    """Write the job, or find why its FileID is taken: a replay of this entry (send it
    again while available), another batch's job (adopt it; or, in a revision batch, revise
    it when the listing restates it), or a duplicate entry."""
    try:
        flow.jobs.create(job)
    except JobExistsError as exists:
        current = exists.current
        if current is not None and current.batch_id == job.batch_id:
            if current.listing_index not in (None, job.listing_index):
                return _Placed(send=False, duplicate_of=current.listing_index)
            # Replay after a crash between the put and the send: send again (at-least-once).
            return _Placed(send=current.status is JobStatus.AVAILABLE)
        if revision is not None and current is not None:
            revised = _revise(flow, job, current, revision)
            if revised is not None:
                return revised
        if _adopt(flow, job, current):
            return _Placed(send=True)
        return _listed_again(flow, job)
    return _Placed(send=True)


def _listed_again(flow: PlacingFlow, job: FileJob) -> _Placed:
    """Another batch's job this rerun could not adopt (completed, or held) is marked as
    named by this entry, so that a later copy of the entity is refused as on a fresh day."""
    if job.listing_index is None:
        return _Placed(send=False)
    try:
        flow.jobs.mark_listed(job.file_id, job.batch_id, job.listing_index)
    except ListedTwiceError as exc:
        marked = exc.current.listed_by if isinstance(exc.current, FileJob) else None
        earlier = listed_index(marked, job.batch_id)
        if earlier is not None:
            return _Placed(send=False, duplicate_of=earlier)
    return _Placed(send=False)  # (a job gone meanwhile is nothing to send either)


def _revise(flow: PlacingFlow, job: FileJob, current: FileJob, revision: int) -> _Placed | None:
    """A completed job the listing restates (other contents, or a file withdrawn before and
    listed again) given back to the queue in this revision batch; None when it is not
    restated (it stays where it is, as a rerun leaves a completed job)."""
    if current.status is not JobStatus.COMPLETED:
        return None
    if current.withdrawn_by is not None:
        kind = Revised.ADDED
    elif changed_content(_listed(job), _published(current)):
        kind = Revised.CHANGED
    else:
        return None
    try:
        flow.jobs.revise(current, job, revision=revision, revised_as=str(kind))
    except RequeueRefusedError as refused:
        # Another run of this revision moved it first (or it changed meanwhile): send it only
        # if it is this batch's and still waiting.
        stored = refused.current if isinstance(refused.current, FileJob) else None
        if stored is None or stored.batch_id != job.batch_id:
            return _Placed(send=False)
        return _Placed(send=stored.status is JobStatus.AVAILABLE)
    log.info(
        "job.revised",
        file_id=job.file_id,
        batch_id=job.batch_id,
        revision=revision,
        revised_as=str(kind),
        from_batch=current.batch_id,
    )
    return _Placed(send=True)


def _listed(job: FileJob) -> ListedFile:
    return ListedFile(job.file_id, job.expected_size, job.expected_sha256)


def _published(job: FileJob) -> DayFile:
    return DayFile(job.file_id, completed=True, size=job.byte_count, sha256=job.sha256)


def _adopt(flow: PlacingFlow, job: FileJob, current: FileJob | None) -> bool:
    """True if another batch's unfinished job moved into this batch (and must be sent)."""
    if current is None or not may_adopt(current, job.batch_id, flow.clock.now_ms()):
        return False  # completed, or held under a live lease: the adoption would be refused
    try:
        flow.jobs.adopt(job.file_id, job.batch_id, job.listing_index)
    except RequeueRefusedError:
        return False  # completed or held under a live lease meanwhile: nothing to send
    log.info("job.adopted", file_id=job.file_id, batch_id=job.batch_id, from_batch=current.batch_id)
    _mark_adopted(flow, current.batch_id, job.batch_id)
    return True


def _mark_adopted(flow: PlacingFlow, earlier: str, rerun: str) -> None:
    """Tell the earlier batch where its files went: one write per earlier batch and
    invocation (a replay writes the same value again), not one per file."""
    with flow.adopted_lock:  # jobs are placed on several threads
        if earlier in flow.adopted_from:
            return
        flow.adopted_from.add(earlier)
    try:
        flow.batches.mark_adopted(earlier, rerun)
    except (BatchTransitionRefusedError, NotFoundError):
        log.warning("batch.adopted_mark_refused", batch_id=earlier, adopted_by=rerun)


class _Placed(NamedTuple):
    """What writing one job found: send it or not, or the entry whose job took its FileID."""

    send: bool
    duplicate_of: int | None = None


def _duplicate(entity: str, found: list[int]) -> str:
    """Why an entity listed at the entries `found` is refused."""
    where = ", ".join(f"files[{i}]" for i in found)
    return f"duplicate entity {entity!r} in the listing ({where})"


def _all_copies_refused(entity: str, found: list[int]) -> RejectedFile:
    """The one refusal that stands for every copy of an entity listed twice in a chunk."""
    return RejectedFile(entity, f"{_duplicate(entity, found)}: all copies refused", entity)


def _later_copy(entity: str, found: list[int]) -> str:
    """The batch's line for a copy of an entity whose job an earlier entry wrote."""
    return refusal(RejectedFile(entity, _duplicate(entity, found), entity))

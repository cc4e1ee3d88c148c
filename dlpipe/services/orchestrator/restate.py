"""A run of a day already delivered: does the vendor's listing restate it?

create-batch calls this when the day's latest batch completed (a scheduled run, `dlpipe run
--date D`, or `--rerun`). The listing is read whole, each entry's FileID, size and SHA-256
compared with what the day's completed jobs published (BatchIndex's items: no job fetched),
by the rule in dlpipe/domain/restatement.py. An unchanged day is left as it is: the run
attaches to its batch and re-sends its one `Day Completed`. A restated one gets a **revision
batch**: `Revision` n + 1 of the batch it `Revises`, whose BatchID is derived from those two,
so two runs of the same restated day make one revision (the second's put is refused and it
joins the first's). The revision's fan-out gives the changed and added files back to the
queue (placement.py), and the files a complete listing no longer names are marked withdrawn
here (WithdrawnBy), their objects left in place.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.errors import BatchExistsError, RequeueRefusedError
from dlpipe.domain.listing import FileDescriptor
from dlpipe.domain.model import Batch, BatchStatus, JobStatus, make_batch_id
from dlpipe.domain.provider_errors import ProviderRefusedError, ProviderUnavailableError
from dlpipe.domain.restatement import DayFile, ListedFile, Restatement, restatement
from dlpipe.domain.rules import batch_ttl_epoch_s
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.fanout import FileLister, open_listing
from dlpipe.services.orchestrator.jobs_from_listing import listed_file_id
from dlpipe.services.orchestrator.store_ports import FlowStores

log = get_logger(component="orchestrator")
# The revision batches' UUIDs: uuid5 of (the batch revised, the revision), one per revision.
_REVISION_NAMESPACE = uuid.UUID("6f3c1a52-8d1e-4b7a-9a64-2f0d9c1e5b37")


class RestatingFlow(FlowStores, Protocol):
    """What the check reads of the flow: the stores, the provider and the feed."""

    @property
    def provider(self) -> FileLister: ...

    @property
    def feed(self) -> str: ...


def revision_batch_id(revised: Batch, revision: int) -> str:
    """The BatchID of `revision` over `revised`: the same for every run that makes it."""
    name = f"{revised.batch_id}#{revision}"
    return make_batch_id(
        revised.polling_date, str(uuid.uuid5(_REVISION_NAMESPACE, name)), revised.feed
    )


def day_files(flow: FlowStores, day: Iterable[Batch], owners: dict[str, str]) -> Iterator[DayFile]:
    """What each of the day's completed jobs published, from its batch's index items; each
    one's BatchID goes in `owners`."""
    for batch in day:
        for row in flow.jobs.rows_by_batch(batch.batch_id, JobStatus.COMPLETED):
            owners[row.file_id] = batch.batch_id
            yield DayFile(
                row.file_id,
                completed=True,
                size=row.byte_count,
                sha256=row.sha256,
                withdrawn=row.withdrawn_by is not None,
            )


def listed_files(flow: RestatingFlow, date: str) -> tuple[list[ListedFile], bool]:
    """The day's listing as the rule reads it, and whether it is complete: every page read and
    no entry refused (a refused entry may be a file we hold, so nothing is withdrawn then)."""
    listed: list[ListedFile] = []
    complete = True
    for entry in open_listing(flow.provider, date):
        file_id = listed_file_id(entry, date, flow.feed)
        if not isinstance(entry, FileDescriptor):
            complete = False
            if file_id is not None:
                listed.append(ListedFile(file_id, None, None))  # unknown contents: unchanged
            continue
        if file_id is not None:
            listed.append(ListedFile(file_id, entry.size, entry.sha256))
    return listed, complete


@dataclass(frozen=True)
class Found:
    """A day's restatement, and the batch whose partition holds each completed job."""

    restatement: Restatement
    owners: dict[str, str]

    def withdrawn(self) -> dict[str, str]:
        """FileID -> its batch, of each file found withdrawn."""
        return {file_id: self.owners[file_id] for file_id in self.restatement.withdrawn}


def check(flow: RestatingFlow, date: str, day: list[Batch]) -> Found | None:
    """The day's restatement, or None when the listing cannot be read now (the run then
    attaches to the completed day as it is; the next run checks again)."""
    try:
        listed, complete = listed_files(flow, date)
    except (ProviderUnavailableError, ProviderRefusedError) as exc:
        log.warning("batch.restatement_unchecked", date=date, cause=str(exc))
        return None
    owners: dict[str, str] = {}
    found = restatement(listed, day_files(flow, day, owners), listing_complete=complete)
    log.info("batch.restatement_checked", date=date, listing_complete=complete, **found.counts())
    return Found(found, owners)


def start_revision(flow: RestatingFlow, revised: Batch, found: Found) -> str:
    """The revision batch over `revised` (created initiated, or the one a racing run made),
    with the files `found` withdrawn marked."""
    revision = (revised.revision or 1) + 1
    now_ms = flow.clock.now_ms()
    batch = Batch(
        batch_id=revision_batch_id(revised, revision),
        polling_date=revised.polling_date,
        status=BatchStatus.INITIATED,
        start_time=iso_from_ms(now_ms),
        created_at=iso_from_ms(now_ms),
        updated_at=iso_from_ms(now_ms),
        ttl_epoch_s=batch_ttl_epoch_s(now_ms // 1000),
        feed=revised.feed,
        revision=revision,
        revises=revised.batch_id,
    )
    try:
        flow.batches.create(batch)
    except BatchExistsError:
        log.info("batch.revision_joined", batch_id=batch.batch_id, revision=revision)
    else:
        log.info(
            "batch.revision_started",
            batch_id=batch.batch_id,
            date=revised.polling_date,
            revision=revision,
            revises=revised.batch_id,
            **found.restatement.counts(),
        )
    mark_withdrawn(flow, batch.batch_id, found.withdrawn(), day_of=revised.polling_date)
    return batch.batch_id


def mark_withdrawn(
    flow: FlowStores, revision_batch: str, withdrawn: dict[str, str], *, day_of: str
) -> int:
    """Mark each withdrawn file's completed job (FileID -> its batch) WithdrawnBy the
    revision batch; how many this call marked."""
    marked = 0
    for file_id, batch_id in sorted(withdrawn.items()):
        try:
            flow.jobs.withdraw(file_id, batch_id, revision_batch)
        except RequeueRefusedError as exc:
            log.warning("job.withdraw_refused", file_id=file_id, date=day_of, cause=str(exc))
            continue
        marked += 1
        log.info("job.withdrawn", file_id=file_id, batch_id=revision_batch)
    return marked

"""create-batch: the day's batch, created initiated, or the one a run attaches to (flow.py says
when a run attaches and when it makes a new batch)."""

from __future__ import annotations

from typing import Protocol

from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.model import Batch, BatchStatus, make_batch_id
from dlpipe.domain.rules import batch_ttl_epoch_s
from dlpipe.domain.statuses import SUCCESSFUL_BATCH_STATUSES
from dlpipe.domain.transitions import batch_to_attach, rerun_starts_anew
from dlpipe.log import get_logger
from dlpipe.services.orchestrator import restate
from dlpipe.services.orchestrator.feed_day import feed_batches
from dlpipe.services.orchestrator.restate import RestatingFlow

log = get_logger(component="orchestrator")


class CreatingFlow(RestatingFlow, Protocol):
    """What create-batch reads of the flow: the stores, the provider, and the feed and ids it
    names batches by."""

    def new_uuid(self) -> str: ...


def create_batch(flow: CreatingFlow, polling_date: str, rerun: bool = False) -> str:
    """Create the day's batch (initiated), or attach to the one already running / done.
    A rerun (`rerun`) of a completed day attaches too unless its hand-off was withheld
    (rerun_starts_anew): a new batch over it would hand off the same files again."""
    same_feed = feed_batches(flow.batches, polling_date, flow.feed)
    batch = batch_to_attach(same_feed, rerun=rerun and rerun_starts_anew(same_feed))
    if batch is not None:
        revision = _restated(flow, polling_date, batch, same_feed)
        if revision is not None:
            return revision
        log.info(
            "batch.attached",
            batch_id=batch.batch_id,
            date=polling_date,
            status=str(batch.status),
            rerun=rerun,
        )
        return batch.batch_id
    now_ms = flow.clock.now_ms()
    batch = Batch(
        batch_id=make_batch_id(polling_date, flow.new_uuid(), flow.feed),
        polling_date=polling_date,
        status=BatchStatus.INITIATED,
        start_time=iso_from_ms(now_ms),
        created_at=iso_from_ms(now_ms),
        updated_at=iso_from_ms(now_ms),
        ttl_epoch_s=batch_ttl_epoch_s(now_ms // 1000),
        feed=flow.feed,
    )
    flow.batches.create(batch)
    log.info("batch.created", batch_id=batch.batch_id, date=polling_date, rerun=rerun)
    return batch.batch_id


def _restated(flow: CreatingFlow, date: str, batch: Batch, day: list[Batch]) -> str | None:
    """The revision batch this run goes on with, if the day it would attach to is restated
    (restate.py): a completed day the listing now contradicts, or a revision batch still
    initiated (a replay of this step, or a racing run's: its withdrawn marks are made again,
    each once). None: attach to `batch` as it is."""
    if batch.status is BatchStatus.INITIATED and batch.revision is not None:
        found = restate.check(flow, date, day)
        if found is not None:
            restate.mark_withdrawn(flow, batch.batch_id, found.withdrawn(), day_of=date)
        return batch.batch_id
    if batch.status not in SUCCESSFUL_BATCH_STATUSES:
        return None
    found = restate.check(flow, date, day)
    if found is None or not found.restatement.is_revision:
        return None
    return restate.start_revision(flow, batch, found)

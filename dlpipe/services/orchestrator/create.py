"""create-batch: the day's batch, created initiated, or the one a run attaches to (flow.py says
when a run attaches and when it makes a new batch)."""

from __future__ import annotations

from typing import Protocol

from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.model import Batch, BatchStatus, make_batch_id
from dlpipe.domain.rules import batch_ttl_epoch_s
from dlpipe.domain.transitions import batch_to_attach, rerun_starts_anew
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.store_ports import FlowStores

log = get_logger(component="orchestrator")


class CreatingFlow(FlowStores, Protocol):
    """What create-batch reads of the flow: the stores, and the feed and ids it names batches by."""

    @property
    def feed(self) -> str: ...

    def new_uuid(self) -> str: ...


def create_batch(flow: CreatingFlow, polling_date: str, rerun: bool = False) -> str:
    """Create the day's batch (initiated), or attach to the one already running / done.
    A rerun (`rerun`) of a completed day attaches too unless its hand-off was withheld
    (rerun_starts_anew): a new batch over it would hand off the same files again."""
    # Another feed's batch of the same date is not this day: never attach to it.
    same_feed = [b for b in flow.batches.query_by_date(polling_date) if b.feed == flow.feed]
    batch = batch_to_attach(same_feed, rerun=rerun and rerun_starts_anew(same_feed))
    if batch is not None:
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

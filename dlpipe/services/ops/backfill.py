"""Backfill: start the poller for every date in a range that has no completed batch yet."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import Batch, BatchStatus
from dlpipe.domain.transitions import batch_to_attach
from dlpipe.log import get_logger
from dlpipe.services.ops.feed_filter import chosen
from dlpipe.services.ops.ports import OpsBatches, Starter

MAX_BACKFILL_DAYS = 92


@dataclass(frozen=True)
class DayPlan:
    """What backfill does for one date, and why."""

    polling_date: str
    start: bool
    reason: str
    result: str = ""


def decide(polling_date: str, batches: Sequence[Batch], rerun: bool) -> DayPlan:
    """Start unless a batch is running or completed; `rerun` starts those days too."""
    joined = batch_to_attach(batches, rerun=rerun)  # what the poller's run would attach to
    if joined is not None and not joined.is_terminal:
        # The flow attaches to a running batch: a rerun only adds a poller (for an orphan).
        return DayPlan(polling_date, rerun, f"running: {joined.batch_id}")
    if joined is not None:
        return DayPlan(polling_date, False, f"completed: {joined.batch_id}")
    if any(b.status is BatchStatus.COMPLETED for b in batches):
        return DayPlan(polling_date, True, "rerun of a completed day")
    last = f"last batch {batches[-1].status}" if batches else "no batch"
    return DayPlan(polling_date, True, last)


def backfill(
    batches: OpsBatches,
    dates: Sequence[str],
    *,
    rerun: bool,
    starter: Starter | None,
    advance: Callable[[str], None] = lambda _day: None,
    feed: str = DEFAULT_FEED_NAME,
) -> list[DayPlan]:
    """Decide each date of `feed` from PollingDateIndex (the date's batches of every feed,
    those of `feed` kept) and start that feed's poller where due (no starter: dry run)."""
    plans = []
    for day in dates:
        plan = decide(day, chosen(feed, batches.query_by_date(day)), rerun)
        if plan.start and starter is not None:
            plan = DayPlan(day, True, plan.reason, starter.start(day, rerun, feed=feed))
            get_logger(component="ops").info(
                "dlpipe.services.ops.backfill.started",
                date=day,
                feed=feed,
                rerun=rerun,
                result=plan.result,
            )
        plans.append(plan)
        advance(day)
    return plans

"""The restatement window: a scheduled run also re-lists the feed's last few delivered days.

A vendor that corrects, adds or withdraws a file of a day we delivered says so only in that
day's listing. A scheduled run (its date from the schedule's time, never an explicit `date`)
therefore re-lists each of the `restatement_window_days` days before its own, once its own
day's files are queued: one step a day (`restatement-check-1` is the day before, ...). Each
step compares the listing with what the day's completed jobs published, by the rule
create-batch uses (restate.py), and writes nothing. A restated day gets a run of its own: the
step starts one (`DayStarter`: on AWS an asynchronous invoke of this orchestrator for that
date), whose create-batch finds the restatement again and makes the revision batch (its
BatchID is derived from the revised batch, so a replayed step's second start joins the
first's). Only a completed day is checked: a day still running is its own run's, and a failed
or timed-out day waits for a rerun or a backfill.

A window step never fails the day it runs in: an unreadable listing is logged and left for
the next scheduled run, and a start that AWS refuses is logged with the command that starts
the day by hand.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dlpipe.domain.day_commands import start_day_command
from dlpipe.domain.errors import AwsRequestError
from dlpipe.domain.model import Batch
from dlpipe.domain.statuses import SUCCESSFUL_BATCH_STATUSES
from dlpipe.domain.transitions import batch_to_attach
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.feed_day import feed_batches

if TYPE_CHECKING:
    from dlpipe.services.orchestrator.restate import RestatingFlow

log = get_logger(component="orchestrator")

# Starts a run of one date of the flow's feed; says what it started (one line).
DayStarter = Callable[[str], str]


def earlier_date(date: str, days_back: int) -> str:
    """The date `days_back` calendar days before `date` (both YYYY-MM-DD)."""
    return (dt.date.fromisoformat(date) - dt.timedelta(days=days_back)).isoformat()


def recheck_day(flow: RestatingFlow, date: str, start: DayStarter | None) -> dict[str, Any]:
    """The window step for `date`: `{"date", "outcome"}`, outcome one of `no_completed_batch`
    (nothing delivered to restate, or a run of it is on), `unchecked` (the listing could not
    be read), `unchanged`, `restated` (with the counts, and what `start` started or
    `start_problem`; None: no orchestrator to start here). Writes nothing to the tables."""
    # Imported here: the sequence imports this module for its step names, and the Lambda's
    # init must not load the flow's modules.
    from dlpipe.services.orchestrator import restate  # noqa: PLC0415

    day = feed_batches(flow.batches, date, flow.feed)
    delivered = _delivered(day)
    if delivered is None:
        return {"date": date, "outcome": "no_completed_batch"}
    found = restate.check(flow, date, day)
    if found is None:
        return {"date": date, "outcome": "unchecked"}
    if not found.restatement.is_revision:
        return {"date": date, "outcome": "unchanged"}
    result: dict[str, Any] = {
        "date": date,
        "outcome": "restated",
        "revises": delivered.batch_id,
        **found.restatement.counts(),
    }
    if start is None:
        result["start_problem"] = "no orchestrator to start here"
    else:
        try:
            result["started"] = start(date)
        except AwsRequestError as exc:
            result["start_problem"] = str(exc)
    if "start_problem" in result:
        log.warning(
            "batch.restatement_not_started",
            date=date,
            feed=flow.feed,
            cause=result["start_problem"],
            command=start_day_command(date, flow.feed, deployed=start is not None, rerun=True),
        )
    else:
        log.info("batch.restatement_started", date=date, feed=flow.feed, started=result["started"])
    return result


def _delivered(day: list[Batch]) -> Batch | None:
    """The completed batch a run of the day would attach to, or None (no batch, one still
    running, or only failed and timed-out ones)."""
    batch = batch_to_attach(day, rerun=False)
    if batch is None or batch.status not in SUCCESSFUL_BATCH_STATUSES:
        return None
    return batch

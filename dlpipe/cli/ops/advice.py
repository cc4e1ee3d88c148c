"""`dlpipe status`'s repair lines: the command that starts a feed's date, as it runs in this shell."""

from __future__ import annotations

from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.services.ops.advice import start_day_command
from dlpipe.services.ops.backfill import decide
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.queries import DayStatus, FeedDay


def feed_start_command(ops: OpsContext, polling_date: str, day: FeedDay) -> str | None:
    """The start command when the feed's date has no batch, or none completed and none runs."""
    if not decide(polling_date, [s.batch for s in day.batches], rerun=False).start:
        return None
    return start_day_command(ops.settings, polling_date, day.feed)


def start_command(ops: OpsContext, found: DayStatus) -> str | None:
    """The start command of the default feed's date (of the chosen feed's with --feed)."""
    wanted = found.feed or DEFAULT_FEED_NAME
    day = next((d for d in found.feeds if d.feed == wanted), None)
    return None if day is None else feed_start_command(ops, found.polling_date, day)


def advice_payload(ops: OpsContext, found: DayStatus) -> dict[str, object]:
    """`start_command` of `status --json` (None: the date needs no new run)."""
    return {"start_command": start_command(ops, found)}


def advice_line(ops: OpsContext, polling_date: str, day: FeedDay) -> str | None:
    """The start line of one feed's section, if its date needs a run."""
    command = feed_start_command(ops, polling_date, day)
    if command is None:
        return None
    if not day.batches:
        return f"start one: {command}"
    return f"no batch of this date completed; a new run adopts its unfinished files: {command}"

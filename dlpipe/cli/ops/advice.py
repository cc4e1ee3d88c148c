"""`dlpipe status`'s repair line: the command that starts a date, as it runs in this shell."""

from __future__ import annotations

from dlpipe.services.ops.advice import start_day_command
from dlpipe.services.ops.backfill import decide
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.queries import DayStatus


def start_command(ops: OpsContext, found: DayStatus) -> str | None:
    """The start command when the date has no batch, or none completed and none runs."""
    batches = [s.batch for s in found.batches]
    if not decide(found.polling_date, batches, rerun=False).start:
        return None
    return start_day_command(ops.settings, found.polling_date)


def advice_payload(ops: OpsContext, found: DayStatus) -> dict[str, object]:
    """`start_command` of `status --json` (None: the date needs no new run)."""
    return {"start_command": start_command(ops, found)}


def advice_lines(ops: OpsContext, found: DayStatus) -> list[str]:
    """The start line of the text screen, if the date needs a run."""
    command = start_command(ops, found)
    if command is None:
        return []
    if not found.batches:
        return [f"start one: {command}"]
    return [f"no batch of this date completed; a new run adopts its unfinished files: {command}"]

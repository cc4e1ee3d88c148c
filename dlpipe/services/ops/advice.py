"""The repair commands the CLI and the web view suggest, as they run where they are shown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dlpipe.config import Settings
from dlpipe.domain import day_commands
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import Batch
from dlpipe.domain.statuses import SUCCESSFUL_BATCH_STATUSES
from dlpipe.services.ops.feed_filter import record_feed


def start_day_command(settings: Settings, polling_date: str, feed: str = DEFAULT_FEED_NAME) -> str:
    """The command that starts a date's batch (or a new run adopting its unfinished files):
    `backfill` where DLPIPE_ORCHESTRATOR_ARN is set (it invokes the deployed orchestrator),
    else `dlpipe run` (dlpipe/domain/day_commands.py)."""
    return day_commands.start_day_command(
        polling_date, feed, deployed=bool(settings.orchestrator_arn)
    )


@dataclass(frozen=True)
class DayRepair:
    """What repairs a file of an ended batch: why, and the command (None: nothing to run)."""

    why: str
    command: str | None = None

    def __str__(self) -> str:
        return self.why if self.command is None else f"{self.why}: {self.command}"


def ended_batch_repair(settings: Settings, batch: Batch, day_batches: Sequence[Batch]) -> DayRepair:
    """What repairs an unfinished file of `batch`, a batch that has ended (failed or timeout).

    Requeued, the file would complete in a batch nobody polls any more: the batch would stay
    as it ended, with no new manifest and no `Day Completed`. A new run of the day adopts the
    ended batches' unfinished files and ends with a completed batch, its manifest, the day's
    pointer moved and the event sent. `day_batches` are the date's batches of its feed: once
    one completed, the day needs no repair."""
    done = [b for b in day_batches if b.status in SUCCESSFUL_BATCH_STATUSES]
    if done:
        return DayRepair(f"the day is completed by batch {done[-1].batch_id}: nothing to repair")
    command = start_day_command(settings, batch.polling_date, record_feed(batch))
    return DayRepair("a new run of the day adopts its unfinished files and ends the day", command)

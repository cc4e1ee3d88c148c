"""The lines under a day's batch table that say why each batch ended as it did, which
batches are revisions of a restated day, and where a rerun's carried completed files sit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from dlpipe.cli.ops.render import CommandLine, stamp
from dlpipe.cli.outcome_text import outcome_text
from dlpipe.cli.safe_text import plain
from dlpipe.domain.model import JobStatus
from dlpipe.domain.statuses import TERMINAL_BATCH_STATUSES
from dlpipe.services.ops.revisions import counts_text


def outcome_views(rows: Sequence[dict[str, Any]]) -> list[Text]:
    """Per batch (rows from batch_dict): its cause and errors by code, the rerun that adopted
    its unfinished files, and a revision's line or the revision that replaced it. Plain text,
    control characters made visible: a cause is provider input."""
    lines: list[Text] = []
    for row in rows:
        why = outcome_text(row.get("outcome"))
        if why:
            lines.append(plain(f"{row['batch_id']} {row['status']}: {why}"))
        if row.get("handoff_problem"):
            lines.append(plain(f"{row['batch_id']}: hand-off withheld: {row['handoff_problem']}"))
        if row.get("adopted_by"):
            lines.append(
                plain(
                    f"{row['batch_id']}: its unfinished files were adopted by rerun"
                    f" {row['adopted_by']} (see that batch for them)"
                )
            )
        lines += [plain(line) for line in revision_lines(row)]
    return lines


def carried_views(rows: Sequence[dict[str, Any]]) -> list[RenderableType]:
    """Per rerun whose completed count takes in files completed under earlier batches of the
    date (a row's `carried`): how many, under which batch, and the command that lists them
    there, so `completed 20` over a partition of one file reads as what it is."""
    views: list[RenderableType] = []
    for row in rows:
        carried = row.get("carried")
        if not carried:
            continue
        under = carried["under"]
        where = f"batch {under[0]}" if len(under) == 1 else f"batches {', '.join(under)}"
        views.append(
            plain(
                f"{row['batch_id']}: {carried['completed']} of its {row['completed_files']}"
                f" completed files sit under earlier {where} of the date (they completed"
                " there; a later run adopts only unfinished files); see them:"
            )
        )
        listing = f"dlpipe jobs list --status {JobStatus.COMPLETED} --batch"
        views += [CommandLine(f"{listing} {b}") for b in under]
    return views


def revision_lines(row: dict[str, Any]) -> list[str]:
    """A revision batch's line (`B: revision 2 (revises A, created T; 1 changed, 1 added, 1
    withdrawn)`) and a revised batch's (`A: revised by B (revision 2)`)."""
    lines = []
    if row.get("revision") is not None:
        lines.append(f"{row['batch_id']}: {revision_text(row)}")
    if row.get("revised_by"):
        lines.append(
            f"{row['batch_id']}: revised by {row['revised_by']}"
            f" (revision {row.get('revised_by_revision')})"
        )
    return lines


def revision_text(row: dict[str, Any]) -> str:
    """`revision 2 (revises A, created T; 1 changed, 1 added, 1 withdrawn)`; a running
    revision's counts come once it ends (its manifest counts them)."""
    ended = row.get("status") in TERMINAL_BATCH_STATUSES
    tally = counts_text(row.get("revision_counts"), ended=ended)
    when = stamp(row.get("created_at"))
    return f"revision {row['revision']} (revises {row.get('revises')}, created {when}; {tally})"

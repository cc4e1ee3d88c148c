"""`dlpipe dlq ...`: inspect the dead-letter queue without consuming it, and redrive it."""

from __future__ import annotations

import click

from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.errors import IncompleteRecoveryError
from dlpipe.cli.ops.layout import Column, FitTable
from dlpipe.cli.ops.options import dry_run_option, feed_option, json_option
from dlpipe.cli.ops.render import emit, iso, stamp, table
from dlpipe.cli.safe_text import error_line
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.dlq import Action, DlqEntry, peek, redrive
from dlpipe.services.ops.feed_filter import FeedChoice


@click.group("dlq")
def dlq_group() -> None:
    """The download queue's dead-letter queue (DLPIPE_DLQ_URL)."""


@dlq_group.command("show")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@feed_option(every_by_default=True)
@json_option
@pass_ops
def dlq_show_command(ops: OpsContext, limit: int, feed: FeedChoice, as_json: bool) -> None:
    """DLQ messages with their job's current status; nothing is consumed (--feed: that feed's
    among the first --limit)."""
    entries = peek(ops, limit, feed)
    emit(_payload(entries, None), [_view("DLQ messages", entries)], as_json)


@dlq_group.command("redrive")
@click.option("--limit", type=click.IntRange(1, 10_000), default=1000, show_default=True)
@feed_option(every_by_default=True)
@dry_run_option
@json_option
@pass_ops
def dlq_redrive_command(
    ops: OpsContext, limit: int, feed: FeedChoice, dry_run: bool, as_json: bool
) -> None:
    """Send DLQ messages back to the download queue (requeueing failed jobs), then delete them
    (--feed: that feed's among the first --limit; the others stay). Those of a batch that has
    ended stay, with the run of the day that repairs them (exit 1)."""
    entries = redrive(ops, limit, dry_run, feed)
    emit(_payload(entries, dry_run), [_view("DLQ redrive", entries)], as_json)
    left = [e for e in entries if e.outcome == "left"]
    if left:
        click.echo(
            error_line(f"{len(left)} message(s) left in the DLQ for a person to look at"), err=True
        )
    problems = []
    unsent = [e.message.message_id for e in entries if e.outcome == "not-sent"]
    if unsent:
        problems.append(f"{len(unsent)} message(s) could not be sent; they stay in the DLQ")
    held = [e for e in entries if e.action is Action.HOLD]
    if held:
        repairs = "; ".join(dict.fromkeys(str(e.repair) for e in held))
        problems.append(f"{len(held)} message(s) held in the DLQ: {repairs}")
    if problems:
        raise IncompleteRecoveryError("; ".join(problems))


def _payload(entries: list[DlqEntry], dry_run: bool | None) -> dict[str, object]:
    rows = [
        {
            "message_id": e.message.message_id,
            "file_id": e.file_id,
            "batch_id": e.message.job.batch_id if e.message.job else None,
            "receive_count": e.message.receive_count,
            "sent_at": iso(e.message.sent_at_ms),
            "job_status": str(e.job.status) if e.job else None,
            "action": str(e.action),
            "reason": e.reason,
            "outcome": e.outcome,
            "repair": e.repair.command if e.repair else None,
        }
        for e in entries
    ]
    return {"messages": rows} if dry_run is None else {"dry_run": dry_run, "messages": rows}


# Kept longest first: the file (what the operator acts on: `jobs show`, `jobs requeue`), what
# was done and why, then the rest; the message id (SQS's, for no dlpipe command) goes first,
# then a named feed's 62-65-character BatchID (the file id names its feed and date).
_COLUMNS = (
    Column("file id", "id"),
    Column("message id", "id", drop=7),
    Column("batch", "id", drop=6),
    Column("receives", drop=4),
    Column("sent", "time", drop=5),
    Column("job", drop=3),
    Column("action"),
    Column("result", drop=1),
)


def _view(title: str, entries: list[DlqEntry]) -> FitTable:
    columns = _COLUMNS
    rows = [
        (
            e.file_id,
            e.message.message_id,
            e.message.job.batch_id if e.message.job else None,
            e.message.receive_count,
            stamp(e.message.sent_at_ms),
            e.job.status if e.job else None,
            e.action,
            f"{e.outcome}: {e.reason}" if e.outcome else e.reason,
        )
        for e in entries
    ]
    return table(f"{title} ({len(entries)})", columns, rows)

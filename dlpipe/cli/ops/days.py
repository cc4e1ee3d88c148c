"""`dlpipe batch ...` and `dlpipe backfill`: a day's batches and repairs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click
from rich.console import Console, RenderableType
from rich.progress import Progress

from dlpipe.cli.ops.audit import batch_audit_command
from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.dates import date_range, resolve_day
from dlpipe.cli.ops.layout import Column
from dlpipe.cli.ops.options import (
    date_option,
    dry_run_option,
    feed_option,
    json_option,
    polling_date,
)
from dlpipe.cli.ops.outcome_view import outcome_views
from dlpipe.cli.ops.param_types import BATCH_ID, DAY
from dlpipe.cli.ops.render import batch_dict, batches_by_feed, emit, table
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import BatchStatus, batch_feed, batch_polling_date
from dlpipe.services.ops.backfill import MAX_BACKFILL_DAYS, DayPlan, backfill
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors import NoBatchForDateError
from dlpipe.services.ops.feed_filter import FeedChoice
from dlpipe.services.ops.queries import day_batches, day_summaries, revisions_of
from dlpipe.services.ops.revisions import day_revisions


@click.group("batch")
def batch_group() -> None:
    """Inspect daily batches (PollingDateIndex, BatchIndex)."""


batch_group.add_command(batch_audit_command)  # its own module: the manifests' audit


@batch_group.command("show")
@click.argument("batch_id", type=BATCH_ID, required=False, metavar="[BATCH_ID]")
@date_option()
@feed_option(every_by_default=True)
@json_option
@pass_ops
def batch_show_command(
    ops: OpsContext, batch_id: str | None, day: str | None, feed: FeedChoice, as_json: bool
) -> None:
    """The date's batches (each feed's, or --feed's) with live job counts by status, or
    BATCH_ID's alone (its date's); a revision batch says which revision of the day it is,
    what it revises and how many files it changed, added and withdrew, a batch a revision
    replaced says by which (exit 1 if there is none)."""
    if batch_id is not None:
        day, feed = _batch_day(batch_id, day, feed)
    polling = polling_date(ops, day, feed)
    found = day_summaries(ops, polling, required=True, feed=feed)
    batches = [s.batch for s in found]
    # A revision's counts from its manifest when its item lacks them: the one asked for, or
    # each of the day's (a look at a day's batches, not a screen that refreshes).
    read = {batch_id} if batch_id else {b.batch_id for b in batches}
    revisions = revisions_of(ops, batches, read=read)
    if batch_id is not None:
        found = [s for s in found if s.batch.batch_id == batch_id]
        if not found:
            raise NoBatchForDateError(f"no batch {batch_id} on {polling}")
    rows = [batch_dict(s.batch, s.counts, revisions) for s in found]
    views: list[RenderableType] = [*batches_by_feed(polling, rows, feed), *outcome_views(rows)]
    emit({"date": polling, "feed": feed, "batches": rows}, views, as_json)


def _batch_day(batch_id: str, day: str | None, feed: FeedChoice) -> tuple[str, str]:
    """The date and feed BATCH_ID names; a usage error when --date or --feed says otherwise."""
    named_feed = str(batch_feed(batch_id, default=DEFAULT_FEED_NAME))
    named_day = str(batch_polling_date(batch_id, default=""))
    if day is not None and day != named_day:
        raise click.UsageError(f"{batch_id} is a batch of {named_day}, not of --date {day}")
    if feed is not None and feed != named_feed:
        raise click.UsageError(f"{batch_id} is a batch of feed {named_feed}, not of --feed {feed}")
    return named_day, named_feed


@batch_group.command("list")
@date_option(required=True)
@click.option("--status", type=click.Choice([str(s) for s in BatchStatus]), default=None)
@feed_option(every_by_default=True)
@json_option
@pass_ops
def batch_list_command(
    ops: OpsContext, day: str, status: str | None, feed: FeedChoice, as_json: bool
) -> None:
    """The date's batches (each feed's, or --feed's), optionally only those in one status."""
    polling = polling_date(ops, day, feed)
    found = day_batches(ops.batches(), polling, BatchStatus(status) if status else None, feed)
    revisions = day_revisions(found)  # the items' facts alone: no manifest is read
    rows = [batch_dict(b, revisions=revisions) for b in found]
    views: list[RenderableType] = [*batches_by_feed(polling, rows, feed), *outcome_views(rows)]
    emit({"date": polling, "status": status, "feed": feed, "batches": rows}, views, as_json)


@click.command("backfill")
@click.option("--from", "first", type=DAY, required=True, help="First date (YYYY-MM-DD).")
@click.option("--to", "last", type=DAY, required=True, help="Last date, inclusive.")
@click.option("--rerun", is_flag=True, help="Start completed (and running) days again too.")
@feed_option(every_by_default=False)
@dry_run_option
@json_option
@pass_ops
def backfill_command(
    ops: OpsContext,
    *,
    first: str,
    last: str,
    rerun: bool,
    feed: str,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Start the poller for each date of the feed without a completed batch (at most 92 days)."""
    dates = _dates(ops, first, last)
    starter = None if dry_run else ops.poller_starter()
    with _progress(len(dates)) as advance:
        plans = backfill(
            ops.batches(), dates, rerun=rerun, starter=starter, advance=advance, feed=feed
        )
    days = [_plan_dict(p, dry_run) for p in plans]
    payload = {
        "from": dates[0],
        "to": dates[-1],
        "feed": feed,
        "rerun": rerun,
        "dry_run": dry_run,
        "dates": days,
    }
    rows = [(d["date"], d["action"], d["reason"], d["result"]) for d in days]
    columns = (Column("date", "time"), Column("action"), Column("reason"), Column("result"))
    title = "backfill" if feed == DEFAULT_FEED_NAME else f"backfill, feed {feed}"
    emit(payload, [table(title, columns, rows)], as_json)


def _dates(ops: OpsContext, first: str, last: str) -> list[str]:
    now_ms = ops.now_ms()
    start, end = resolve_day(first, now_ms), resolve_day(last, now_ms)
    if end > resolve_day("today", now_ms):
        raise click.BadParameter(f"{end} is in the future", param_hint="--to")
    try:
        return date_range(start, end, MAX_BACKFILL_DAYS)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--from/--to") from exc


def _plan_dict(plan: DayPlan, dry_run: bool) -> dict[str, object]:
    action = ("would start" if dry_run else "started") if plan.start else "skipped"
    return {
        "date": plan.polling_date,
        "action": action,
        "reason": plan.reason,
        "result": plan.result or None,
    }


@contextmanager
def _progress(total: int) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr, so stdout keeps only the summary; only on a terminal (where it
    is erased): elsewhere it would leave an empty line before an error's one line."""
    console = Console(stderr=True)
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("backfill", total=total)
        yield lambda day: progress.update(task, advance=1, description=day)

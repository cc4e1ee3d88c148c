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
from dlpipe.cli.ops.param_types import DAY
from dlpipe.cli.ops.render import batch_dict, batches_by_feed, emit, table
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import BatchStatus
from dlpipe.services.ops.backfill import MAX_BACKFILL_DAYS, DayPlan, backfill
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import FeedChoice
from dlpipe.services.ops.queries import (
    day_batches,
    day_summaries,
)


@click.group("batch")
def batch_group() -> None:
    """Inspect daily batches (PollingDateIndex, BatchIndex)."""


batch_group.add_command(batch_audit_command)  # its own module: the manifests' audit


@batch_group.command("show")
@date_option()
@feed_option(every_by_default=True)
@json_option
@pass_ops
def batch_show_command(ops: OpsContext, day: str | None, feed: FeedChoice, as_json: bool) -> None:
    """The date's batches (each feed's, or --feed's) with live job counts by status (exit 1
    if it has none)."""
    polling = polling_date(ops, day, feed)
    found = day_summaries(ops, polling, required=True, feed=feed)
    rows = [batch_dict(s.batch, s.counts) for s in found]
    views: list[RenderableType] = [*batches_by_feed(polling, rows, feed), *outcome_views(rows)]
    emit({"date": polling, "feed": feed, "batches": rows}, views, as_json)


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
    rows = [batch_dict(b) for b in found]
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

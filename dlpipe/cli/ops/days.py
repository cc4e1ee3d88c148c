"""`dlpipe batch ...`, `dlpipe status` and `dlpipe backfill`: a day's batches and repairs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click
from rich.console import Console, RenderableType
from rich.progress import Progress

from dlpipe.cli.ops.advice import advice_lines, advice_payload
from dlpipe.cli.ops.audit import batch_audit_command
from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.durations import DAY, date_range, resolve_day
from dlpipe.cli.ops.layout import Column
from dlpipe.cli.ops.options import (
    date_option,
    dry_run_option,
    json_option,
    older_than_option,
    polling_date,
)
from dlpipe.cli.ops.outcome_view import outcome_views
from dlpipe.cli.ops.render import batch_dict, batches_view, emit, job_dict, stuck_views, table
from dlpipe.cli.ops.waiting import waiting_lines, waiting_payload
from dlpipe.domain.model import BatchStatus
from dlpipe.services.ops.backfill import MAX_BACKFILL_DAYS, DayPlan, backfill
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors import NoBatchForDateError
from dlpipe.services.ops.queries import (
    DayStatus,
    day_batches,
    day_status,
    day_summaries,
)


@click.group("batch")
def batch_group() -> None:
    """Inspect daily batches (PollingDateIndex, BatchIndex)."""


batch_group.add_command(batch_audit_command)  # its own module: the manifests' audit


@batch_group.command("show")
@date_option()
@json_option
@pass_ops
def batch_show_command(ops: OpsContext, day: str | None, as_json: bool) -> None:
    """The date's batches with live job counts by status (exit 1 if it has none)."""
    polling = polling_date(ops, day)
    rows = [batch_dict(s.batch, s.counts) for s in day_summaries(ops, polling, required=True)]
    views: list[RenderableType] = [batches_view(f"batches of {polling}", rows)]
    views += outcome_views(rows)
    emit({"date": polling, "batches": rows}, views, as_json)


@batch_group.command("list")
@date_option(required=True)
@click.option("--status", type=click.Choice([str(s) for s in BatchStatus]), default=None)
@json_option
@pass_ops
def batch_list_command(ops: OpsContext, day: str, status: str | None, as_json: bool) -> None:
    """The date's batches, optionally only those in one status."""
    polling = polling_date(ops, day)
    found = day_batches(ops.batches(), polling, BatchStatus(status) if status else None)
    rows = [batch_dict(b) for b in found]
    views: list[RenderableType] = [batches_view(f"batches of {polling}", rows)]
    views += outcome_views(rows)
    emit({"date": polling, "status": status, "batches": rows}, views, as_json)


@click.command("status")
@date_option()
@older_than_option
@json_option
@pass_ops
def status_command(ops: OpsContext, day: str | None, older_than_s: int, as_json: bool) -> None:
    """One screen: the day's batches and counts, stuck jobs, DLQ depth (exit 1, after the
    screen, if the date has no batch)."""
    found = day_status(ops, polling_date(ops, day), older_than_s)
    payload = {**_status_payload(found, ops.now_ms()), **advice_payload(ops, found)}
    emit(payload, [*_status_views(found, ops.now_ms()), *advice_lines(ops, found)], as_json)
    if not found.batches:
        # The same line and exit code as `batch show`.
        raise NoBatchForDateError(f"no batch for {found.polling_date} (has the poller run for it?)")


def _status_payload(found: DayStatus, now_ms: int) -> dict[str, object]:
    return {
        "date": found.polling_date,
        "batches": [batch_dict(s.batch, s.counts) for s in found.batches],
        "stuck": {str(s.status): [job_dict(j, now_ms) for j in s.jobs] for s in found.stuck},
        "stuck_truncated": {str(s.status): s.truncated for s in found.stuck},
        "unreadable": {str(s.status): s.unreadable for s in found.stuck},
        "dlq_depth": found.dlq_depth,
        **waiting_payload(found),
    }


def _status_views(found: DayStatus, now_ms: int) -> list[RenderableType]:
    rows = [batch_dict(s.batch, s.counts) for s in found.batches]
    title = f"batches of {found.polling_date}"
    views: list[RenderableType] = [batches_view(title, rows), *outcome_views(rows)]
    for stuck in found.stuck:
        views += stuck_views(stuck, now_ms)
    depth = "not configured" if found.dlq_depth is None else found.dlq_depth
    return [*views, f"DLQ depth: {depth}", *waiting_lines(found)]


@click.command("backfill")
@click.option("--from", "first", type=DAY, required=True, help="First date (YYYY-MM-DD).")
@click.option("--to", "last", type=DAY, required=True, help="Last date, inclusive.")
@click.option("--rerun", is_flag=True, help="Start completed (and running) days again too.")
@dry_run_option
@json_option
@pass_ops
def backfill_command(
    ops: OpsContext, *, first: str, last: str, rerun: bool, dry_run: bool, as_json: bool
) -> None:
    """Start the poller for each date without a completed batch (at most 92 days)."""
    dates = _dates(ops, first, last)
    starter = None if dry_run else ops.poller_starter()
    with _progress(len(dates)) as advance:
        plans = backfill(ops.batches(), dates, rerun=rerun, starter=starter, advance=advance)
    days = [_plan_dict(p, dry_run) for p in plans]
    payload = {"from": dates[0], "to": dates[-1], "rerun": rerun, "dry_run": dry_run, "dates": days}
    rows = [(d["date"], d["action"], d["reason"], d["result"]) for d in days]
    columns = (Column("date", "time"), Column("action"), Column("reason"), Column("result"))
    emit(payload, [table("backfill", columns, rows)], as_json)


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
    """A progress bar on stderr, so stdout keeps only the summary."""
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("backfill", total=total)
        yield lambda day: progress.update(task, advance=1, description=day)

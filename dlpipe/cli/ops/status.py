"""`dlpipe status`: one screen about a date, a section per feed (its batches, its freshness,
its repair line), then what the feeds share: stuck jobs and the queues."""

from __future__ import annotations

from typing import Any

import click
from rich.console import RenderableType

from dlpipe.cli.ops.advice import advice_line, advice_payload, feed_start_command
from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.options import (
    date_option,
    feed_option,
    json_option,
    older_than_option,
    opened_date,
)
from dlpipe.cli.ops.outcome_view import carried_views, outcome_views
from dlpipe.cli.ops.render import (
    CommandLine,
    batch_dict,
    batches_view,
    emit,
    feed_title,
    iso,
    job_dict,
    stamp,
    stuck_views,
)
from dlpipe.cli.ops.waiting import waiting_lines, waiting_payload
from dlpipe.cli.outcome_text import outcome_text
from dlpipe.cli.safe_text import error_line, plain
from dlpipe.domain.statuses import UNSUCCESSFUL_JOB_STATUSES
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors import NoBatchForDateError
from dlpipe.services.ops.errors_by_code import errors_by_code
from dlpipe.services.ops.feed_filter import FeedChoice
from dlpipe.services.ops.queries import (
    BatchSummary,
    DayStatus,
    FeedDay,
    day_status,
    no_batch_message,
)


@click.command("status")
@date_option()
@feed_option(every_by_default=True)
@older_than_option
@json_option
@pass_ops
def status_command(
    ops: OpsContext, day: str | None, feed: FeedChoice, older_than_s: int, as_json: bool
) -> None:
    """One screen: each feed's batches and counts of the date, stuck jobs, DLQ depth. Without
    --date, the date the web view's grid opens on. Exit 0 when each feed's day completed (on
    time or not) or runs on time; 1, after the screen and one line naming why, when the date
    has no batch, or a feed's day failed or timed out with no run since completed or running,
    or is past its deadline and not complete, or (without --date) when no date of the grid's
    window up to the latest scheduled date has a batch and the screen shows an older one."""
    polling, opened = opened_date(ops, day, feed)
    found = day_status(ops, polling, older_than_s, feed)
    now_ms = ops.now_ms()
    unhealthy = _unhealthy(ops, found)
    running = {day.feed: _running_errors(ops, day) for day in found.feeds}  # read once
    payload = {
        **_payload(ops, found, now_ms, running),
        **advice_payload(ops, found),
        "unhealthy": unhealthy,
        # Without --date: the latest scheduled date, and whether the screen moved off it.
        "opened": None if opened is None else opened.to_dict(),
    }
    moved = None if opened is None else opened.moved_text()
    head: list[RenderableType] = [] if moved is None else [plain(moved)]
    emit(payload, [*head, *_views(ops, found, now_ms, running)], as_json)
    if not found.batches:
        # The same line and exit code as `batch show`.
        raise NoBatchForDateError(no_batch_message(found.polling_date, feed))
    if moved is not None:
        click.echo(error_line(moved), err=True)
    if unhealthy:
        click.echo(error_line(f"{found.polling_date}: {'; '.join(unhealthy)}"), err=True)
    if moved is not None or unhealthy:
        raise click.exceptions.Exit(1)


def _unhealthy(ops: OpsContext, found: DayStatus) -> list[str]:
    """Per feed with a batch of the date: why its day needs the operator (no batch completed
    and none runs; late), if it does."""
    why = []
    for day in found.feeds:
        problems = []
        if day.batches and feed_start_command(ops, found.polling_date, day) is not None:
            ended = ", ".join(sorted({str(s.batch.status) for s in day.batches}))
            problems.append(f"no batch completed ({ended})")
        if day.freshness is not None and day.freshness.overdue:
            problems.append(day.freshness.label())
        if problems:
            why.append(f"feed {day.feed} {' and '.join(problems)}")
    return why


def _running_errors(ops: OpsContext, day: FeedDay) -> dict[str, dict[str, Any]]:
    """Per running batch with failed or error files: those files by code so far (the day
    page's bounded read; None past its limit). An ended batch's stay in its outcome."""
    found = {}
    for summary in day.batches:
        batch = summary.batch
        if batch.is_terminal or not _unsuccessful(summary):
            continue
        errors = errors_by_code(ops.jobs(), summary)
        codes = None if errors.summary is None else errors.summary.to_dict()
        found[batch.batch_id] = {"failed": errors.failed, "error": errors.error, "codes": codes}
    return found


def _unsuccessful(summary: BatchSummary) -> int:
    return sum(summary.counts.get(str(s), 0) for s in UNSUCCESSFUL_JOB_STATUSES)


Running = dict[str, dict[str, dict[str, Any]]]  # feed -> running batch -> errors so far


def _rows(found: DayStatus, summaries: list[BatchSummary]) -> list[dict[str, Any]]:
    """batch_dict of each batch, with the completed files it counts that sit under an earlier
    batch of the date (`carried`: null when none do)."""
    rows = []
    for s in summaries:
        carried = found.carried.get(s.batch.batch_id)
        row = batch_dict(s.batch, s.counts, found.revisions)
        rows.append({**row, "carried": None if carried is None else carried.to_dict()})
    return rows


def _feed_dict(ops: OpsContext, found: DayStatus, day: FeedDay, running: Running) -> dict[str, Any]:
    fresh = day.freshness
    return {
        "feed": day.feed,
        "batches": _rows(found, day.batches),
        # The day's revision, when its latest batch is one (null: not a restated day).
        "revision": None if day.revision is None else day.revision.to_dict(),
        "errors_so_far": running[day.feed],
        "freshness": None if fresh is None else fresh.label(),
        "deadline": None if fresh is None else iso(fresh.deadline_ms),
        "start_command": feed_start_command(ops, found.polling_date, day),
    }


def _payload(ops: OpsContext, found: DayStatus, now_ms: int, running: Running) -> dict[str, object]:
    return {
        "date": found.polling_date,
        "feed": found.feed,
        "batches": _rows(found, found.batches),
        "feeds": [_feed_dict(ops, found, d, running) for d in found.feeds],
        "stuck": {str(s.status): [job_dict(j, now_ms) for j in s.jobs] for s in found.stuck},
        "stuck_truncated": {str(s.status): s.truncated for s in found.stuck},
        "unreadable": {str(s.status): s.unreadable for s in found.stuck},
        "dlq_depth": found.dlq_depth,
        **waiting_payload(found),
    }


def _feed_views(
    ops: OpsContext, found: DayStatus, day: FeedDay, running: Running
) -> list[RenderableType]:
    rows = _rows(found, day.batches)
    views: list[RenderableType] = [batches_view(feed_title(found.polling_date, day.feed), rows)]
    views += outcome_views(rows)
    views += carried_views(rows)
    views += _running_error_views(running[day.feed])
    if day.freshness is not None:
        config = ops.feeds[day.feed]  # a freshness comes only from a configured deadline
        local = f"{config.deadline} {config.time_zone}"
        deadline = f"deadline {stamp(day.freshness.deadline_ms)}, {local}"
        views.append(f"freshness: {day.freshness.label()} ({deadline})")
    return [*views, *_advice_views(ops, found.polling_date, day)]


def _running_error_views(running: dict[str, dict[str, Any]]) -> list[RenderableType]:
    """Under the table: a running batch's failed and error files by code so far, and the
    command that requeues them once the cause is fixed (the day page's repair)."""
    views: list[RenderableType] = []
    for batch_id, errors in running.items():
        so_far = f"{errors['failed']} failed, {errors['error']} error so far"
        why = outcome_text(errors["codes"])
        if why is None:  # too many to group on every look: listed by `jobs list`
            views.append(plain(f"{batch_id} running, {so_far}; see them:"))
            views.append(CommandLine(f"dlpipe jobs list --batch {batch_id} --status error"))
            continue
        views.append(plain(f"{batch_id} running, {so_far}: {why}"))
        files = [f for code in errors["codes"]["codes"] for f in code["files"]]
        more = errors["failed"] + errors["error"] - len(files)
        shown = f" (and {more} more: dlpipe jobs list --batch {batch_id})" if more > 0 else ""
        views.append(plain(f"requeue them once the cause is fixed{shown}:"))
        views.append(CommandLine(f"dlpipe jobs requeue {' '.join(files)}"))
    return views


def _advice_views(ops: OpsContext, polling_date: str, day: FeedDay) -> list[RenderableType]:
    """The feed's repair line, its command alone on the next line, unwrapped (a copied line
    is the whole command)."""
    line = advice_line(ops, polling_date, day)
    command = feed_start_command(ops, polling_date, day)
    if not line:
        return []
    if command and line.endswith(command):
        return [line[: -len(command)].rstrip(), CommandLine(command)]
    return [line]


def _views(
    ops: OpsContext, found: DayStatus, now_ms: int, running: Running
) -> list[RenderableType]:
    views: list[RenderableType] = []
    for day in found.feeds:
        views += _feed_views(ops, found, day, running)
    of_feed = "" if found.feed is None else f" (feed {found.feed})"
    for stuck in found.stuck:
        views += stuck_views(stuck, now_ms, of_feed)
    depth = "not configured" if found.dlq_depth is None else found.dlq_depth
    return [*views, f"DLQ depth: {depth}", *waiting_lines(found)]

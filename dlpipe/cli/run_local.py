"""`dlpipe run --local`: the day on the embedded stack, whatever the caller's shell holds."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.cli.handoff_text import render_handoff, with_received_events
from dlpipe.cli.ops.handoff import wait_line
from dlpipe.cli.outcome_text import result_line
from dlpipe.cli.safe_text import plain
from dlpipe.config import (
    ENV_LARGE_FILE_THRESHOLD_BYTES,
    ENV_LOG_LEVEL,
)
from dlpipe.domain.clock import ENV_TEST_CLOCK_OFFSET_SECONDS
from dlpipe.domain.feeds import FeedError
from dlpipe.domain.statuses import ERROR_JOB_STATUSES
from dlpipe.local.day import DayOptions, DayProgress, DayReport
from dlpipe.local.dynamodb_local import ENV_HOME as ENV_DYNAMODB_LOCAL_HOME
from dlpipe.local.feed_days import local_feeds, run_feed_days
from dlpipe.local.stack import LocalStack, local_stack
from dlpipe.local.stack_feeds import LOCAL_FEEDS_TEMPLATE, FeedTables, read_template
from dlpipe.local.stub.publish import default_day
from dlpipe.local.testpoints import ENV_TEST_PAUSE_AT

# A local run brings its own emulator, stub provider, token, key, tables and queues: any of
# those named by the caller's shell (a DLPIPE_PROVIDER_TOKEN made the stub answer 401, an
# AWS_PROFILE may not exist) would point it elsewhere. These few only tune it or find it.
_KEPT_FOR_LOCAL = frozenset(
    {
        ENV_LOG_LEVEL,
        ENV_LARGE_FILE_THRESHOLD_BYTES,
        ENV_DYNAMODB_LOCAL_HOME,
        ENV_TEST_CLOCK_OFFSET_SECONDS,
        ENV_TEST_PAUSE_AT,
    }
)
_SETTING_PREFIXES = ("AWS_", "DLPIPE_")

# The stub's files are small (0-20 MiB): a local run routes those above 8 MiB to the large-file
# queue, so that `make run` exercises both queues; DLPIPE_LARGE_FILE_THRESHOLD_BYTES overrides.
LOCAL_LARGE_FILE_THRESHOLD_BYTES = 8 * 1024 * 1024


def drop_caller_settings(environ: MutableMapping[str, str]) -> list[str]:
    """Remove the AWS_* and DLPIPE_* variables a local run sets for itself; their names."""
    ignored = sorted(
        name
        for name in environ
        if name.startswith(_SETTING_PREFIXES) and name not in _KEPT_FOR_LOCAL
    )
    for name in ignored:
        del environ[name]
    return ignored


def run_local(
    err: Console,
    day: str,
    files: int,
    workers: int,
    poll_interval: int,
    *,
    feeds_template: Path = LOCAL_FEEDS_TEMPLATE,
    only: str | None = None,
    log_path: Path | None = None,
) -> list[DayReport]:
    """Start the stack, run every feed's day (`only`'s alone if given) with a progress bar
    each, stop the stack. `log_path` is named once the template is read (a bad one: its one
    line alone)."""
    tables = read_template(feeds_template)  # a bad template: one line, before anything starts
    if only is not None:
        tables = _only(tables, only, feeds_template)
    if log_path is not None:
        err.print(f"logs and metrics: {log_path}", highlight=False)
    ignored = drop_caller_settings(os.environ)
    if ignored:
        err.print(
            f"dlpipe: --local ignores {', '.join(ignored)} (it runs its own emulator, stub"
            " provider, token and key)",
            highlight=False,
            soft_wrap=True,  # one line, whatever the terminal's width
        )
    options = DayOptions(date=day, workers=workers, poll_interval_seconds=poll_interval)
    with local_stack() as started, _progress(err) as progress:
        stack = _with_local_threshold(started)
        aws = stack.emulator
        err.print(
            f"moto {aws.endpoint_url} (pid {aws.moto.pid}), DynamoDB Local "
            f"{aws.dynamodb_endpoint_url} (pid {aws.dynamodb.pid}), day {day}, "
            f"feeds {', '.join(tables)}"
        )
        tasks = {name: progress.add_task(f"{name}: files completed", total=None) for name in tables}

        def show(name: str, now: DayProgress) -> None:
            # The jobs table's words: `failed` (transient) and `error` (permanent) apart.
            counted = ((now.failed, "failed"), (now.error, "error"))
            failed = "".join(f", {n} {word}" for n, word in counted if n)
            progress.update(
                tasks[name],
                completed=now.completed,
                total=now.total or None,
                description=f"{name}: files completed{failed}",
            )

        local = local_feeds(stack, tables, Path(".dlpipe") / "run-local", default_day(files))
        reports = run_feed_days(stack, local, options, on_progress=show)
        reports = with_received_events(stack, reports)
        reports = with_handoff_waits(stack, reports, day)
        for report in reports:
            verified = sum(1 for f in report.files if f.verified)
            error = sum(1 for f in report.files if f.status in ERROR_JOB_STATUSES)
            total = len(report.files)
            show(report.feed, DayProgress(verified, total - verified, total, error))
    return reports


def _only(tables: FeedTables, name: str, template: Path) -> FeedTables:
    """The template's feed `name` alone; FeedError (one line) if the template has none."""
    if name not in tables:
        raise FeedError(
            f"feed {name!a} is not in the local feeds template {template}"
            f" (its feeds: {', '.join(tables)})"
        )
    return {name: tables[name]}


def _with_local_threshold(stack: LocalStack) -> LocalStack:
    if os.environ.get(ENV_LARGE_FILE_THRESHOLD_BYTES):
        return stack
    settings = replace(stack.settings, large_file_threshold_bytes=LOCAL_LARGE_FILE_THRESHOLD_BYTES)
    return replace(stack, settings=settings)


def _progress(err: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
    )


def render_reports(out: Console, reports: list[DayReport]) -> None:
    """Each feed's table and verdict, then one line on all the feeds' days together."""
    for report in reports:
        render_report(out, report, named=True)
    done = [r.feed for r in reports if r.ok]
    short = [
        f"{r.feed} {r.status}" + (", hand-off withheld" if r.result.get("handoff_problem") else "")
        for r in reports
        if not r.ok
    ]
    if not short:
        out.print(
            f"all {len(reports)} feeds' days completed, every file verified: {', '.join(done)}"
        )
    else:
        out.print(
            f"{len(short)} of {len(reports)} feeds' days did not complete: {', '.join(short)}"
        )
    for report in reports:
        if HANDOFF_WAIT in report.result:
            out.print(plain(report.result[HANDOFF_WAIT][1]), highlight=False, soft_wrap=True)


def render_report(out: Console, report: DayReport, *, named: bool = False) -> None:
    """The table of files and the verdict line (each naming the feed when `named`)."""
    feed = f"feed {report.feed}: " if named else ""
    # A job's ErrorMessage may quote a provider's value: plain text, never markup (safe_text).
    table = Table(title=plain(f"{feed}batch {report.batch_id}: {report.status}"))
    for column in ("FileID", "status", "bytes", "verified", "error"):
        table.add_column(column)
    for f in report.files:
        table.add_row(
            f.file_id,
            f.status,
            "" if f.byte_count is None else f"{f.byte_count:,}",
            "yes" if f.verified else "NO",
            plain(f.error_message or ""),
        )
    out.print(table)
    verified = sum(1 for f in report.files if f.verified)
    out.print(
        f"{feed}batch status: {report.status}; {verified}/{len(report.files)} files verified"
        " by SHA-256"
    )
    out.print(plain(result_line(report.result)), highlight=False, soft_wrap=True)
    render_handoff(out, report)


# The report's result gains `dlpipe handoff wait`'s exit code and line under this key.
HANDOFF_WAIT = "handoff_wait"


def with_handoff_waits(stack: LocalStack, reports: list[DayReport], day: str) -> list[DayReport]:
    """Each report with what `dlpipe handoff wait --feed F --date D` answers for its feed's
    day now, as a consumer would ask it (the command's own code, on the stack's bucket)."""
    ops = build_ops_context(stack.settings, stack.clients, feeds={})
    return [
        replace(report, result={**report.result, HANDOFF_WAIT: wait_line(ops, report.feed, day)})
        for report in reports
    ]


def handed_off(reports: list[DayReport]) -> bool:
    """True when `dlpipe handoff wait` answered exit 0 for every feed's day it was asked of."""
    return all(r.result[HANDOFF_WAIT][0] == 0 for r in reports if HANDOFF_WAIT in r.result)

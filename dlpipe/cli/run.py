"""`dlpipe run`: one day's batch end to end. `--local` brings up the embedded stack first."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dlpipe import metrics
from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import ENV_LARGE_FILE_THRESHOLD_BYTES, Settings
from dlpipe.domain.events import parse_polling_date
from dlpipe.local.day import DayOptions, DayReport, run_day
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.local.stack import LocalStack, local_stack
from dlpipe.local.stub.publish import default_day
from dlpipe.log import configure_logging
from dlpipe.services.orchestrator.durable import build_durable_handler

err = Console(stderr=True)
out = Console()


def _yesterday() -> str:
    return (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()


def _log_file(day: str) -> Path:
    folder = Path(".dlpipe") / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"run-{day}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.jsonl"


@click.command("run")
@click.option(
    "--local", "local", is_flag=True, help="Run on the embedded emulator + stub provider."
)
@click.option(
    "--date", "day", default=None, help="Polling date YYYY-MM-DD (default: yesterday, UTC)."
)
@click.option(
    "--files",
    type=click.IntRange(0, 500),
    default=20,
    show_default=True,
    help="--local: files the stub publishes.",
)
@click.option(
    "--workers",
    type=click.IntRange(0, 64),
    default=4,
    show_default=True,
    help="In-process downloader threads.",
)
@click.option(
    "--poll-interval",
    type=click.IntRange(1, 3600),
    default=2,
    show_default=True,
    help="--local: seconds between completion checks.",
)
def run_command(local: bool, day: str | None, files: int, workers: int, poll_interval: int) -> None:
    """Run one day's batch: create it, queue its files, download them, wait for the end."""
    try:
        polling_date = parse_polling_date(day) if day else _yesterday()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--date") from exc
    log_path = _log_file(polling_date)
    with log_path.open("a") as log_stream:
        configure_logging(stream=log_stream)
        metrics.set_sink(lambda line: print(line, file=log_stream, flush=True))
        err.print(f"logs and metrics: {log_path}")
        if local:
            report = _run_local(polling_date, files, max(workers, 1), poll_interval)
            _render(report)
            code = 0 if report.ok else 1
        else:
            code = _run_remote(polling_date)
    raise SystemExit(code)


# The stub's files are small (0-20 MiB): a local run routes those above 8 MiB to the large-file
# queue, so that `make run` exercises both queues; DLPIPE_LARGE_FILE_THRESHOLD_BYTES overrides.
LOCAL_LARGE_FILE_THRESHOLD_BYTES = 8 * 1024 * 1024


def _with_local_threshold(stack: LocalStack) -> LocalStack:
    if os.environ.get(ENV_LARGE_FILE_THRESHOLD_BYTES):
        return stack
    settings = replace(stack.settings, large_file_threshold_bytes=LOCAL_LARGE_FILE_THRESHOLD_BYTES)
    return replace(stack, settings=settings)


def _run_local(day: str, files: int, workers: int, poll_interval: int) -> DayReport:
    options = DayOptions(date=day, workers=workers, poll_interval_seconds=poll_interval)
    with local_stack() as started, _progress() as progress:
        stack = _with_local_threshold(started)
        aws = stack.emulator
        err.print(
            f"moto {aws.endpoint_url} (pid {aws.moto.pid}), DynamoDB Local "
            f"{aws.dynamodb_endpoint_url} (pid {aws.dynamodb.pid}), day {day}"
        )
        task = progress.add_task("files", total=None)
        report, _ = run_day(
            stack,
            default_day(files),
            options,
            on_progress=lambda done, total: progress.update(
                task, completed=done, total=total or None
            ),
        )
        progress.update(task, completed=len(report.files), total=len(report.files) or None)
    return report


def _run_remote(day: str) -> int:
    """Run the poller here against the configured endpoint; deployed downloaders do the files."""
    settings = Settings.from_env()
    handler = build_durable_handler(
        lambda: build_flow(settings), settings.poll_interval_seconds, settings.max_polls
    )
    budget_s = settings.poll_interval_seconds * settings.max_polls + 600.0
    result = run_durable_locally(handler, {"date": day}, skip_time=False, timeout_seconds=budget_s)
    out.print_json(json.dumps(result))
    return 0 if result.get("status") == "completed" else 1


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
    )


def _render(report: DayReport) -> None:
    table = Table(title=f"batch {report.batch_id}: {report.status}")
    for column in ("FileID", "status", "bytes", "verified", "error"):
        table.add_column(column)
    for f in report.files:
        table.add_row(
            f.file_id,
            f.status,
            "" if f.byte_count is None else f"{f.byte_count:,}",
            "yes" if f.verified else "NO",
            f.error_message or "",
        )
    out.print(table)
    verified = sum(1 for f in report.files if f.verified)
    out.print(
        f"batch status: {report.status}; {verified}/{len(report.files)} files verified by SHA-256"
    )

"""`dlpipe run`: one feed's day end to end. `--local` brings up the embedded stack first;
without it the poller runs here against the configured endpoint and that feed's provider."""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import click
from click.core import ParameterSource
from rich.console import Console

from dlpipe.cli.ops.dates import resolve_day, wall_clock_ms
from dlpipe.cli.ops.param_types import DAY, FEED
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, FeedError
from dlpipe.local.stack_feeds import LOCAL_FEEDS_TEMPLATE
from dlpipe.log import configure_logging, logging_config, restore_logging

err = Console(stderr=True)
out = Console()

LOCAL_POLL_INTERVAL_S = 2
# The stub's day, the in-process downloaders and the feeds the local stack serves.
_LOCAL_ONLY = ("files", "workers", "feeds_file")


def _log_file(day: str) -> Path:
    """This run's own log file: runs started in the same second (one per feed) never share one."""
    folder = Path(".dlpipe") / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"run-{day}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{os.getpid()}.jsonl"


def _polling_date(day: str | None) -> str:
    """The calendar date of --date (parsed by DAY, as every command's), default yesterday."""
    return resolve_day(day or "yesterday", wall_clock_ms())


def _refuse_local_only_options(ctx: click.Context, local: bool) -> None:
    if local:
        return
    for name in _LOCAL_ONLY:
        if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT:
            flag = name.replace("_", "-")
            raise click.UsageError(
                f"--{flag} applies to --local runs only (deployed downloaders do the files)"
            )


@click.command("run")
@click.option(
    "--local", "local", is_flag=True, help="Run on the embedded emulator + stub provider."
)
@click.option(
    "--date",
    "day",
    type=DAY,
    default=None,
    help="Polling date: YYYY-MM-DD, today or yesterday (default: yesterday, UTC).",
)
@click.option(
    "--files",
    type=click.IntRange(0, 500),
    default=20,
    show_default=True,
    help="--local only: files the stub publishes.",
)
@click.option(
    "--workers",
    type=click.IntRange(0, 64),
    default=4,
    show_default=True,
    help="--local only: in-process downloader threads.",
)
@click.option(
    "--poll-interval",
    type=click.IntRange(1, 3600),
    default=None,
    help=f"Seconds between completion checks [default: {LOCAL_POLL_INTERVAL_S} with --local,"
    " else DLPIPE_POLL_INTERVAL_SECONDS].",
)
@click.option(
    "--feeds-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=LOCAL_FEEDS_TEMPLATE,
    help="--local only: the feeds to run, each on its own stub provider [default: the shipped"
    " two feeds, default and vendor-b].",
)
@click.option(
    "--feed",
    "feed",
    type=FEED,
    default=DEFAULT_FEED_NAME,
    metavar="NAME",
    help=f"The feed whose day to run [default: {DEFAULT_FEED_NAME}]; with --local, only this"
    " feed of the feeds file [default: every feed].",
)
@click.option(
    "--rerun",
    is_flag=True,
    help='Run a day whose batch ended again (the orchestrator\'s {"rerun": true}): a'
    " completed day unchanged is handed off as it was, nothing written.",
)
@click.pass_context
def run_command(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context,
    local: bool,
    day: str | None,
    files: int,
    workers: int,
    poll_interval: int | None,
    feeds_file: Path,
    feed: str,
    rerun: bool,
) -> None:
    """Run one feed's day: create its batch, queue its files, download them, wait for the end."""
    # The local stack, boto3 and the durable SDK load here, when a run starts, not for `--help`.
    from dlpipe.cli.run_local import handed_off, render_reports, run_local  # noqa: PLC0415
    from dlpipe.cli.run_remote import run_remote  # noqa: PLC0415

    _refuse_local_only_options(ctx, local)
    if local and rerun:
        raise click.UsageError("--rerun applies to runs without --local (each starts afresh)")
    # --local runs every feed of its template unless one is named.
    only = feed if ctx.get_parameter_source("feed") is not ParameterSource.DEFAULT else None
    polling_date = _polling_date(day)
    log_path = _log_file(polling_date)
    with log_path.open("a") as log_stream, _logging_to(log_stream):
        if local:
            interval = poll_interval or LOCAL_POLL_INTERVAL_S
            try:
                reports = run_local(
                    err,
                    polling_date,
                    files,
                    max(workers, 1),
                    interval,
                    feeds_template=feeds_file,
                    only=only,
                    log_path=log_path,
                )
            except FeedError as exc:
                raise click.ClickException(str(exc)) from exc
            render_reports(out, reports)
            code = 0 if all(report.ok for report in reports) and handed_off(reports) else 1
        else:
            code = run_remote(err, polling_date, feed, poll_interval, log_path, rerun)
    raise SystemExit(code)


@contextmanager
def _logging_to(stream: TextIO) -> Iterator[None]:
    """Logs, metrics and the durable SDK's own log records (tracebacks included) go to the
    run's log file: the terminal gets progress and one line per failure. The metric sink and
    the log configuration are put back when the file closes (a run called in-process, as the
    CLI tests do, must leave nothing writing to a closed file)."""
    from dlpipe import metrics  # noqa: PLC0415 - aws_lambda_powertools, botocore: not for `--help`

    logs_before = logging_config()
    configure_logging(stream=stream)
    before = metrics.set_sink(lambda line: print(line, file=stream, flush=True))
    logging.basicConfig(stream=stream, level=logging.WARNING, force=True)
    try:
        yield
    finally:
        metrics.set_sink(before)
        restore_logging(logs_before)

"""`dlpipe run` without `--local`: the feed's poller here against the configured endpoint
(dlpipe/cli/run.py loads this module when such a run starts: it brings boto3 and the durable
SDK)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console

from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.bootstrap.orchestrator import build_flow, build_orchestrator_handler, check_ready
from dlpipe.cli.outcome_text import result_line, run_exit_code
from dlpipe.cli.run_feed import run_feed
from dlpipe.cli.run_progress import PollReporter, ReportingFlow
from dlpipe.cli.run_summary import stored_figures
from dlpipe.cli.run_wait import ready_within_outage
from dlpipe.cli.safe_text import plain
from dlpipe.config import Settings
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.services.ops.waiting import idle_seconds, waiting_work


def _idle_probe(settings: Settings) -> Callable[[], int | None]:
    """Seconds no worker has taken the queued work (dlpipe.domain.waiting), for the progress."""
    ops = build_ops_context(settings)
    return lambda: idle_seconds(ops, waiting_work(ops))


def run_remote(  # noqa: PLR0917 - the command's options, passed on
    err: Console,
    day: str,
    feed: str,
    poll_interval: int | None,
    log_path: Path,
    rerun: bool = False,
) -> int:
    """Run the feed's poller here against the configured endpoint; deployed downloaders do the
    files. A run that cannot start says why in one line (an unknown feed, check_ready) before
    anything else; an unavailable provider is waited for first (dlpipe/cli/run_wait.py)."""
    settings = Settings.from_env()
    if poll_interval is not None:
        settings = replace(settings, poll_interval_seconds=poll_interval)
    chosen = run_feed(settings, feed, poll_interval)
    own = chosen.settings(settings)  # the feed's provider, token and polling; FeedError if unknown
    # A provider outage at the day's start is waited out within the feed's outage budget.
    ready_within_outage(lambda: check_ready(own, day), own.provider_outage_budget_seconds, err)
    build_flow(own)  # the feed's settings' own checks (recovery bound), before any step
    err.print(f"logs and metrics: {log_path}", highlight=False)
    reporter = PollReporter(
        err, own.poll_interval_seconds, own.max_polls, idle_probe=_idle_probe(settings)
    )
    # Wired as the Lambda is (the outage budgets from the settings); the run's own timeout
    # holds an SQS / DynamoDB outage waited out within its budget.
    handler = build_orchestrator_handler(
        settings, lambda of_feed: ReportingFlow(build_flow(of_feed), reporter), feeds=chosen.source
    )
    budget_s = own.poll_interval_seconds * own.max_polls + own.aws_outage_budget_seconds + 600.0
    err.print(f"day {day}{chosen.of_feed}: starting the batch", highlight=False)
    with reporter.live():
        result = run_durable_locally(
            handler, chosen.event(day, rerun), skip_time=False, timeout_seconds=budget_s
        )
    # The batch's stored figures: the files it queued, the batches it adopted (a rerun).
    result = stored_figures(build_ops_context(settings), result)
    # stdout: the result as one JSON line for a script; the terminal's reader gets the line below.
    click.echo(json.dumps(result, sort_keys=True))
    err.print(plain(result_line(result)), highlight=False, soft_wrap=True)
    return run_exit_code(result)

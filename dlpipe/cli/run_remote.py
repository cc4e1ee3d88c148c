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

from dlpipe.adapters.aws import PROBE_CONFIG, AwsClients
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.bootstrap.orchestrator import build_flow, build_orchestrator_handler, check_ready
from dlpipe.cli.outcome_text import result_line, run_exit_code
from dlpipe.cli.run_feed import RunFeed, run_feed
from dlpipe.cli.run_progress import PollReporter, ReportingFlow
from dlpipe.cli.run_summary import stored_figures
from dlpipe.cli.run_wait import OutageBudgets, ready_within_outage
from dlpipe.cli.safe_text import plain
from dlpipe.config import Settings
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.services.ops.waiting import idle_seconds, waiting_work


def _idle_probe(settings: Settings) -> Callable[[], int | None]:
    """Seconds no worker has taken the queued work (dlpipe.domain.waiting), for the progress."""
    ops = build_ops_context(settings)
    return lambda: idle_seconds(ops, waiting_work(ops))


def _run_feed(settings: Settings, name: str, poll_interval: int | None) -> RunFeed:
    """The feed of the run (dlpipe/cli/run_feed.py: the feeds file, then the SSM parameters,
    `--poll-interval` over the feed's own polling), its parameter read with the probes'
    client (two attempts, 2 s to connect): SSM throttling or failing reaches the start's wait
    within seconds, and that wait says so, not a minute of the client's own retries later. The
    day's steps find the feed read (the source keeps it), so they never use this client."""
    clients = AwsClients(settings, config=PROBE_CONFIG) if settings.feeds_parameter_path else None
    return run_feed(settings, name, poll_interval, clients)


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
    anything else; an outage of the provider, SSM, SQS or DynamoDB is waited for first
    (dlpipe/cli/run_wait.py)."""
    settings = Settings.from_env()
    if poll_interval is not None:
        settings = replace(settings, poll_interval_seconds=poll_interval)
    chosen = _run_feed(settings, feed, poll_interval)

    def ready() -> Settings:
        own = chosen.settings(settings)  # the feed's provider, token, polling; FeedError if unknown
        check_ready(own, day)
        return own

    # An outage at the day's start, of SSM (the feed's lookup), of what the checks ask (DynamoDB,
    # SQS, Secrets Manager, the provider), is waited out within the orchestrator's budget for it.
    own = ready_within_outage(ready, OutageBudgets.of(settings), err)
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

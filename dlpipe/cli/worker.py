"""`dlpipe worker`: the long-poll download worker (registered in dlpipe.cli.main)."""

from __future__ import annotations

import math
import signal
from types import FrameType
from typing import Any

import click

from dlpipe.config import INT_SETTINGS, ConfigError, Settings
from dlpipe.domain.feeds import FeedError
from dlpipe.log import configure_logging

# Every numeric option has a minimum and a maximum (tests/unit/test_feed_ranges.py): a value
# past them is one usage line, never a traceback from the time arithmetic it would reach.
_DAY_S = 86_400
# A file held past SQS's longest visibility timeout (the lease's maximum) is seen by another
# worker anyway: no grace longer than that.
_GRACE_MAX_S = INT_SETTINGS["lease_seconds"].maximum


class _Seconds(click.FloatRange):
    """A number of seconds within the range; nan too is refused (it compares with no bound)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if math.isnan(seconds):
            self.fail(f"{value} is not in the range {self.min}<=x<={self.max}.", param, ctx)
        return seconds


@click.command("worker")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="Threads shared by the feeds' queues (each feed at most its share of them), and as many"
    " for the large-file queue when configured.",
)
@click.option(
    "--wait-seconds",
    type=click.IntRange(0, 20),
    default=20,
    show_default=True,
    help="SQS long-poll wait per receive.",
)
@click.option(
    "--max-messages",
    type=click.IntRange(1, 10),
    default=1,
    show_default=True,
    help="Messages per receive (each thread processes them one after another).",
)
@click.option(
    "--exit-when-idle",
    type=_Seconds(0, _DAY_S),
    default=None,
    metavar="SECONDS",
    help="Exit once the queue has been empty this long (local runs, tests).",
)
@click.option(
    "--grace-seconds",
    type=_Seconds(0, _GRACE_MAX_S),
    default=20.0,
    show_default=True,
    help="On SIGTERM/SIGINT: time for each file in progress, or received by a long poll still open, to finish before it is released.",
)
@click.option(
    "--time-budget-seconds",
    type=_Seconds(1, _DAY_S),
    default=None,
    metavar="SECONDS",
    help="Per file: fail files that need longer at the minimum throughput (default: no limit).",
)
def worker_command(  # noqa: PLR0917 - click passes one argument per option
    concurrency: int,
    wait_seconds: int,
    max_messages: int,
    exit_when_idle: float | None,
    grace_seconds: float,
    time_budget_seconds: float | None,
) -> None:
    """Long-poll the download queue (and the large-file queue, if configured) until
    SIGTERM/SIGINT."""
    # boto3, requests and cryptography load when the worker starts, not for `--help`.
    from dlpipe.adapters.aws import AwsClients  # noqa: PLC0415
    from dlpipe.bootstrap.download import build_service  # noqa: PLC0415
    from dlpipe.entrypoints.pool import build_worker_pool  # noqa: PLC0415
    from dlpipe.entrypoints.worker import WorkerOptions  # noqa: PLC0415
    from dlpipe.local.testpoints import pause_from_env  # noqa: PLC0415

    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level)
        clients = AwsClients(settings)
        settings.require("queue_url")
        service = build_service(settings, clients, pause=pause_from_env())
    except (ConfigError, FeedError) as exc:  # the feeds file, too, is read before any work
        raise click.ClickException(str(exc)) from exc
    options = WorkerOptions(
        concurrency, wait_seconds, max_messages, exit_when_idle, grace_seconds, time_budget_seconds
    )
    worker = build_worker_pool(settings, clients, options, service=service)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        worker.request_stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    raise SystemExit(worker.run())


if __name__ == "__main__":
    worker_command()

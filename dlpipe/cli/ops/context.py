"""What every ops command runs against: settings, clients and a clock, injectable for tests."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

import click

from dlpipe.aws import AwsClients
from dlpipe.config import Settings
from dlpipe.log import configure_logging
from dlpipe.queue import JobQueue
from records.batches_table import BatchesTable
from records.clock import Clock, SystemClock
from records.jobs_table import JobsTable

if TYPE_CHECKING:
    from ops.backfill import Starter

P = ParamSpec("P")
R = TypeVar("R")

# AWS short polls sample a subset of SQS servers; one second of long poll sees them all.
RECEIVE_WAIT_SECONDS = 1


@dataclass
class OpsContext:
    """The dependencies of the ops commands; `dlpipe.cli` builds it from the environment."""

    settings: Settings
    clients: AwsClients
    clock: Clock
    starter: Starter | None = None  # backfill's poller starter; None: the orchestrator Lambda
    receive_wait_seconds: int = RECEIVE_WAIT_SECONDS

    def now_ms(self) -> int:
        """The current time in epoch milliseconds."""
        return self.clock.now_ms()

    def jobs(self) -> JobsTable:
        """The jobs table."""
        return JobsTable(self.clients.dynamodb, self.settings.jobs_table, self.clock)

    def batches(self) -> BatchesTable:
        """The batches table."""
        return BatchesTable(self.clients.dynamodb, self.settings.batches_table, self.clock)

    def queue(self) -> JobQueue:
        """The download queues, routed by size (ConfigError if DLPIPE_QUEUE_URL is unset)."""
        return JobQueue.from_settings(self.clients.sqs, self.settings)


class _Stderr:
    """Writes to whatever sys.stderr is at the time, so logs never land on stdout."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def context_from_env() -> OpsContext:
    """Settings from the environment, real clients, the wall clock; logs to stderr."""
    settings = Settings.from_env()
    configure_logging(settings.log_level, stream=_Stderr())
    return OpsContext(settings=settings, clients=AwsClients(settings), clock=SystemClock())


def get_context(ctx: click.Context) -> OpsContext:
    """The OpsContext passed as click's `obj`, or one built from the environment."""
    found = ctx.find_object(OpsContext)
    if found is None:
        found = context_from_env()
        ctx.obj = found
    return found


def pass_ops(
    command: Callable[Concatenate[OpsContext, P], R],
) -> Callable[P, R]:
    """Decorator: call `command` with the OpsContext as its first argument."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return command(get_context(click.get_current_context()), *args, **kwargs)

    return wrapper

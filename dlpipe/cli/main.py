"""The `dlpipe` command line: the group, error rendering, and where each command lives."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click
from botocore.exceptions import (
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from dlpipe.cli.local import local_group
from dlpipe.cli.ops.commands import COMMANDS as OPS_COMMANDS
from dlpipe.cli.provider_stub import provider_stub
from dlpipe.cli.run import run_command
from dlpipe.cli.safe_text import error_line
from dlpipe.cli.ui import ui_command
from dlpipe.cli.worker import worker_command
from dlpipe.config import ConfigError
from dlpipe.domain.download_errors import InvalidPrivateKeyError
from dlpipe.domain.errors import NotReadyError, RecordsError
from dlpipe.domain.feeds import FeedError
from dlpipe.local.durable_runner import LocalRunError
from dlpipe.local.dynamodb_local import DynamoDBLocalError
from dlpipe.local.emulator import EmulatorError
from dlpipe.local.localstack import use_localstack
from dlpipe.services.ops.errors import NoBatchForDateError

# Expected failures become one line and exit code 1, never a traceback. Every error line of the
# CLI starts `dlpipe: ` (ERROR_PREFIX), usage errors included, and shows control characters
# as escapes: messages may quote a provider's or a record's value.
_EXPECTED: dict[type[Exception], str] = {
    EndpointConnectionError: "cannot reach AWS at {exc.kwargs[endpoint_url]} (is the emulator running? `dlpipe local up`)",
    NoCredentialsError: "no AWS credentials found (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)",
    PartialCredentialsError: "incomplete AWS credentials: {exc}",
    NoRegionError: "no AWS region configured (set AWS_REGION)",
    ConfigError: "configuration error: {exc}",
    RecordsError: "{exc}",
    DynamoDBLocalError: "{exc}",
    EmulatorError: "{exc}",
    NoBatchForDateError: "{exc}",
    NotReadyError: "{exc}",
    LocalRunError: "the run failed: {exc} (details in the log file)",
    FeedError: "{exc}",
    InvalidPrivateKeyError: "configuration error: {exc}",
}


@click.group()
@click.version_option(package_name="dlpipe")
def cli() -> None:
    """dlpipe: daily download-pipeline orchestrator on AWS (DLPIPE_LOCALSTACK=1: on LocalStack)."""
    # Before any command builds a client; the variables reach the processes it starts too.
    use_localstack(os.environ)


cli.add_command(local_group)
cli.add_command(run_command)
cli.add_command(worker_command)
cli.add_command(ui_command)
cli.add_command(provider_stub)
for _command in OPS_COMMANDS:
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    try:
        code = cli(standalone_mode=False)
    except click.exceptions.Abort:
        fail("aborted", 130)
    except click.UsageError as exc:
        # One line, like every expected failure (click's own rendering adds a usage block).
        command = exc.ctx.command_path if exc.ctx else "dlpipe"
        fail(f"{exc.format_message()} (see `{command} --help`)", exc.exit_code)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except tuple(_EXPECTED) as exc:
        template = next(t for cls, t in _EXPECTED.items() if isinstance(exc, cls))
        fail(template.format(exc=exc), 1)
    # Without standalone mode, click returns ctx.exit(n)'s code instead of exiting with it.
    sys.exit(code if isinstance(code, int) else 0)


def fail(message: str, code: int) -> NoReturn:
    """Print `dlpipe: <message>` as one line on stderr and exit with `code`."""
    click.echo(error_line(message), err=True)
    sys.exit(code)

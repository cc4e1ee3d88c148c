"""The `dlpipe` command line: the group, error rendering, and where each command lives."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from dlpipe.cli.lazy import LazyCommand, LazyGroup
from dlpipe.cli.safe_text import error_line

# Each command's module is imported when that command runs (or shows its own help): `dlpipe
# --help` lists them from here. The short help is each command's first help sentence
# (tests/unit/test_cli_lazy.py compares them).
COMMANDS: dict[str, LazyCommand] = {
    "backfill": LazyCommand(
        "dlpipe.cli.ops.days:backfill_command",
        "Start the poller for each date of the feed without a completed batch (at most 92 days).",
    ),
    "batch": LazyCommand(
        "dlpipe.cli.ops.days:batch_group", "Inspect daily batches (PollingDateIndex, BatchIndex)."
    ),
    "dlq": LazyCommand(
        "dlpipe.cli.ops.dlq:dlq_group", "The download queue's dead-letter queue (DLPIPE_DLQ_URL)."
    ),
    "handoff": LazyCommand(
        "dlpipe.cli.ops.handoff:handoff_group",
        "A consumer's view of a feed's day: is it ready, does its manifest verify?",
    ),
    "jobs": LazyCommand(
        "dlpipe.cli.ops.jobs:jobs_group",
        "Inspect and repair file jobs (StatusIndex, BatchIndex; never a Scan).",
    ),
    "local": LazyCommand(
        "dlpipe.cli.local:local_group",
        "Run dlpipe's embedded AWS emulator (moto, no Docker) and provision it.",
    ),
    "provider-stub": LazyCommand(
        "dlpipe.cli.provider_stub:provider_stub",
        "Serve the provider API on 127.0.0.1 (needs AWS_ENDPOINT_URL pointing at the emulator).",
    ),
    "run": LazyCommand(
        "dlpipe.cli.run:run_command",
        "Run one feed's day: create its batch, queue its files, download them, wait for the end.",
    ),
    "status": LazyCommand(
        "dlpipe.cli.ops.status:status_command",
        "One screen: each feed's batches and counts of the date, stuck jobs, DLQ depth.",
    ),
    "tables": LazyCommand(
        "dlpipe.cli.ops.tables:tables_group", "The tracking tables' upgrade steps."
    ),
    "ui": LazyCommand(
        "dlpipe.cli.ui:ui_command",
        "Serve a read-only web view of the batches and files (Ctrl-C stops it).",
    ),
    "worker": LazyCommand(
        "dlpipe.cli.worker:worker_command",
        "Long-poll the download queue (and the large-file queue, if configured) until"
        " SIGTERM/SIGINT.",
    ),
}

# Expected failures become one line and exit code 1, never a traceback. Every error line of the
# CLI starts `dlpipe: ` (ERROR_PREFIX), usage errors included, and shows control characters
# as escapes: messages may quote a provider's or a record's value. Each class is named by its
# module, looked up only if that module is loaded: an exception of a class never imported
# cannot have been raised, and importing botocore or the local stack to compare costs ~1 s.
EXPECTED: tuple[tuple[str, str, str], ...] = (
    ("botocore.exceptions", "EndpointConnectionError", "cannot reach AWS at {exc.kwargs[endpoint_url]} (is the emulator running? `dlpipe local up`)"),
    ("botocore.exceptions", "NoCredentialsError", "no AWS credentials found (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"),
    ("botocore.exceptions", "PartialCredentialsError", "incomplete AWS credentials: {exc}"),
    ("botocore.exceptions", "NoRegionError", "no AWS region configured (set AWS_REGION)"),
    ("dlpipe.config", "ConfigError", "configuration error: {exc}"),
    ("dlpipe.domain.errors", "RecordsError", "{exc}"),
    ("dlpipe.local.dynamodb_local", "DynamoDBLocalError", "{exc}"),
    ("dlpipe.local.emulator", "EmulatorError", "{exc}"),
    ("dlpipe.services.ops.errors", "NoBatchForDateError", "{exc}"),
    ("dlpipe.domain.errors", "NotReadyError", "{exc}"),
    ("dlpipe.local.durable_runner", "LocalRunError", "the run failed: {exc} (details in the log file)"),
    ("dlpipe.domain.feeds", "FeedError", "{exc}"),
    ("dlpipe.domain.download_errors", "InvalidPrivateKeyError", "configuration error: {exc}"),
)  # fmt: skip


@click.group(cls=LazyGroup, lazy_commands=COMMANDS)
@click.version_option(package_name="dlpipe")
def cli() -> None:
    """dlpipe: daily download-pipeline orchestrator on AWS (DLPIPE_LOCALSTACK=1: on LocalStack)."""
    from dlpipe.local.localstack import use_localstack  # noqa: PLC0415 - not for `--help`

    # Before any command builds a client; the variables reach the processes it starts too.
    use_localstack(os.environ)


def expected_template(exc: BaseException) -> str | None:
    """The one-line template of an expected failure, None for anything else."""
    for module, name, template in EXPECTED:
        loaded = sys.modules.get(module)
        cls = getattr(loaded, name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return template
    return None


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
    except Exception as exc:
        template = expected_template(exc)
        if template is None:
            raise
        fail(template.format(exc=exc), 1)
    # Without standalone mode, click returns ctx.exit(n)'s code instead of exiting with it.
    sys.exit(code if isinstance(code, int) else 0)


def fail(message: str, code: int) -> NoReturn:
    """Print `dlpipe: <message>` as one line on stderr and exit with `code`."""
    click.echo(error_line(message), err=True)
    sys.exit(code)

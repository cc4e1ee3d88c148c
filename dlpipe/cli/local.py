"""`dlpipe local ...`: run and provision the embedded emulator (and a stub provider)."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from dlpipe.cli.ops.dates import resolve_day, wall_clock_ms
from dlpipe.cli.ops.param_types import DAY
from dlpipe.config import (
    ENV_FEEDS_PARAMETER_PATH,
    ENV_LOG_LEVEL,
    ENV_PRIVATE_KEY_FILE,
    SERVICE_ENDPOINT_ENV,
    Settings,
)
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.local.stack_feeds import MAX_LOCAL_FEEDS, read_template

# The emulator, provisioning and boto3 load when a command runs, not for `--help`.
if TYPE_CHECKING:
    from rich.table import Table

    from dlpipe.adapters.aws import AwsClients
    from dlpipe.local.provision import Provisioned
    from dlpipe.local.up import LocalUp, StubOptions

console = Console(stderr=True)
# The hints' command as README's shells type it once they activated the virtualenv.
DLPIPE = "dlpipe"


def provisioned_table(clients: AwsClients, provisioned: Provisioned) -> Table:
    """A rich table describing the provisioned tables (keys, GSIs, TTL) and queues."""
    from rich.table import Table  # noqa: PLC0415

    table = Table(title="dlpipe resources on the emulator")
    for column in ("resource", "name", "keys", "indexes", "ttl"):
        table.add_column(column)
    for name in (provisioned.jobs_table, provisioned.batches_table):
        described = clients.dynamodb.describe_table(TableName=name)["Table"]
        ttl = clients.dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        keys = ", ".join(k["AttributeName"] for k in described["KeySchema"])
        indexes = "; ".join(
            f"{g['IndexName']}({', '.join(k['AttributeName'] for k in g['KeySchema'])})"
            for g in described.get("GlobalSecondaryIndexes", [])
        )
        table.add_row("table", name, keys, indexes, ttl.get("AttributeName", "-"))
    queues = (("queue", provisioned.queue_url), ("dlq", provisioned.dlq_url))
    for label, url in (*queues, ("large queue", provisioned.large_queue_url)):
        if url:
            table.add_row(label, url.rsplit("/", 1)[-1], "", "", "")
    if provisioned.destination_bucket:
        table.add_row("bucket", provisioned.destination_bucket, "", "", "")
    return table


@click.group("local")
def local_group() -> None:
    """Run dlpipe's embedded AWS emulator (moto, no Docker) and provision it."""


def _date(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
    """The calendar date of --date (YYYY-MM-DD, today, yesterday; default yesterday, UTC)."""
    return resolve_day(value or "yesterday", wall_clock_ms())


def _refuse_taken_ports(ports: dict[str, int]) -> None:
    """One line naming the flag of a port that something else already listens on, before
    anything starts (a child's own failure to bind says less)."""
    for flag, port in ports.items():
        if port and not _port_free(port):
            raise click.ClickException(
                f"port {port} of 127.0.0.1 is in use: choose another with {flag}, or {flag} 0"
                " for a free one"
            )


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        # As a server binds: a port left in TIME_WAIT is free, one with a listener is not.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@local_group.command("up")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=4566,
    show_default=True,
    help="moto's port; 0 picks a free port.",
)
@click.option(
    "--dynamodb-port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="DynamoDB Local's port; 0 picks a free port.",
)
@click.option(
    "--stub/--no-stub",
    default=True,
    show_default=True,
    help="Also serve a stub provider (own key pair under .dlpipe/local-up/, own token).",
)
@click.option(
    "--stub-port",
    type=click.IntRange(0, 65535),
    default=8900,
    show_default=True,
    help="The stub provider's port; 0 picks a free port.",
)
@click.option(
    "--date",
    "day",
    type=DAY,
    default=None,
    callback=_date,
    help="The day the stub publishes at start: YYYY-MM-DD, today or yesterday (default:"
    " yesterday, UTC); others on request.",
)
@click.option(
    "--files",
    type=click.IntRange(0, 500),
    default=20,
    show_default=True,
    help="Files per day each stub publishes.",
)
@click.option(
    "--feeds",
    type=click.IntRange(1, MAX_LOCAL_FEEDS),
    default=1,
    show_default=True,
    help="Feeds served, one stub provider each (own key pair and token): the default feed,"
    " then feed-2 .. feed-N, each written as an SSM parameter under DLPIPE_FEEDS_PARAMETER_PATH.",
)
@click.option(
    "--feeds-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A feeds template (README: Adding a feed locally) instead of --feeds: each of its"
    " feeds served as --feeds serves feed-2 .. feed-N.",
)
def up(  # noqa: PLR0917 - click passes one argument per option
    port: int,
    dynamodb_port: int,
    stub: bool,
    stub_port: int,
    day: str,
    files: int,
    feeds: int,
    feeds_file: Path | None,
) -> None:
    """Start the local AWS (moto + DynamoDB Local) and a stub provider in the foreground,
    provision it, and print the `export` lines another shell pastes to use it."""
    from dlpipe.local.dynamodb_local import DynamoDBLocalError  # noqa: PLC0415
    from dlpipe.local.emulator import EmulatorError  # noqa: PLC0415
    from dlpipe.local.up import StubOptions, local_up  # noqa: PLC0415
    from dlpipe.log import configure_logging  # noqa: PLC0415

    if feeds > 1 and not stub:
        raise click.UsageError("--feeds serves stub providers: it cannot go with --no-stub")
    if feeds_file is not None and (feeds > 1 or not stub):
        raise click.UsageError("--feeds-file names the feeds served: not with --feeds or --no-stub")
    tables = read_template(feeds_file) if feeds_file else None  # one line, before anything starts
    ports = {"--port": port, "--dynamodb-port": dynamodb_port}
    _refuse_taken_ports({**ports, "--stub-port": stub_port} if stub else ports)
    options = (
        StubOptions(date=day, files=files, port=stub_port, feeds=feeds, tables=tables)
        if stub
        else None
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    # JSON lines on stderr until the stack's own log file takes them (local_up, with a stub),
    # and again after it closed.
    configure_logging(os.environ.get(ENV_LOG_LEVEL) or "INFO")
    try:
        with local_up(port, dynamodb_port, options) as running:
            console.print(provisioned_table(running.clients, running.provisioned))
            _print_exports(running, options)
            while not stop.wait(0.5):
                pass
            console.print("stopping: the stub provider(s), moto and DynamoDB Local")
    except (EmulatorError, DynamoDBLocalError) as exc:
        hint = "; --port 0 --dynamodb-port 0 --stub-port 0 pick free ports"
        raise click.ClickException(f"{exc}{hint if 'in use' in str(exc) else ''}") from exc


def _print_exports(running: LocalUp, options: StubOptions | None) -> None:
    """stdout: the export lines and nothing else but comments; stderr: what runs where."""
    click.echo("# In another shell, paste these lines:")
    for key, value in running.environment.items():
        click.echo(f"export {key}={shlex.quote(value)}")
    aws = running.emulator
    console.print(
        f"moto at {aws.endpoint_url} (pid {aws.moto.pid}), DynamoDB Local at "
        f"{aws.dynamodb_endpoint_url} (pid {aws.dynamodb.pid})",
        highlight=False,
    )
    if options is not None:
        console.print(
            f"stub provider at {running.stub_url}: {options.files} file(s) published for "
            f"{options.date}; private key {running.environment[ENV_PRIVATE_KEY_FILE]} (0600)",
            highlight=False,
        )
        # Once, whole (never wrapped): the stubs' JSON lines are there, not on this terminal.
        console.print(f"stub provider logs: {running.stub_log}", highlight=False, soft_wrap=True)
        for name, url in list(running.stub_urls.items())[1:]:
            console.print(
                f"feed {name}: stub provider at {url}; its settings, key and token files are in "
                f"the SSM parameter {running.environment[ENV_FEEDS_PARAMETER_PATH]}/{name}",
                highlight=False,
            )
        for line in next_steps(options.date, list(running.stub_urls)):
            click.echo(f"# then: {line}")
    downstream = running.provisioned.downstream_queue_url
    if downstream:
        click.echo(f"# hand-off events (Day Completed, ...) arrive on the queue {downstream}")
    click.echo("# Ctrl-C here stops everything", nl=True)
    sys.stdout.flush()


def next_steps(day: str, feeds: list[str]) -> list[str]:
    """A worker and the default feed's day, then one `dlpipe run` per named feed. The worker
    runs until stopped (`kill %1`): one that exits when idle would be gone before the named
    feeds' days, typed after the first one completes, are queued."""
    first = f"{DLPIPE} worker > .dlpipe/worker.log 2>&1 &  {DLPIPE} run --date {day}"
    named = [name for name in feeds if name != DEFAULT_FEED_NAME]
    return [first, *(f"{DLPIPE} run --date {day} --feed {name}" for name in named)]


@local_group.command("provision")
def provision_command() -> None:
    """Create the tables, queues and buckets of terraform/ at AWS_ENDPOINT_URL (idempotent;
    each service at its AWS_ENDPOINT_URL_<SERVICE> when set, LocalStack's with
    DLPIPE_LOCALSTACK=1)."""
    from dlpipe.adapters.aws import AwsClients  # noqa: PLC0415
    from dlpipe.local.provision import provision  # noqa: PLC0415

    settings = Settings.from_env()
    if not all(settings.endpoint_for(s) for s in SERVICE_ENDPOINT_ENV if s != "lambda"):
        raise click.ClickException(
            "AWS_ENDPOINT_URL is not set (nor DLPIPE_LOCALSTACK=1): provision targets an emulator only"
        )
    clients = AwsClients(settings)
    provisioned = provision(clients)
    console.print(provisioned_table(clients, provisioned))

"""`dlpipe local ...`: run and provision the embedded emulator."""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import click
from rich.console import Console
from rich.table import Table

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import (
    ENV_DEST_BUCKET,
    ENV_DLQ_URL,
    ENV_LARGE_QUEUE_URL,
    ENV_QUEUE_URL,
    Settings,
)
from dlpipe.local.dynamodb_local import DynamoDBLocalError
from dlpipe.local.emulator import EmulatorError, LocalAws
from dlpipe.local.provision import Provisioned, provision

console = Console(stderr=True)


def provisioned_table(clients: AwsClients, provisioned: Provisioned) -> Table:
    """A rich table describing the provisioned tables (keys, GSIs, TTL) and queues."""
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


def provisioned_environment(emulator: LocalAws, provisioned: Provisioned) -> dict[str, str]:
    """The variables a second shell sets to use the provisioned emulator."""
    env = emulator.environment()
    for key, value in (
        (ENV_QUEUE_URL, provisioned.queue_url),
        (ENV_DLQ_URL, provisioned.dlq_url),
        (ENV_DEST_BUCKET, provisioned.destination_bucket),
        (ENV_LARGE_QUEUE_URL, provisioned.large_queue_url),
    ):
        if value:
            env[key] = value
    return env


@click.group("local")
def local_group() -> None:
    """Run dlpipe's embedded AWS emulator (moto, no Docker) and provision it."""


@local_group.command("up")
@click.option(
    "--port", type=int, default=4566, show_default=True, help="moto's port; 0 picks a free port."
)
@click.option(
    "--dynamodb-port",
    type=int,
    default=8000,
    show_default=True,
    help="DynamoDB Local's port; 0 picks a free port.",
)
def up(port: int, dynamodb_port: int) -> None:
    """Start the local AWS (moto + DynamoDB Local) in the foreground, provision it, and print
    the environment to use it."""
    emulator = LocalAws(port=port, dynamodb_port=dynamodb_port)
    try:
        emulator.start()
    except (EmulatorError, DynamoDBLocalError) as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        endpoint = emulator.endpoint_url
        os.environ.update(emulator.environment())
        clients = AwsClients(Settings.from_env())
        provisioned = provision(clients)
        console.print(provisioned_table(clients, provisioned))
        click.echo("# In another shell:")
        for key, value in provisioned_environment(emulator, provisioned).items():
            click.echo(f"export {key}={value}")
        console.print(
            f"moto at {endpoint} (pid {emulator.moto.pid}), DynamoDB Local at "
            f"{emulator.dynamodb_endpoint_url} (pid {emulator.dynamodb.pid}); Ctrl-C stops both"
        )
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    finally:
        emulator.stop()


@local_group.command("provision")
def provision_command() -> None:
    """Create the tables, queues and buckets of terraform/ at AWS_ENDPOINT_URL (idempotent;
    tables at AWS_ENDPOINT_URL_DYNAMODB when set)."""
    settings = Settings.from_env()
    if not settings.endpoint_url:
        raise click.ClickException(
            "AWS_ENDPOINT_URL is not set: provision targets an emulator only"
        )
    clients = AwsClients(settings)
    provisioned = provision(clients)
    console.print(provisioned_table(clients, provisioned))

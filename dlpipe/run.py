"""`dlpipe run`: the main job. `--local` brings up the embedded stack first."""

from __future__ import annotations

import os

import click
from rich.console import Console

from dlpipe.aws import AwsClients
from dlpipe.config import Settings
from dlpipe.local.cli import provisioned_table
from dlpipe.local.emulator import Emulator, local_environment
from dlpipe.local.provision import provision

console = Console(stderr=True)


@click.command("run")
@click.option(
    "--local", "local", is_flag=True, help="Run on the embedded emulator + stub provider."
)
@click.option("--date", "day", default=None, help="Polling date YYYY-MM-DD (default: yesterday).")
def run_command(local: bool, day: str | None) -> None:
    """Run one day's batch end to end."""
    if not local:
        raise click.ClickException("only --local is available yet")
    with Emulator() as emulator:
        os.environ.update(local_environment(emulator.endpoint_url))
        clients = AwsClients(Settings.from_env())
        provisioned = provision(clients)
        console.print(provisioned_table(clients, provisioned))
        console.print(
            f"emulator at {emulator.endpoint_url} (pid {emulator.pid}) provisioned; stopping"
        )
    _ = day

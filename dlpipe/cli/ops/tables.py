"""`dlpipe tables migrate`: the one-off upgrade step after StatusIndex and BatchIndex were
replaced (dlpipe/adapters/jobs_migrate.py)."""

from __future__ import annotations

import click

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_migrate import MigrationCount, migrate_index_keys
from dlpipe.cli.ops.context import pass_ops
from dlpipe.services.ops.context import OpsContext


@click.group("tables")
def tables_group() -> None:
    """The tracking tables' upgrade steps."""


@tables_group.command("migrate")
@pass_ops
def migrate_command(ops: OpsContext) -> None:
    """Index the jobs written before the sharded indexes: set BatchShard on every job and
    StatusShard on the pending ones. Run once after the `terraform apply` that replaced the
    jobs table's indexes (when `dlpipe status` no longer says an index is being built).

    It SCANS the whole jobs table (the only Scan dlpipe makes: this one-off operator command;
    it needs dynamodb:Scan on the jobs table), a page of 1,000 at a time, with a running count
    on stderr. Safe to re-run and to run while the pipeline writes: each update is
    conditional on the job still lacking BatchShard and unchanged since the Scan read it."""
    table = ops.settings.jobs_table
    clients = AwsClients(ops.settings)

    def progress(count: MigrationCount) -> None:
        click.echo(f"scanned {count.scanned}, migrated {count.migrated}", err=True)

    done = migrate_index_keys(clients.dynamodb, table, on_page=progress)
    click.echo(
        f"{table}: {done.scanned} jobs scanned, {done.migrated} migrated, "
        f"{done.already} already indexed, {done.skipped} skipped (moved meanwhile or "
        "unreadable: run it again)"
    )

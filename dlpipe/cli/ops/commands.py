"""The ops commands of `dlpipe`, ready to be added to its click group."""

from __future__ import annotations

import click

from dlpipe.cli.ops.days import backfill_command, batch_group
from dlpipe.cli.ops.dlq import dlq_group
from dlpipe.cli.ops.handoff import handoff_group
from dlpipe.cli.ops.jobs import jobs_group
from dlpipe.cli.ops.status import status_command
from dlpipe.cli.ops.tables import tables_group

COMMANDS: tuple[click.Command, ...] = (
    jobs_group,
    batch_group,
    dlq_group,
    status_command,
    backfill_command,
    handoff_group,
    tables_group,
)

__all__ = [
    "COMMANDS",
    "backfill_command",
    "batch_group",
    "dlq_group",
    "handoff_group",
    "jobs_group",
    "status_command",
    "tables_group",
]

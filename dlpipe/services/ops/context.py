"""What every operator use case runs against: settings, clients and a clock, injectable for tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.config import Settings
from dlpipe.domain.clock import Clock

if TYPE_CHECKING:
    from dlpipe.services.ops.backfill import Starter

# AWS short polls sample a subset of SQS servers; one second of long poll sees them all.
RECEIVE_WAIT_SECONDS = 1


@dataclass
class OpsContext:
    """The dependencies of the ops commands; `dlpipe.cli.main` builds it from the environment."""

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

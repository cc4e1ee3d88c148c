"""Wiring of the operator commands: the tables, queues and starter their use cases run against."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.lambda_starter import lambda_starter
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.adapters.queue import JobQueue
from dlpipe.adapters.sqs_messages import SqsMessages
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.feeds import Feed
from dlpipe.feeds_config import feeds_from_env
from dlpipe.services.ops.context import RECEIVE_WAIT_SECONDS, OpsContext

if TYPE_CHECKING:
    from dlpipe.services.ops.ports import Starter


def build_ops_context(
    settings: Settings,
    clients: AwsClients | None = None,
    *,
    clock: Clock | None = None,
    starter: Starter | None = None,
    receive_wait_seconds: int = RECEIVE_WAIT_SECONDS,
    feeds: Mapping[str, Feed] | None = None,
) -> OpsContext:
    """The ops context on real clients and the wall clock; each keyword replaces one (feeds:
    DLPIPE_FEEDS_FILE's, else the default feed alone; FeedError if the file is invalid)."""
    aws = clients or AwsClients(settings)
    clock = clock or SystemClock()
    return OpsContext(
        settings=settings,
        clock=clock,
        job_store=JobsTable(aws.dynamodb, settings.jobs_table, clock),
        batch_store=BatchesTable(aws.dynamodb, settings.batches_table, clock),
        # SQS clients are built when a command uses a queue; the download queues then need
        # DLPIPE_QUEUE_URL (ConfigError), which reading commands do not.
        download_queues=lambda current: JobQueue.from_settings(aws.sqs, current),
        gauge=lambda url: JobQueue(aws.sqs, url),
        messages=lambda: SqsMessages(aws.sqs),
        # Built when backfill starts a day: a dry run needs no DLPIPE_ORCHESTRATOR_ARN.
        orchestrator=lambda current: lambda_starter(current, aws),
        starter=starter,
        manifest_reader=lambda current: S3ManifestStore(aws.s3, _bucket(current)),
        receive_wait_seconds=receive_wait_seconds,
        feeds=feeds_from_env() if feeds is None else feeds,
    )


def _bucket(settings: Settings) -> str:
    if not settings.destination_bucket:
        raise ConfigError("DLPIPE_DEST_BUCKET is not set (the day manifests live in it)")
    return settings.destination_bucket

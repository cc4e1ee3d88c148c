"""Wiring of the operator commands: the tables, queues and starter their use cases run against."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.lambda_starter import lambda_starter
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.adapters.queue import JobQueue
from dlpipe.adapters.sqs_messages import SqsMessages
from dlpipe.bootstrap.feed_source import configured_feeds
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, Feed
from dlpipe.feeds_file import feeds_from_env
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
    DLPIPE_FEEDS_FILE's, else the default feed alone, FeedError now if the file is invalid;
    with a parameter path, the SSM parameters' feeds too, read when a command first asks)."""
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
        feeds=_configured_feeds(settings, aws) if feeds is None else feeds,
    )


class _LazyFeeds(Mapping[str, Feed]):
    """The configured feeds, loaded on first use: commands that never list feeds (jobs show,
    dlq show) make no SSM call and need no ssm:GetParametersByPath."""

    def __init__(self, load: Callable[[], Mapping[str, Feed]]) -> None:
        self._load = functools.cache(load)

    def __getitem__(self, name: str) -> Feed:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


def _configured_feeds(settings: Settings, aws: AwsClients) -> Mapping[str, Feed]:
    """The feeds file's feeds (read now), then, lazily, the configured feeds with those under
    the SSM parameter path (bootstrap/feed_source.py's `configured_feeds`: the functions'
    precedence and prefix rule) and the default feed's deadline from DLPIPE_DAY_DEADLINE when
    neither gives it one."""
    local = feeds_from_env()  # an invalid feeds file is a FeedError before any command runs
    if not settings.feeds_parameter_path and settings.day_deadline is None:
        return local
    return _LazyFeeds(lambda: _with_default_deadline(settings, configured_feeds(settings, aws)))


def _with_default_deadline(settings: Settings, feeds: dict[str, Feed]) -> dict[str, Feed]:
    default = feeds.get(DEFAULT_FEED_NAME)
    if settings.day_deadline is None or default is None or default.deadline is not None:
        return feeds
    # The orchestrator's own check of the variables (ConfigError naming the one at fault).
    from dlpipe.bootstrap.orchestrator import day_deadline  # noqa: PLC0415

    day_deadline(settings)
    return feeds | {
        DEFAULT_FEED_NAME: replace(
            default, deadline=settings.day_deadline, time_zone=settings.day_deadline_time_zone
        )
    }


def _bucket(settings: Settings) -> str:
    if not settings.destination_bucket:
        raise ConfigError("DLPIPE_DEST_BUCKET is not set (the day manifests live in it)")
    return settings.destination_bucket

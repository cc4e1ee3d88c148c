"""Wiring of the orchestrator: the batch flow on DynamoDB, SQS, S3 and the provider, the
durable handler around it, and the pre-run checks' probes. Every dependency of the flow can be
overridden (tests pass fakes)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.items import batch_key, job_key
from dlpipe.bootstrap.feed_source import configured_feeds, feed_source
from dlpipe.config import ENV_DAY_DEADLINE, ENV_DAY_DEADLINE_TIME_ZONE, ConfigError, Settings
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED, Feed, FeedError, validate_feed
from dlpipe.domain.outage import OutageBackoff
from dlpipe.domain.rules import RecoveryBudgetError, assert_recovery_fits, visibility_margin_seconds
from dlpipe.feed_settings import FeedSource, settings_for_feed
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.announce import DayDeadline, feed_deadline
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.feed_runs import FeedRun, FeedRuns, PollingPlan
from dlpipe.services.orchestrator.recheck import DayStarter

if TYPE_CHECKING:
    # Only for annotations: the Lambda's init must not import the flow (or boto3's clients).
    from dlpipe.services.orchestrator.announce import EventSender
    from dlpipe.services.orchestrator.fanout import FileLister
    from dlpipe.services.orchestrator.flow import BatchFlowService
    from dlpipe.services.orchestrator.manifest_ports import ManifestStore
    from dlpipe.services.orchestrator.ports import BatchFlow
    from dlpipe.services.orchestrator.store_ports import BatchStore, DownloadQueues, JobStore
    from dlpipe.services.orchestrator.sweep_ports import PublishedCheck

log = get_logger()


def check_recovery_fits(settings: Settings) -> None:
    """ConfigError unless the polling window outlasts the recovery of a crashed worker's file."""
    try:
        assert_recovery_fits(
            settings.max_polls,
            settings.poll_interval_seconds,
            settings.lease_seconds,
            visibility_margin_seconds(settings.lease_seconds),
            settings.resend_after_seconds,
        )
    except RecoveryBudgetError as exc:
        raise ConfigError(str(exc)) from exc


def build_flow(
    settings: Settings,
    clients: AwsClients | None = None,
    *,
    jobs: JobStore | None = None,
    batches: BatchStore | None = None,
    provider: FileLister | None = None,
    queue: DownloadQueues | None = None,
    clock: Clock | None = None,
    new_uuid: Callable[[], str] | None = None,
    published: PublishedCheck | None = None,
    manifests: ManifestStore | None = None,
    events: EventSender | None = None,
) -> BatchFlowService:
    """The batch flow on the tables, queues, bucket and provider named by `settings`; each
    keyword replaces one real dependency (a fake in tests, a wrapper in benchmarks)."""
    # Imported here so that importing this module (the Lambda's init) builds and loads nothing.
    from dlpipe.adapters.batches_table import BatchesTable  # noqa: PLC0415
    from dlpipe.adapters.events import EventBus  # noqa: PLC0415
    from dlpipe.adapters.jobs_table import JobsTable  # noqa: PLC0415
    from dlpipe.adapters.listing_stream import ListingLimits  # noqa: PLC0415
    from dlpipe.adapters.manifest_store import S3ManifestStore  # noqa: PLC0415
    from dlpipe.adapters.provider_client import ProviderClient  # noqa: PLC0415
    from dlpipe.adapters.provider_token import token_from_settings  # noqa: PLC0415
    from dlpipe.adapters.published import published_check  # noqa: PLC0415
    from dlpipe.adapters.queue import JobQueue  # noqa: PLC0415
    from dlpipe.services.orchestrator.flow import BatchFlowService  # noqa: PLC0415
    from dlpipe.services.orchestrator.root_guard import RootGuard, reserved_roots  # noqa: PLC0415

    check_recovery_fits(settings)
    # Built only if some real dependency needs it: a flow on fakes touches no boto3 at all.
    aws = functools.cache(lambda: clients or AwsClients(settings))
    clock = clock or SystemClock()
    if provider is None:
        provider = ProviderClient(
            settings.provider_url(),  # checked before the token is read
            token_from_settings(settings, aws()),
            listing_limits=ListingLimits.from_settings(settings),
            allow_http=settings.allow_http_urls,
            allow_private=settings.allow_private_url_hosts,
            feed=settings.feed,
        )
    if not settings.destination_prefix:  # the default feed, publishing at the bucket's root
        provider = RootGuard(provider, reserved_roots(named_prefixes(settings, aws)))
    bucket = settings.destination_bucket
    if published is None and bucket:
        published = published_check(aws().s3, bucket, settings.destination_prefix)
    if manifests is None and bucket:
        manifests = S3ManifestStore(aws().s3, bucket)
    return BatchFlowService(
        jobs=jobs or JobsTable(aws().dynamodb, settings.jobs_table, clock),
        batches=batches or BatchesTable(aws().dynamodb, settings.batches_table, clock),
        provider=provider,
        queue=queue or JobQueue.from_settings(aws().sqs, settings),
        clock=clock,
        new_uuid=new_uuid or (lambda: str(uuid.uuid4())),
        sweep_requeue=settings.sweep_requeue,
        resend_after_seconds=settings.resend_after_seconds,
        lease_seconds=settings.lease_seconds,
        published=published,
        manifests=manifests,
        feed=settings.feed,
        # Always a bus: the configured one, else the account's default (creating no client
        # until the first event is sent).
        events=events or EventBus(lambda: aws().events, settings.event_bus),
    )


def named_prefixes(settings: Settings, aws: Callable[[], AwsClients]) -> list[str]:
    """The named feeds' destination prefixes (the configured feeds'); a listing SSM refuses
    now, or whose feeds break the prefix rule, is logged and leaves the feeds file's reserved
    (on AWS, none: only dlpipe's own root)."""

    def unlisted(exc: Exception) -> None:
        log.warning("batch.feeds_unlisted", error=str(exc))

    path = settings.feeds_parameter_path
    feeds = configured_feeds(settings, aws() if path else None, unlisted=unlisted)
    return [feed.destination_prefix for feed in feeds.values() if not feed.is_default]


def day_deadline(settings: Settings) -> DayDeadline | None:
    """The default feed's deadline from DLPIPE_DAY_DEADLINE(_TIME_ZONE), checked by the feeds'
    own rule; None when unset; ConfigError naming the variable when malformed."""
    if settings.day_deadline is None:
        return None
    try:
        feed = validate_feed(
            replace(
                DEFAULT_FEED,
                deadline=settings.day_deadline,
                time_zone=settings.day_deadline_time_zone,
            )
        )
    except FeedError as exc:
        field = str(exc).split(":", 1)[0].rsplit(".", 1)[-1]
        name = ENV_DAY_DEADLINE_TIME_ZONE if field == "time_zone" else ENV_DAY_DEADLINE
        raise ConfigError(f"{name}: {str(exc).split(': ', 1)[-1]}") from exc
    return feed_deadline(feed, settings.date_offset_days)


def check_ready(settings: Settings, date: str) -> None:
    """Raise ConfigError or NotReadyError unless the tables, the queue and the provider answer
    for `date` (dlpipe/services/orchestrator/preflight.py); botocore's NoCredentialsError
    propagates as it is."""
    # Imported here, as in build_flow: the Lambda's init never runs the checks.
    from dlpipe.adapters.aws import PROBE_CONFIG  # noqa: PLC0415
    from dlpipe.adapters.provider_token import token_from_settings  # noqa: PLC0415
    from dlpipe.adapters.readiness import AwsProbe, ProviderProbe  # noqa: PLC0415
    from dlpipe.services.orchestrator.preflight import check_probes, required_settings  # noqa: PLC0415

    provider_url, queue_url = required_settings(settings)
    # Two attempts, 2 s to connect: an unreachable endpoint is named in seconds.
    clients = AwsClients(settings, config=PROBE_CONFIG)

    def probe(service: str, what: str, call: Callable[[], object]) -> AwsProbe:
        endpoint = settings.endpoint_for(service) or f"AWS ({settings.region})"
        return AwsProbe(service, endpoint, what, call)

    token = functools.cache(lambda: token_from_settings(settings, clients))
    probes = [
        probe(
            "dynamodb",
            f"table {table!r}",
            functools.partial(clients.dynamodb.get_item, TableName=table, Key=key),
        )
        for table, key in (
            (settings.batches_table, batch_key("dlpipe-preflight")),
            (settings.jobs_table, job_key("dlpipe-preflight")),
        )
    ]
    probes.append(
        probe(
            "sqs",
            "the download queue",
            functools.partial(
                clients.sqs.get_queue_attributes, QueueUrl=queue_url, AttributeNames=["QueueArn"]
            ),
        )
    )
    probes.append(probe("secretsmanager", "the provider token", token))
    provider = ProviderProbe(
        provider_url,
        token,
        allow_http=settings.allow_http_urls,
        allow_private=settings.allow_private_url_hosts,
    )
    check_probes(probes, provider, provider_url, date)


def build_orchestrator_handler(
    settings: Settings,
    flow: Callable[[Settings], BatchFlow] | None = None,
    *,
    feeds: FeedSource | None = None,
) -> Callable[[Any, Any], Any]:
    """The orchestrator Lambda's durable handler for `settings`; `flow` builds a feed's flow
    from that feed's settings on first use (default: the real one, built inside the first
    step, so init touches no AWS); `feeds` finds the event's feed (default: the feeds file,
    then the SSM parameters, a named feed refused while two configured prefixes overlap)."""
    build = flow or build_flow
    source = feeds or feed_source(settings, checked=True)
    runs = feed_runs(settings, source, build)
    return build_durable_handler(
        lambda: build(settings),
        settings.poll_interval_seconds,
        settings.max_polls,
        date_offset_days=settings.date_offset_days,
        outage=OutageBackoff(budget_seconds=settings.provider_outage_budget_seconds),
        dependency_outage=settings.aws_outage_backoff(),
        runs=runs,
        deadline=day_deadline(settings),
        starters=functools.partial(self_starter, settings),
    )


def self_starter(settings: Settings, context: Any, feed: str) -> DayStarter | None:
    """What starts a run of one of `feed`'s earlier days: an asynchronous invoke of this
    orchestrator, through the qualified (alias) ARN the invocation came in by (the Lambda
    context's); None when there is none (the SDK's local runner has no ARN)."""
    arn = getattr(context, "invoked_function_arn", None)
    if not isinstance(arn, str) or arn.count(":") != 7:
        return None

    def start(date: str) -> str:
        # Imported and built on first use: most scheduled runs find nothing restated.
        from dlpipe.adapters.lambda_starter import LambdaStarter  # noqa: PLC0415

        starter = LambdaStarter(AwsClients(settings).lambda_, arn)
        return starter.start(date, rerun=False, feed=feed)

    return start


def feed_runs(
    settings: Settings, feeds: FeedSource, build: Callable[[Settings], BatchFlow]
) -> FeedRuns:
    """Each feed's run by its name: `feeds` looks the feed up (the durable handler does it in
    a step), and its run is its flow on its own settings (keys, provider, token, destination
    prefix), its polling plan and its time zone; FeedError (one line) for a feed that is not
    configured, or whose polling window is shorter than the recovery bound (the default
    feed's settings are checked by build_flow)."""

    default_deadline = day_deadline(settings)  # ConfigError now, at init, if malformed

    def run_of(feed: Feed) -> FeedRun:
        own = settings_for_feed(settings, feed)
        if not feed.is_default:
            # A named feed's own polling overrides are refused now, in one line, rather than
            # by build_flow inside the first step (retried, then failing the run as a step).
            try:
                check_recovery_fits(own)
            except ConfigError as exc:
                raise FeedError(f"feeds.{feed.name}: {exc}") from exc
        # A feed's own deadline (the feeds file, its SSM parameter); the default feed's may
        # also come from DLPIPE_DAY_DEADLINE.
        deadline = feed_deadline(feed, settings.date_offset_days)
        if deadline is None and feed.is_default:
            deadline = default_deadline
        plan = PollingPlan(
            own.poll_interval_seconds,
            own.max_polls,
            deadline,
            restatement_window_days=own.restatement_window_days,
        )
        return FeedRun(lambda: build(own), plan, feed.time_zone)

    return FeedRuns(feeds.feed, run_of)

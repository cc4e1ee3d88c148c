"""Wiring of the downloader: the download service on the jobs table, the destination bucket,
the key and the provider; the queues the Lambda consumes and the router of delayed copies
(the long-poll worker's queues: worker_queues.py; dlpipe.entrypoints runs the loops on them). Every dependency can be overridden (tests pass
fakes, benchmarks wrappers)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.adapters.destination import S3Destination
from dlpipe.adapters.download_queue import EventQueues
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.keys import KeySource, key_source_from_settings
from dlpipe.adapters.queue import JobQueue
from dlpipe.adapters.reread import Rereadable
from dlpipe.adapters.source import HttpSource
from dlpipe.bootstrap.feed_source import feed_source
from dlpipe.config import Settings
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, FeedError
from dlpipe.domain.messages import MalformedMessageError, decode_message
from dlpipe.domain.model import file_feed
from dlpipe.domain.stall import StallFloor
from dlpipe.domain.url_policy import UrlPolicy, default_allowed_hosts
from dlpipe.feed_settings import FeedSource, settings_for_feed
from dlpipe.log import configure_logging, get_logger
from dlpipe.services.download.deps import ServiceDeps, key_at_hand, no_pause
from dlpipe.services.download.service import DownloadService
from dlpipe.services.download.transfer import TransferTuning

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from mypy_boto3_sqs import SQSClient

    from dlpipe.services.download.ports import Destination, JobLeases, Source, UrlSigner

log = get_logger()


def provider_factory(settings: Settings, clients: AwsClients) -> Callable[[], UrlSigner] | None:
    """A lazily built provider client (its token is read on first use, and again when the
    provider refuses it: at most once per DLPIPE_SECRET_REREAD_SECONDS), or None if unset."""
    if not settings.provider_base_url:
        return None
    base_url = settings.provider_url()  # refused now (http, no host), not at a file's first use

    @functools.cache
    def build() -> UrlSigner:
        # Imported on first use: most files never need a fresh URL.
        from dlpipe.adapters.provider_client import ProviderClient  # noqa: PLC0415
        from dlpipe.adapters.provider_token import (  # noqa: PLC0415
            RefreshingSigner,
            token_from_settings,
        )

        def client(token: str) -> ProviderClient:
            return ProviderClient(
                base_url,
                token,
                allow_http=settings.allow_http_urls,
                allow_private=settings.allow_private_url_hosts,
                feed=settings.feed,
            )

        token = Rereadable(
            # Secrets Manager unavailable: an outage the file waits out (provider_token.py).
            lambda: token_from_settings(settings, clients, outage=True),
            where=f"the provider token of feed {settings.feed!r}",
            same=str.__eq__,
            interval_s=settings.secret_reread_seconds,
        )
        return RefreshingSigner(token, client)

    return build


def url_policy_from_settings(settings: Settings) -> UrlPolicy:
    """The configured allowlist, else the provider's S3 hosts for the region and its API host."""
    hosts = settings.url_allowed_hosts or default_allowed_hosts(
        settings.region, settings.provider_base_url
    )
    return UrlPolicy.from_patterns(
        hosts,
        allow_http=settings.allow_http_urls,
        allow_private=settings.allow_private_url_hosts,
    )


def build_service(
    settings: Settings,
    clients: AwsClients | None = None,
    *,
    tuning: TransferTuning | None = None,
    stop: threading.Event | None = None,
    jobs: JobLeases | None = None,
    destination: Destination | None = None,
    source: Source | None = None,
    private_key: RSAPrivateKey | None = None,
    provider: Callable[[], UrlSigner] | None = None,
    clock: Clock | None = None,
    pause: Callable[[str, str], None] | None = None,
    feeds: FeedSource | None = None,
) -> DownloadService:
    """A DownloadService on the configured table, bucket, key and provider; each keyword
    replaces one real dependency (`pause`: the dev kit's test pause points, none by default).
    A job of another feed runs on that feed's parts (`feeds`: default, the feeds file, then
    the SSM parameters), built on its first job and kept for the process."""
    clients = clients or AwsClients(settings)
    known = feeds or feed_source(settings, clients)
    settings = settings_for_feed(settings, known.feed(DEFAULT_FEED_NAME))
    bucket = settings.require("destination_bucket")
    # Read now, so a missing or malformed key stops the start in one line; Secrets Manager
    # unavailable does not: one warning, and the first files wait the outage out (keys.py).
    key = private_key or key_source_from_settings(settings, clients, defer_outage=True)
    deps = ServiceDeps(
        jobs=jobs or JobsTable(clients.dynamodb, settings.jobs_table),
        destination=destination or S3Destination(clients.s3, bucket),
        source=source or HttpSource(),
        decryption=KeyDecryption(key),
        key_ready=_key_ready(key),
        provider=provider or provider_factory(settings, clients),
        lease_seconds=settings.lease_seconds,
        url_policy=url_policy_from_settings(settings),
        tuning=tuning or tuning_from_settings(settings),
        stop=stop or threading.Event(),
        clock=clock or SystemClock(),
        pause=pause or no_pause,
        destination_prefix=settings.destination_prefix,
    )
    return DownloadService(deps, FeedParts(settings, clients, deps, known))


def _key_ready(key: RSAPrivateKey | KeySource) -> Callable[[], object]:
    """What the service asks before a job (ServiceDeps.key_ready): the source's key, read
    now if its first read met an outage; a key given as it is is always at hand."""
    if not isinstance(key, Rereadable):
        return key_at_hand
    source: KeySource = key
    return lambda: source.value


class FeedParts:
    """Each named feed's download service: the default's table, bucket, queues and tuning,
    with that feed's key, provider, URL allowlist, destination prefix and stall floor. Built once per
    feed and process; a feed that cannot be found is asked for again on its next job (its
    source then reads its configuration again: dlpipe.feed_settings)."""

    def __init__(
        self, settings: Settings, clients: AwsClients, base: ServiceDeps, feeds: FeedSource
    ) -> None:
        self._settings, self._clients, self._base, self._feeds = settings, clients, base, feeds
        self._lock = threading.Lock()
        self._services: dict[str, DownloadService] = {}

    def __call__(self, name: str) -> DownloadService:
        """The service of feed `name`; FeedError (one line) if it is not configured."""
        with self._lock:
            if name not in self._services:
                self._services[name] = self._build(name)
            return self._services[name]

    def _build(self, name: str) -> DownloadService:
        own = settings_for_feed(self._settings, self._feeds.feed(name))
        # The key comes from the feed's own source (adapters/keys.py caches by source): a
        # job is only ever decrypted with the key of the feed its FileID names. Secrets
        # Manager unavailable: DependencyUnavailableError, nothing kept, built again next job.
        key = key_source_from_settings(own, self._clients)
        deps = replace(
            self._base,
            decryption=KeyDecryption(key),
            key_ready=_key_ready(key),
            provider=provider_factory(own, self._clients),
            url_policy=url_policy_from_settings(own),
            feed=own.feed,
            destination_prefix=own.destination_prefix,
            tuning=replace(self._base.tuning, stall_floor=stall_floor(own)),
        )
        return DownloadService(deps)


class FeedRouter:
    """Routes a delayed copy of a message as the orchestrator routed its file: by its size
    against the threshold of the feed its FileID names (that feed's settings); a body or a
    feed that cannot be read falls back to the process's threshold (asked again next time)."""

    def __init__(self, sqs: SQSClient, settings: Settings, feeds: FeedSource) -> None:
        self._sqs, self._settings, self._feeds = sqs, settings, feeds
        self.default = JobQueue.from_settings(sqs, settings)  # ConfigError without a queue
        self._lock = threading.Lock()
        self._queues: dict[str, JobQueue] = {}

    def copy_queue_url(self, size_bytes: int | None, body: str) -> str:
        """The queue a copy of `body`, a file of `size_bytes`, goes to."""
        try:
            feed = file_feed(decode_message(body).file_id, default=None)
        except MalformedMessageError:
            feed = None
        if feed is None:
            return self.default.queue_url_for(size_bytes)
        return self._queue_of(feed).queue_url_for(size_bytes)

    def _queue_of(self, feed: str) -> JobQueue:
        with self._lock:
            if feed not in self._queues:
                try:
                    own = settings_for_feed(self._settings, self._feeds.feed(feed))
                except FeedError:
                    return self.default  # the job itself waits for its feed (service.py)
                self._queues[feed] = JobQueue.from_settings(self._sqs, own)
            return self._queues[feed]


def build_lambda_wiring(
    settings: Settings | None = None,
) -> tuple[DownloadService, EventQueues]:
    """The downloader Lambda's service and the queues its records come from (logging set up);
    delayed copies of messages are routed by size and feed."""
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level)
    clients = AwsClients(settings)
    feeds = feed_source(settings, clients)
    copy_to = (
        FeedRouter(clients.sqs, settings, feeds).copy_queue_url if settings.queue_url else None
    )
    queues = EventQueues(clients.sqs, settings.queue_url, copy_to)
    return build_service(settings, clients, feeds=feeds), queues


def tuning_from_settings(settings: Settings) -> TransferTuning:
    """The transfer tuning with the settings' stall floor (DLPIPE_STALL_*)."""
    return TransferTuning(stall_floor=stall_floor(settings))


def stall_floor(settings: Settings) -> StallFloor:
    """The settings' stall floor: DLPIPE_STALL_*, or a feed's own override of them."""
    return StallFloor(settings.stall_floor_bytes, settings.stall_window_seconds)

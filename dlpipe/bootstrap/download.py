"""Wiring of the downloader: the download service on the jobs table, the destination bucket,
the key and the provider; the queues the Lambda and the long-poll workers consume
(dlpipe.entrypoints runs the loops on them). Every dependency can be overridden (tests pass
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
from dlpipe.adapters.download_queue import DownloadQueue, EventQueues
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.keys import private_key_from_settings
from dlpipe.adapters.queue import JobQueue
from dlpipe.adapters.source import HttpSource
from dlpipe.bootstrap.feeds import feed_source
from dlpipe.config import Settings
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.url_policy import UrlPolicy, default_allowed_hosts
from dlpipe.feed_settings import FeedSource, settings_for_feed
from dlpipe.log import configure_logging
from dlpipe.services.download.deps import ServiceDeps, no_pause
from dlpipe.services.download.service import DownloadService
from dlpipe.services.download.transfer import TransferTuning

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    from dlpipe.services.download.ports import Destination, JobLeases, Source, UrlSigner


def provider_factory(settings: Settings, clients: AwsClients) -> Callable[[], UrlSigner] | None:
    """A lazily built provider client (its token is read on first use), or None if unset."""
    if not settings.provider_base_url:
        return None
    base_url = settings.provider_url()  # refused now (http, no host), not at a file's first use

    @functools.cache
    def build() -> UrlSigner:
        # Imported on first use: most files never need a fresh URL.
        from dlpipe.adapters.provider_client import ProviderClient, token_from_settings  # noqa: PLC0415

        return ProviderClient(
            base_url, token_from_settings(settings, clients), allow_http=settings.allow_http_urls
        )

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
    deps = ServiceDeps(
        jobs=jobs or JobsTable(clients.dynamodb, settings.jobs_table),
        destination=destination or S3Destination(clients.s3, bucket),
        source=source or HttpSource(),
        decryption=KeyDecryption(private_key or private_key_from_settings(settings, clients)),
        provider=provider or provider_factory(settings, clients),
        lease_seconds=settings.lease_seconds,
        url_policy=url_policy_from_settings(settings),
        tuning=tuning or TransferTuning(),
        stop=stop or threading.Event(),
        clock=clock or SystemClock(),
        pause=pause or no_pause,
        destination_prefix=settings.destination_prefix,
    )
    return DownloadService(deps, FeedParts(settings, clients, deps, known))


class FeedParts:
    """Each named feed's download service: the default's table, bucket, queues and tuning,
    with that feed's key, provider, URL allowlist and destination prefix. Built once per
    feed and process; a feed that cannot be found is asked for again on its next job."""

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
        # job is only ever decrypted with the key of the feed its FileID names.
        deps = replace(
            self._base,
            decryption=KeyDecryption(private_key_from_settings(own, self._clients)),
            provider=provider_factory(own, self._clients),
            url_policy=url_policy_from_settings(own),
            feed=own.feed,
            destination_prefix=own.destination_prefix,
        )
        return DownloadService(deps)


def build_lambda_wiring(
    settings: Settings | None = None,
) -> tuple[DownloadService, EventQueues]:
    """The downloader Lambda's service and the queues its records come from (logging set up);
    delayed copies of messages are routed by size."""
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level)
    clients = AwsClients(settings)
    router = JobQueue.from_settings(clients.sqs, settings) if settings.queue_url else None
    queues = EventQueues(clients.sqs, settings.queue_url, router)
    return build_service(settings, clients), queues


def build_worker_queues(settings: Settings, clients: AwsClients) -> list[DownloadQueue]:
    """The main queue, and the large-file queue if it is configured (`dlpipe worker`, and the
    local day's downloaders); delayed copies of messages are routed by size."""
    router = JobQueue.from_settings(clients.sqs, settings)
    urls = [router.queue_url, *([router.large_queue_url] if router.large_queue_url else [])]
    return [DownloadQueue(clients.sqs, url, router.queue_url_for) for url in urls]

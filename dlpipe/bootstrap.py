"""The one place that wires the download service from settings: real clients, key, provider."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.keys import private_key_from_settings
from dlpipe.adapters.url_policy import UrlPolicy, default_allowed_hosts
from dlpipe.config import Settings
from dlpipe.services.download.deps import ServiceDeps, UrlSigner
from dlpipe.services.download.service import DownloadService
from dlpipe.services.download.transfer import TransferTuning


def provider_factory(settings: Settings, clients: AwsClients) -> Callable[[], UrlSigner] | None:
    """A lazily built provider client (its token is read on first use), or None if unset."""
    base_url = settings.provider_base_url
    if not base_url:
        return None

    @functools.cache
    def build() -> UrlSigner:
        # Imported on first use: most files never need a fresh URL.
        from dlpipe.adapters.provider_client import ProviderClient, token_from_settings  # noqa: PLC0415

        return ProviderClient(base_url, token_from_settings(settings, clients))

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
) -> DownloadService:
    """A DownloadService on the configured table, bucket, key and provider."""
    clients = clients or AwsClients(settings)
    deps = ServiceDeps(
        jobs=JobsTable(clients.dynamodb, settings.jobs_table),
        s3=clients.s3,
        bucket=settings.require("destination_bucket"),
        private_key=private_key_from_settings(settings, clients),
        provider=provider_factory(settings, clients),
        lease_seconds=settings.lease_seconds,
        url_policy=url_policy_from_settings(settings),
        tuning=tuning or TransferTuning(),
        stop=stop or threading.Event(),
    )
    return DownloadService(deps)

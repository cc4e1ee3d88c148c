"""Configuration: read once from the environment into a typed, immutable object."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

# Tests only: seconds this process's wall clock runs ahead (named and read in dlpipe.domain.clock).
from dlpipe.domain.clock import ENV_TEST_CLOCK_OFFSET_SECONDS  # noqa: F401 (re-exported: tests set it)
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.lanes import DEFAULT_MAX_SHARE_PERCENT
from dlpipe.domain.outage import (
    DEFAULT_DEPENDENCY_BUDGET_SECONDS,
    OutageBackoff,
    dependency_backoff,
)
from dlpipe.domain.routing import DEFAULT_LARGE_FILE_THRESHOLD_BYTES
from dlpipe.domain.stall import DEFAULT_STALL_FLOOR_BYTES, DEFAULT_STALL_WINDOW_SECONDS
from dlpipe.domain.url_settings import provider_url_problem, url_problem
from dlpipe.domain.waiting import DEFAULT_IDLE_WARNING_SECONDS

# ConfigError's home is setting_ranges.py; every caller imports it from here.
from dlpipe.setting_ranges import ConfigError as ConfigError  # noqa: PLC0414 (re-exported)
from dlpipe.setting_ranges import IntSetting, int_setting

# Environment variable names: the only place they are spelled.
ENV_ENDPOINT_URL = "AWS_ENDPOINT_URL"
# AWS's standard per-service override, AWS_ENDPOINT_URL_<SERVICE>: locally DynamoDB is served
# by DynamoDB Local and every other service by moto. One for each client dlpipe builds, by the
# name botocore reads (its service ID: EventBridge for `events`), so each is checked at load.
ENV_ENDPOINT_URL_DYNAMODB = "AWS_ENDPOINT_URL_DYNAMODB"
ENV_ENDPOINT_URL_S3 = "AWS_ENDPOINT_URL_S3"
ENV_ENDPOINT_URL_SQS = "AWS_ENDPOINT_URL_SQS"
ENV_ENDPOINT_URL_SECRETS_MANAGER = "AWS_ENDPOINT_URL_SECRETS_MANAGER"
ENV_ENDPOINT_URL_LAMBDA = "AWS_ENDPOINT_URL_LAMBDA"
ENV_ENDPOINT_URL_SSM = "AWS_ENDPOINT_URL_SSM"
ENV_ENDPOINT_URL_EVENTBRIDGE = "AWS_ENDPOINT_URL_EVENTBRIDGE"
SERVICE_ENDPOINT_ENV = {
    "dynamodb": ENV_ENDPOINT_URL_DYNAMODB,
    "s3": ENV_ENDPOINT_URL_S3,
    "sqs": ENV_ENDPOINT_URL_SQS,
    "secretsmanager": ENV_ENDPOINT_URL_SECRETS_MANAGER,
    "lambda": ENV_ENDPOINT_URL_LAMBDA,
    "ssm": ENV_ENDPOINT_URL_SSM,
    "events": ENV_ENDPOINT_URL_EVENTBRIDGE,
}
ENV_REGION = "AWS_REGION"
ENV_DEFAULT_REGION = "AWS_DEFAULT_REGION"
ENV_NAME_PREFIX = "DLPIPE_NAME_PREFIX"
ENV_JOBS_TABLE = "DLPIPE_JOBS_TABLE"
ENV_BATCHES_TABLE = "DLPIPE_BATCHES_TABLE"
ENV_QUEUE_URL = "DLPIPE_QUEUE_URL"
ENV_DLQ_URL = "DLPIPE_DLQ_URL"
ENV_DEST_BUCKET = "DLPIPE_DEST_BUCKET"
ENV_PROVIDER_URL = "DLPIPE_PROVIDER_URL"
ENV_PROVIDER_TOKEN = "DLPIPE_PROVIDER_TOKEN"  # local use only; AWS reads the secret below
ENV_PROVIDER_TOKEN_SECRET = "DLPIPE_PROVIDER_TOKEN_SECRET"
ENV_PRIVATE_KEY_FILE = "DLPIPE_PRIVATE_KEY_FILE"  # local use only
ENV_PRIVATE_KEY_SECRET = "DLPIPE_PRIVATE_KEY_SECRET"
ENV_LEASE_SECONDS = "DLPIPE_LEASE_SECONDS"
ENV_POLL_INTERVAL_SECONDS = "DLPIPE_POLL_INTERVAL_SECONDS"
ENV_MAX_POLLS = "DLPIPE_MAX_POLLS"
ENV_DATE_OFFSET_DAYS = "DLPIPE_DATE_OFFSET_DAYS"
# How many earlier days a scheduled run re-lists for the vendor's restatements (0: none).
ENV_RESTATEMENT_WINDOW_DAYS = "DLPIPE_RESTATEMENT_WINDOW_DAYS"
ENV_LOG_LEVEL = "DLPIPE_LOG_LEVEL"
ENV_ORCHESTRATOR_ARN = "DLPIPE_ORCHESTRATOR_ARN"  # qualified (alias) ARN, for backfill
ENV_SWEEP_REQUEUE = "DLPIPE_SWEEP_REQUEUE"
ENV_RESEND_AFTER_SECONDS = "DLPIPE_RESEND_AFTER_SECONDS"
ENV_PROVIDER_OUTAGE_BUDGET_SECONDS = "DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS"
ENV_IDLE_WARNING_SECONDS = "DLPIPE_IDLE_WARNING_SECONDS"  # dlpipe.domain.waiting
# A download below this many bytes in this many seconds is abandoned (dlpipe/domain/stall.py).
ENV_STALL_FLOOR_BYTES = "DLPIPE_STALL_FLOOR_BYTES"
ENV_STALL_WINDOW_SECONDS = "DLPIPE_STALL_WINDOW_SECONDS"
ENV_SECRET_REREAD_SECONDS = "DLPIPE_SECRET_REREAD_SECONDS"
ENV_AWS_OUTAGE_BUDGET_SECONDS = "DLPIPE_AWS_OUTAGE_BUDGET_SECONDS"
# The share of a worker's threads one feed may hold while other feeds are configured
# (dlpipe/domain/lanes.py).
ENV_MAX_SHARE_PERCENT = "DLPIPE_MAX_SHARE_PERCENT"
# Which provider URLs may be requested (dlpipe/domain/url_policy.py); the exemptions are local only.
ENV_URL_ALLOWED_HOSTS = "DLPIPE_URL_ALLOWED_HOSTS"
ENV_ALLOW_HTTP_URLS = "DLPIPE_ALLOW_HTTP_URLS"
ENV_ALLOW_PRIVATE_URL_HOSTS = "DLPIPE_ALLOW_PRIVATE_URL_HOSTS"
ENV_LARGE_QUEUE_URL = "DLPIPE_LARGE_QUEUE_URL"  # only the long-poll worker consumes it
ENV_LARGE_FILE_THRESHOLD_BYTES = "DLPIPE_LARGE_FILE_THRESHOLD_BYTES"
ENV_PROVIDER_LISTING_MAX_ENTRY_BYTES = "DLPIPE_PROVIDER_LISTING_MAX_ENTRY_BYTES"
ENV_PROVIDER_LISTING_MAX_FILES = "DLPIPE_PROVIDER_LISTING_MAX_FILES"
ENV_PROVIDER_LISTING_MAX_PAGES = "DLPIPE_PROVIDER_LISTING_MAX_PAGES"
# The local feeds file (TOML), read by dlpipe/feeds_file.py.
ENV_FEEDS_FILE = "DLPIPE_FEEDS_FILE"
# On AWS: the SSM path under which each named feed is one parameter, `{path}/{name}`
# (`/<prefix>dlpipe/feeds`), read by dlpipe/adapters/feed_parameters.py.
ENV_FEEDS_PARAMETER_PATH = "DLPIPE_FEEDS_PARAMETER_PATH"
# The hand-off events' EventBridge bus (name or ARN), and the default feed's deadline.
ENV_EVENT_BUS = "DLPIPE_EVENT_BUS"
ENV_DAY_DEADLINE = "DLPIPE_DAY_DEADLINE"  # HH:MM local time; unset: no deadline, no Day Late
ENV_DAY_DEADLINE_TIME_ZONE = "DLPIPE_DAY_DEADLINE_TIME_ZONE"
DEFAULT_EVENT_BUS = "default"  # the account's default bus: events always go somewhere

DEFAULT_REGION = "us-east-1"
JOBS_TABLE_BASE_NAME = "data-download-jobs"
BATCHES_TABLE_BASE_NAME = "data-download-batches"


# The poller's sweeper is on unless turned off: with it, no crash needs an operator.
DEFAULT_SWEEP_REQUEUE = True
DEFAULT_RESEND_AFTER_SECONDS = 1800


def check_provider_url(url: str, *, allow_http: bool) -> str:
    """`url` if it may carry the bearer token (domain/url_settings.py: https, or http where
    allowed); else ConfigError, never showing the URL (it may hold credentials)."""
    if (problem := provider_url_problem(url, allow_http=allow_http)) is None:
        return url
    if allow_http:
        raise ConfigError(f"{ENV_PROVIDER_URL} must be an https or http URL: it {problem}")
    hint = f"set {ENV_ALLOW_HTTP_URLS}=true for a local http provider"
    raise ConfigError(f"{ENV_PROVIDER_URL} must be an https URL: it {problem}; {hint}")


def _url(env: Mapping[str, str], name: str) -> str | None:
    """An http(s) URL setting, or a one-line ConfigError (showing it if it has no userinfo)."""
    raw = env.get(name) or None
    if raw is None or (problem := url_problem(raw, ("http", "https"))) is None:
        return raw
    shown = "" if "@" in raw else f", got {raw!a}"
    raise ConfigError(f"{name} must be an http(s) URL with a host: it {problem}{shown}")


# Every duration, count and size setting, by Settings field: one table, so that none goes
# without a range (a lease of 10**12 s overflowed the datetime arithmetic of every claim).
# The floors admit the local stack's short leases and polls; Terraform's validations may be
# stricter but never wider (tests/unit/test_config_ranges.py holds each variable's range
# inside the one here).
_DAY_S = 86_400
INT_SETTINGS: Mapping[str, IntSetting] = {
    # An SQS visibility timeout, which outlasts the lease, is at most 12 h.
    "lease_seconds": IntSetting(ENV_LEASE_SECONDS, 300, 1, 43_200),
    "poll_interval_seconds": IntSetting(ENV_POLL_INTERVAL_SECONDS, 300, 1, _DAY_S),
    # A durable execution holds at most 25,000 operations, two a poll.
    "max_polls": IntSetting(ENV_MAX_POLLS, 12, 1, 12_000),
    "date_offset_days": IntSetting(ENV_DATE_OFFSET_DAYS, 1, 0, 366),
    # Vendors restate a business day within the next 1-3 days; each day re-checked costs a run
    # one provider listing and one BatchIndex query, so 3 is cheap. A month at most.
    "restatement_window_days": IntSetting(ENV_RESTATEMENT_WINDOW_DAYS, 3, 0, 31),
    "resend_after_seconds": IntSetting(
        ENV_RESEND_AFTER_SECONDS, DEFAULT_RESEND_AFTER_SECONDS, 1, _DAY_S
    ),
    "provider_outage_budget_seconds": IntSetting(
        ENV_PROVIDER_OUTAGE_BUDGET_SECONDS, 7200, 0, _DAY_S
    ),
    "idle_warning_seconds": IntSetting(
        ENV_IDLE_WARNING_SECONDS, DEFAULT_IDLE_WARNING_SECONDS, 1, _DAY_S
    ),
    "stall_floor_bytes": IntSetting(ENV_STALL_FLOOR_BYTES, DEFAULT_STALL_FLOOR_BYTES, 0, 2**40),
    "stall_window_seconds": IntSetting(
        ENV_STALL_WINDOW_SECONDS, DEFAULT_STALL_WINDOW_SECONDS, 1, 3600
    ),
    # A downloader reads a refused key or token's secret again at most this often (per source).
    "secret_reread_seconds": IntSetting(ENV_SECRET_REREAD_SECONDS, 60, 0, 3600),
    "max_share_percent": IntSetting(ENV_MAX_SHARE_PERCENT, DEFAULT_MAX_SHARE_PERCENT, 1, 100),
    "aws_outage_budget_seconds": IntSetting(
        ENV_AWS_OUTAGE_BUDGET_SECONDS, DEFAULT_DEPENDENCY_BUDGET_SECONDS, 0, _DAY_S
    ),
    # S3's largest object is 5 TiB.
    "large_file_threshold_bytes": IntSetting(
        ENV_LARGE_FILE_THRESHOLD_BYTES, DEFAULT_LARGE_FILE_THRESHOLD_BYTES, 0, 5 * 2**40
    ),
    "provider_listing_max_entry_bytes": IntSetting(
        ENV_PROVIDER_LISTING_MAX_ENTRY_BYTES, 64 * 1024, 1, 16 * 2**20
    ),
    "provider_listing_max_files": IntSetting(
        ENV_PROVIDER_LISTING_MAX_FILES, 200_000, 1, 10_000_000
    ),
    "provider_listing_max_pages": IntSetting(ENV_PROVIDER_LISTING_MAX_PAGES, 10_000, 1, 1_000_000),
}
POLL_INTERVAL_MAX_S = INT_SETTINGS["poll_interval_seconds"].maximum
MAX_POLLS_MAX = INT_SETTINGS["max_polls"].maximum


def _default(name: str) -> int:
    return INT_SETTINGS[name].default


def _bool_setting(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if raw == "":
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


@dataclass(frozen=True)
class Settings:
    """Everything dlpipe reads from its environment, with the units in the names."""

    region: str = DEFAULT_REGION
    endpoint_url: str | None = None
    # Per-service endpoints (service name -> URL) that override endpoint_url for that service.
    service_endpoint_urls: Mapping[str, str] = field(default_factory=dict)
    jobs_table: str = JOBS_TABLE_BASE_NAME
    batches_table: str = BATCHES_TABLE_BASE_NAME
    queue_url: str | None = None
    dlq_url: str | None = None
    destination_bucket: str | None = None
    provider_base_url: str | None = None
    provider_token: str | None = field(default=None, repr=False)
    provider_token_secret_id: str | None = None
    private_key_file: str | None = None
    private_key_secret_id: str | None = None
    lease_seconds: int = _default("lease_seconds")
    poll_interval_seconds: int = _default("poll_interval_seconds")
    max_polls: int = _default("max_polls")
    date_offset_days: int = _default("date_offset_days")
    # A scheduled run also re-lists this many earlier days, each restated one getting a run of
    # its own (0: no re-check; a feed's restatement_window_days overrides it).
    restatement_window_days: int = _default("restatement_window_days")
    log_level: str = "INFO"
    orchestrator_arn: str | None = None
    # The poller's sweeper: finish or requeue expired claims, re-send available jobs nobody took.
    sweep_requeue: bool = DEFAULT_SWEEP_REQUEUE
    resend_after_seconds: int = _default("resend_after_seconds")
    # How long a day keeps retrying (suspended, no compute) while the provider is unavailable.
    provider_outage_budget_seconds: int = _default("provider_outage_budget_seconds")
    # How long queued work may wait untouched before run, status and the web view warn.
    idle_warning_seconds: int = _default("idle_warning_seconds")
    # The downloads' stall floor: at least this many bytes in every window of this many seconds.
    stall_floor_bytes: int = _default("stall_floor_bytes")
    stall_window_seconds: int = _default("stall_window_seconds")
    secret_reread_seconds: int = _default("secret_reread_seconds")
    # The share of the downloaders one feed may hold (a feed's max_share_percent overrides it).
    max_share_percent: int = _default("max_share_percent")
    # The same while SQS or DynamoDB is unavailable to the fan-out or a completion check.
    aws_outage_budget_seconds: int = _default("aws_outage_budget_seconds")
    # Host patterns a provider URL may name; empty: the provider's S3 hosts and API host.
    url_allowed_hosts: tuple[str, ...] = ()
    allow_http_urls: bool = False
    allow_private_url_hosts: bool = False
    # Files above the threshold go to the large-file queue, when there is one (dlpipe.domain.routing).
    large_queue_url: str | None = None
    large_file_threshold_bytes: int = _default("large_file_threshold_bytes")
    # Sanity caps of the streamed provider listing (dlpipe/adapters/listing_stream.py).
    provider_listing_max_entry_bytes: int = _default("provider_listing_max_entry_bytes")
    provider_listing_max_files: int = _default("provider_listing_max_files")
    provider_listing_max_pages: int = _default("provider_listing_max_pages")
    # The feed these settings run (dlpipe/feed_settings.py makes a named feed's); the default
    # feed publishes at the bucket's root, a named feed under its destination prefix.
    feed: str = DEFAULT_FEED_NAME
    destination_prefix: str = ""
    # Locally, a named feed's token as `file:PATH` (never in the environment).
    provider_token_file: str | None = None
    feeds_parameter_path: str | None = None
    # Hand-off events (dlpipe/domain/handoff_events.py) and the default feed's deadline.
    event_bus: str = DEFAULT_EVENT_BUS
    day_deadline: str | None = None
    day_deadline_time_zone: str = "UTC"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from `env` (default: the process environment)."""
        env = os.environ if env is None else env
        prefix = env.get(ENV_NAME_PREFIX, "")
        settings = cls(
            region=env.get(ENV_REGION) or env.get(ENV_DEFAULT_REGION) or DEFAULT_REGION,
            endpoint_url=_url(env, ENV_ENDPOINT_URL),
            service_endpoint_urls={
                service: str(_url(env, name))
                for service, name in SERVICE_ENDPOINT_ENV.items()
                if env.get(name)
            },
            jobs_table=env.get(ENV_JOBS_TABLE) or f"{prefix}{JOBS_TABLE_BASE_NAME}",
            batches_table=env.get(ENV_BATCHES_TABLE) or f"{prefix}{BATCHES_TABLE_BASE_NAME}",
            queue_url=_url(env, ENV_QUEUE_URL),
            dlq_url=_url(env, ENV_DLQ_URL),
            destination_bucket=env.get(ENV_DEST_BUCKET) or None,
            provider_base_url=env.get(ENV_PROVIDER_URL) or None,
            provider_token=env.get(ENV_PROVIDER_TOKEN) or None,
            provider_token_secret_id=env.get(ENV_PROVIDER_TOKEN_SECRET) or None,
            private_key_file=env.get(ENV_PRIVATE_KEY_FILE) or None,
            private_key_secret_id=env.get(ENV_PRIVATE_KEY_SECRET) or None,
            log_level=(env.get(ENV_LOG_LEVEL) or "INFO").upper(),
            orchestrator_arn=env.get(ENV_ORCHESTRATOR_ARN) or None,
            sweep_requeue=_bool_setting(env, ENV_SWEEP_REQUEUE, DEFAULT_SWEEP_REQUEUE),
            url_allowed_hosts=tuple(
                h.strip() for h in (env.get(ENV_URL_ALLOWED_HOSTS) or "").split(",") if h.strip()
            ),
            allow_http_urls=_bool_setting(env, ENV_ALLOW_HTTP_URLS),
            allow_private_url_hosts=_bool_setting(env, ENV_ALLOW_PRIVATE_URL_HOSTS),
            large_queue_url=_url(env, ENV_LARGE_QUEUE_URL),
            feeds_parameter_path=env.get(ENV_FEEDS_PARAMETER_PATH) or None,
            event_bus=env.get(ENV_EVENT_BUS) or DEFAULT_EVENT_BUS,
            day_deadline=env.get(ENV_DAY_DEADLINE) or None,
            day_deadline_time_zone=env.get(ENV_DAY_DEADLINE_TIME_ZONE) or "UTC",
        )
        if settings.provider_base_url:  # refused at load, not at the first request
            check_provider_url(settings.provider_base_url, allow_http=settings.allow_http_urls)
        ints: dict[str, Any] = {n: int_setting(env, spec) for n, spec in INT_SETTINGS.items()}
        return replace(settings, **ints)

    def aws_outage_backoff(self) -> OutageBackoff:
        """The retry schedule while SQS or DynamoDB is unavailable, within the budget."""
        return dependency_backoff(self.aws_outage_budget_seconds)

    def endpoint_for(self, service: str) -> str | None:
        """The endpoint of `service`: its own override, else AWS_ENDPOINT_URL, else AWS's."""
        return self.service_endpoint_urls.get(service) or self.endpoint_url

    def provider_url(self) -> str:
        """The provider's base URL, checked by `check_provider_url`; ConfigError if unset."""
        url = self.require("provider_base_url")
        return check_provider_url(url, allow_http=self.allow_http_urls)

    def require(self, attribute: str) -> str:
        """Return a setting that this code path cannot run without, or raise ConfigError
        naming the environment variable to set."""
        value = getattr(self, attribute)
        if not value:
            name = _REQUIRABLE_ENV.get(attribute, f"the setting {attribute!r}")
            raise ConfigError(f"{name} is not set (see README: configuration)")
        return str(value)


# The variable that sets each attribute a code path may `require`.
_REQUIRABLE_ENV = {
    "queue_url": ENV_QUEUE_URL,
    "dlq_url": ENV_DLQ_URL,
    "large_queue_url": ENV_LARGE_QUEUE_URL,
    "destination_bucket": ENV_DEST_BUCKET,
    "provider_base_url": ENV_PROVIDER_URL,
    "orchestrator_arn": ENV_ORCHESTRATOR_ARN,
    "provider_token": ENV_PROVIDER_TOKEN,
    "provider_token_secret_id": ENV_PROVIDER_TOKEN_SECRET,
    "private_key_file": ENV_PRIVATE_KEY_FILE,
    "private_key_secret_id": ENV_PRIVATE_KEY_SECRET,
}

"""Settings are read once from the environment, typed, with clear errors."""

from __future__ import annotations

import pytest

from dlpipe.config import ConfigError, Settings


def test_defaults_are_the_designs_table_names_and_real_aws() -> None:
    """With nothing set: design table names, no endpoint override, 300 s lease."""
    settings = Settings.from_env({})
    assert (settings.jobs_table, settings.batches_table) == (
        "data-download-jobs",
        "data-download-batches",
    )
    assert settings.endpoint_url is None
    assert settings.lease_seconds == 300


def test_name_prefix_applies_to_both_tables_and_explicit_names_win() -> None:
    """DLPIPE_NAME_PREFIX prefixes the tables; DLPIPE_JOBS_TABLE overrides one."""
    settings = Settings.from_env({"DLPIPE_NAME_PREFIX": "dev-", "DLPIPE_JOBS_TABLE": "custom"})
    assert (settings.jobs_table, settings.batches_table) == ("custom", "dev-data-download-batches")


@pytest.mark.parametrize(
    ("value", "match"),
    [("abc", "whole number"), ("0", "from 1 to 43200"), ("-5", "from 1 to 43200")],
)
def test_malformed_numbers_name_the_variable(value: str, match: str) -> None:
    """A bad DLPIPE_LEASE_SECONDS raises ConfigError naming the variable."""
    with pytest.raises(ConfigError, match=f"DLPIPE_LEASE_SECONDS.*{match}"):
        Settings.from_env({"DLPIPE_LEASE_SECONDS": value})


def test_the_restatement_window_is_read_and_defaults_to_three_days() -> None:
    """DLPIPE_RESTATEMENT_WINDOW_DAYS: 3 unset, 0 (off) to 31 loaded as set."""
    assert Settings().restatement_window_days == 3
    assert Settings.from_env({}).restatement_window_days == 3
    for days in ("0", "7", "31"):
        env = {"DLPIPE_RESTATEMENT_WINDOW_DAYS": days}
        assert Settings.from_env(env).restatement_window_days == int(days)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("32", "DLPIPE_RESTATEMENT_WINDOW_DAYS must be from 0 to 31, got 32"),
        ("-1", "DLPIPE_RESTATEMENT_WINDOW_DAYS must be from 0 to 31, got -1"),
        ("1.5", "DLPIPE_RESTATEMENT_WINDOW_DAYS must be a whole number, got '1.5'"),
        ("three", "DLPIPE_RESTATEMENT_WINDOW_DAYS must be a whole number, got 'three'"),
    ],
)
def test_a_bad_restatement_window_is_one_line_naming_the_variable(value: str, message: str) -> None:
    """Out of range or no whole number: the loader's one ConfigError line."""
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"DLPIPE_RESTATEMENT_WINDOW_DAYS": value})
    assert str(refused.value) == message


def test_require_names_a_missing_setting() -> None:
    """require() refuses an unset setting with the environment variable that sets it."""
    with pytest.raises(ConfigError, match=r"^DLPIPE_QUEUE_URL is not set"):
        Settings.from_env({}).require("queue_url")


def test_token_is_not_shown_in_repr() -> None:
    """The provider token never appears in the settings' repr."""
    assert "s3cr3t" not in repr(Settings.from_env({"DLPIPE_PROVIDER_TOKEN": "s3cr3t"}))


def test_the_url_policy_settings_are_read_and_default_to_aws_strict() -> None:
    """Allowed hosts split on commas; http and private hosts are off unless set true."""
    assert Settings.from_env({}).url_allowed_hosts == ()
    assert not Settings.from_env({}).allow_http_urls
    assert not Settings.from_env({}).allow_private_url_hosts
    settings = Settings.from_env(
        {
            "DLPIPE_URL_ALLOWED_HOSTS": " a.example , *.b.example:8443,, ",
            "DLPIPE_ALLOW_HTTP_URLS": "true",
            "DLPIPE_ALLOW_PRIVATE_URL_HOSTS": "1",
        }
    )
    assert settings.url_allowed_hosts == ("a.example", "*.b.example:8443")
    assert settings.allow_http_urls
    assert settings.allow_private_url_hosts
    with pytest.raises(ConfigError, match="DLPIPE_ALLOW_HTTP_URLS"):
        Settings.from_env({"DLPIPE_ALLOW_HTTP_URLS": "sometimes"})


def test_the_downloader_policy_defaults_to_the_regions_s3_hosts_and_the_api_host() -> None:
    """No allowlist configured: the provider's S3 hosts for the region, its API host, https only."""
    from dlpipe.bootstrap.download import url_policy_from_settings

    settings = Settings.from_env(
        {"AWS_REGION": "eu-west-1", "DLPIPE_PROVIDER_URL": "https://api.provider.example/v1"}
    )
    policy = url_policy_from_settings(settings)
    assert policy.allowed_hosts == (
        "*.s3.eu-west-1.amazonaws.com",
        "s3.eu-west-1.amazonaws.com",
        "*.s3.amazonaws.com",
        "s3.amazonaws.com",
        "api.provider.example",
    )
    assert (policy.allow_http, policy.allow_private) == (False, False)


def test_the_local_stack_allows_exactly_the_emulator_over_http() -> None:
    """local_environment names the emulator's host:port and both exemptions, explicitly."""
    from dlpipe.local.emulator import local_environment

    env = local_environment("http://127.0.0.1:4566")
    settings = Settings.from_env(env)
    assert settings.url_allowed_hosts == ("127.0.0.1:4566",)
    assert settings.allow_http_urls
    assert settings.allow_private_url_hosts


HTTP_PROVIDER = "http://provider.example.com/api"


def test_an_http_provider_url_is_refused_unless_http_is_allowed() -> None:
    """The bearer token goes to the provider's URL: plain http is a one-line ConfigError
    naming both variables (not the URL, which may hold credentials) unless allowed."""
    from dlpipe.config import check_provider_url

    for url in (
        HTTP_PROVIDER,
        "http://user:pw@provider.example.com/api",
        "ftp://provider.example.com",
        "provider.example.com",
        "https://",
    ):
        with pytest.raises(ConfigError) as caught:
            check_provider_url(url, allow_http=False)
        message = str(caught.value)
        assert "\n" not in message
        assert not any(part in message for part in ("pw", "user", "provider.example"))
        assert "DLPIPE_PROVIDER_URL must be an https URL" in message
    assert "DLPIPE_ALLOW_HTTP_URLS" in message
    assert check_provider_url(HTTP_PROVIDER, allow_http=True) == HTTP_PROVIDER
    assert check_provider_url("https://p.example/v1", allow_http=False) == "https://p.example/v1"
    with pytest.raises(ConfigError, match="an https or http URL"):
        check_provider_url("ftp://provider.example.com", allow_http=True)


def test_the_provider_client_refuses_http_before_any_request() -> None:
    """ProviderClient itself refuses an http base URL unless told it may (the local stack)."""
    from dlpipe.adapters.provider_client import ProviderClient

    with pytest.raises(ConfigError, match="DLPIPE_ALLOW_HTTP_URLS"):
        ProviderClient(HTTP_PROVIDER, "s3cret")
    assert "s3cret" not in repr(ProviderClient(HTTP_PROVIDER, "s3cret", allow_http=True))


def test_the_orchestrator_and_the_downloader_refuse_an_http_provider_at_build() -> None:
    """Both bootstraps refuse an http provider URL when they are built, before any token is
    sent, and accept it with DLPIPE_ALLOW_HTTP_URLS (as the local stack sets it)."""
    from unittest import mock

    from dlpipe.bootstrap.download import provider_factory
    from dlpipe.bootstrap.orchestrator import build_flow
    from tests.fakes.stores import FakeBatchesTable, FakeJobsTable, FakeQueue
    from tests.support import ManualClock

    clock = ManualClock()
    settings = Settings(provider_base_url=HTTP_PROVIDER, provider_token="s3cret")
    jobs, batches, queue = FakeJobsTable(clock), FakeBatchesTable(clock), FakeQueue()
    clients = mock.Mock()  # the token is read from the settings: no AWS call expected
    with pytest.raises(ConfigError, match="DLPIPE_PROVIDER_URL must be an https URL"):
        build_flow(settings, clients, jobs=jobs, batches=batches, queue=queue, clock=clock)
    with pytest.raises(ConfigError, match="DLPIPE_PROVIDER_URL must be an https URL"):
        provider_factory(settings, clients)
    allowed = Settings(
        provider_base_url=HTTP_PROVIDER, provider_token="s3cret", allow_http_urls=True
    )
    flow = build_flow(allowed, clients, jobs=jobs, batches=batches, queue=queue, clock=clock)
    assert flow.provider is not None
    factory = provider_factory(allowed, clients)
    assert factory is not None
    assert factory() is not None
    assert clients.mock_calls == []

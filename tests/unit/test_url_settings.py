"""Every URL-bearing setting refuses a hostile value at load, in one line naming the
setting, never showing a password the URL carried: the environment's AWS endpoints (one for
each client dlpipe builds, by the name botocore reads), queue URLs and provider URL, and a
feed's provider_base_url and queue_url from the feeds file (local) and from an SSM parameter
(AWS)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cached_property
from typing import Any

import boto3
import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import SERVICE_ENDPOINT_ENV, ConfigError, Settings
from dlpipe.domain.feeds import FeedError, feed_from_mapping

HOSTILE = {
    "port 0": "https://api.example.com:0/v1",
    "port 65536": "https://api.example.com:65536/v1",
    "port 99999": "https://api.example.com:99999/",
    "port abc": "https://api.example.com:abc/",
    "userinfo": "https://admin:PW-CANARY@api.example.com/v1",
    "user only": "https://admin@api.example.com/v1",
    "no host": "https:///v1",
    "ftp": "ftp://api.example.com/v1",
    "no scheme": "api.example.com/v1",
    "space": "https://api.example.com/v 1",
    "newline": "https://api.example.com/v1\nX-Injected: 1",
    "escape": "https://api.example.com/\x1b[2J",
}
_ENV_URLS = (
    "AWS_ENDPOINT_URL",
    *SERVICE_ENDPOINT_ENV.values(),
    "DLPIPE_QUEUE_URL",
    "DLPIPE_DLQ_URL",
    "DLPIPE_LARGE_QUEUE_URL",
    "DLPIPE_PROVIDER_URL",
)
_FEED = {
    "schedule": "rate(1 day)",
    "time_zone": "UTC",
    "destination_prefix": "b",
    "provider_base_url": "https://api.b.example/",
    "token_secret": "arn:aws:secretsmanager:eu-west-2:123456789012:secret:t-AbCdEf",
    "private_key_secret": "arn:aws:secretsmanager:eu-west-2:123456789012:secret:k-AbCdEf",
}


def _env_loader(name: str, allow_http: bool) -> Callable[[str], object]:
    extra = {"DLPIPE_ALLOW_HTTP_URLS": "true"} if allow_http else {}
    return lambda value: Settings.from_env({name: value, **extra})


def _feed_loader(field: str, local: bool) -> Callable[[str], object]:
    return lambda value: feed_from_mapping("b", {**_FEED, field: value}, local=local)


LOADERS: dict[str, tuple[Callable[[str], object], str]] = {
    **{f"env {name}": (_env_loader(name, False), name) for name in _ENV_URLS},
    "env DLPIPE_PROVIDER_URL, http allowed": (
        _env_loader("DLPIPE_PROVIDER_URL", True),
        "DLPIPE_PROVIDER_URL",
    ),
    **{
        f"{where} {field}": (_feed_loader(field, local), f"feeds.b.{field}")
        for where, local in (("feeds file", True), ("SSM parameter", False))
        for field in ("provider_base_url", "queue_url")
    },
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("setting", list(LOADERS))
def test_a_hostile_url_is_refused_at_load_in_one_line(setting: str, case: str) -> None:
    load, named = LOADERS[setting]
    with pytest.raises((ConfigError, FeedError)) as refused:
        load(HOSTILE[case])
    message = str(refused.value)
    assert named in message
    assert "\n" not in message
    assert "PW-CANARY" not in message
    assert "\x1b" not in message


@pytest.mark.parametrize("setting", list(LOADERS))
def test_a_good_url_loads(setting: str) -> None:
    load, _ = LOADERS[setting]
    load("https://api.example.com:8443/v1")
    load("https://api.example.com:65535/v1")
    load("https://api.example.com:1/v1")


def test_userinfo_is_named_without_the_password() -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"DLPIPE_PROVIDER_URL": HOSTILE["userinfo"]})
    assert "carries credentials (user:password@ before the host)" in str(refused.value)


def test_the_port_is_named_as_a_range() -> None:
    refused: Any
    with pytest.raises(FeedError) as refused:
        _feed_loader("provider_base_url", True)("http://127.0.0.1:99999/")
    assert "has a port that is not a number from 1 to 65535" in str(refused.value)


# The services AwsClients builds a client of: its cached properties (`lambda_` is lambda).
CLIENT_SERVICES = [
    name.rstrip("_")
    for name, value in vars(AwsClients).items()
    if isinstance(value, cached_property)
]


@pytest.mark.parametrize("service", CLIENT_SERVICES)
def test_each_clients_endpoint_variable_is_one_checked_at_load(
    service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore reads AWS_ENDPOINT_URL_<SERVICE ID> itself when it builds a client: for each
    client dlpipe builds, SERVICE_ENDPOINT_ENV names that very variable, so it is checked."""
    for name in [n for n in os.environ if n.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", raising=False)
    assert service in SERVICE_ENDPOINT_ENV
    monkeypatch.setenv(SERVICE_ENDPOINT_ENV[service], "http://127.0.0.1:4599")
    client = boto3.Session(region_name="eu-west-1").client(service)
    assert client.meta.endpoint_url == "http://127.0.0.1:4599"


@pytest.mark.parametrize(
    ("service", "name"),
    [("ssm", "AWS_ENDPOINT_URL_SSM"), ("events", "AWS_ENDPOINT_URL_EVENTBRIDGE")],
)
def test_a_services_own_endpoint_wins_over_aws_endpoint_url(service: str, name: str) -> None:
    """As botocore has it: the service's own variable first, then AWS_ENDPOINT_URL."""
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:5000", name: "http://127.0.0.1:4566"}
    assert Settings.from_env(env).endpoint_for(service) == "http://127.0.0.1:4566"

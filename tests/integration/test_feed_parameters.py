"""A named feed's SSM parameter, as terraform/feeds.tf writes it, read from the emulator (moto)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.feed_parameters import ParameterFeeds
from dlpipe.bootstrap.feed_source import feed_source
from dlpipe.config import Settings
from dlpipe.domain.feeds import DEFAULT_FEED, FeedError
from dlpipe.feed_settings import REREAD_INTERVAL_S, UnknownFeedError

pytestmark = pytest.mark.integration

TOKEN_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:dlpipe/feeds/vendor-b/provider-token-AbCdEf"
KEY_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:dlpipe/feeds/vendor-b/rsa-private-key-AbCdEf"
# Every field terraform's jsonencode writes, unset optionals as null.
AS_TERRAFORM_WRITES = {
    "name": "vendor-b",
    "provider_base_url": "https://api.vendor-b.example",
    "schedule": "cron(30 1 * * ? *)",
    "time_zone": "Asia/Tokyo",
    "destination_prefix": "vendors/vendor-b",
    "url_allowed_hosts": ["*.vendor-b.example"],
    "deadline": None,
    "poll_interval_seconds": None,
    "max_polls": 9,
    "large_file_threshold_bytes": None,
    "token_secret": TOKEN_ARN,
    "private_key_secret": KEY_ARN,
}


@pytest.fixture
def path(clients: AwsClients) -> Iterator[str]:
    """A parameter path of this test's own; its parameters are deleted afterwards."""
    prefix = f"/t{uuid.uuid4().hex[:10]}-dlpipe/feeds"
    yield prefix
    found = clients.ssm.get_parameters_by_path(Path=prefix, Recursive=True)["Parameters"]
    for parameter in found:
        clients.ssm.delete_parameter(Name=parameter["Name"])


def put(clients: AwsClients, name: str, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    clients.ssm.put_parameter(Name=name, Value=text, Type="String", Overwrite=True)


def test_a_feed_is_read_from_its_parameter_once_per_process(clients: AwsClients, path: str) -> None:
    put(clients, f"{path}/vendor-b", AS_TERRAFORM_WRITES)
    feeds = ParameterFeeds(clients.ssm, path)
    feed = feeds.feed("vendor-b")
    assert (feed.name, feed.time_zone, feed.max_polls) == ("vendor-b", "Asia/Tokyo", 9)
    assert (feed.token_secret, feed.private_key_secret) == (TOKEN_ARN, KEY_ARN)
    assert feed.url_allowed_hosts == ("*.vendor-b.example",)
    assert feed.poll_interval_seconds is None  # null: the deployment's value
    clients.ssm.delete_parameter(Name=f"{path}/vendor-b")
    assert feeds.feed("vendor-b") is feed  # cached: no second GetParameter


def test_a_parameter_put_after_a_miss_is_found_once_the_interval_passed(
    clients: AwsClients, path: str
) -> None:
    """A feed added while the functions run: its next job after REREAD_INTERVAL_S finds it."""
    now = [0.0]
    feeds = ParameterFeeds(clients.ssm, path, clock=lambda: now[0])
    with pytest.raises(UnknownFeedError):
        feeds.feed("vendor-b")
    put(clients, f"{path}/vendor-b", AS_TERRAFORM_WRITES)
    with pytest.raises(UnknownFeedError):
        feeds.feed("vendor-b")  # remembered: not asked again within the interval
    now[0] += REREAD_INTERVAL_S
    assert feeds.feed("vendor-b").destination_prefix == "vendors/vendor-b"


def test_a_feed_without_a_parameter_is_unknown_naming_it(clients: AwsClients, path: str) -> None:
    with pytest.raises(UnknownFeedError) as unknown:
        ParameterFeeds(clients.ssm, path).feed("vendor-x")
    assert (
        str(unknown.value)
        == f"feed 'vendor-x' is not configured (no SSM parameter {path}/vendor-x)"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not json", "feeds.vendor-b: SSM parameter {path}/vendor-b is not a JSON object"),
        ([1, 2], "feeds.vendor-b: SSM parameter {path}/vendor-b is not a JSON object"),
        (
            {**AS_TERRAFORM_WRITES, "name": "vendor-c"},
            "feeds.vendor-b: SSM parameter {path}/vendor-b names feed vendor-c",
        ),
        (
            {**AS_TERRAFORM_WRITES, "time_zone": "Europe/Nowhere"},
            "feeds.vendor-b.time_zone: 'Europe/Nowhere' is not an IANA time zone",
        ),
        ({**AS_TERRAFORM_WRITES, "colour": "red"}, "feeds.vendor-b.colour: unknown field"),
    ],
)
def test_a_bad_parameter_is_one_feed_error_line_naming_the_feed(
    clients: AwsClients, path: str, value: Any, message: str
) -> None:
    put(clients, f"{path}/vendor-b", value)
    with pytest.raises(FeedError) as refused:
        ParameterFeeds(clients.ssm, path).feed("vendor-b")
    assert str(refused.value) == message.format(path=path)


def test_the_running_functions_find_the_default_feed_then_the_parameters(
    clients: AwsClients, path: str
) -> None:
    put(clients, f"{path}/vendor-b", AS_TERRAFORM_WRITES)
    settings = replace(Settings.from_env(), feeds_parameter_path=path)
    source = feed_source(settings, clients, env={})
    assert source.feed("default") is DEFAULT_FEED  # never a parameter
    assert source.feed("vendor-b").destination_prefix == "vendors/vendor-b"
    with pytest.raises(UnknownFeedError, match=r"^feed 'vendor-x' is not configured$"):
        source.feed("vendor-x")

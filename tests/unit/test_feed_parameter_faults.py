"""A named feed's GetParameter at the adapter edge: a throttle, a 5xx or a lost connection is an
SSM outage that may pass (DependencyUnavailableError, waited out by the orchestrator); a
missing parameter is an unknown feed; anything else is one AwsRequestError line (no AWS)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from dlpipe.adapters.feed_parameters import ParameterFeeds
from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError
from dlpipe.feed_settings import UnknownFeedError

PATH = "/dlpipe/feeds"
VALUE = {
    "provider_base_url": "https://api.vendor-b.example",
    "schedule": "cron(30 1 * * ? *)",
    "time_zone": "Asia/Tokyo",
    "destination_prefix": "vendors/vendor-b",
    "token_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:dlpipe/feeds/vendor-b/provider-token-AbCdEf",
    "private_key_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:dlpipe/feeds/vendor-b/rsa-private-key-AbCdEf",
}


def client_error(code: str, status: int, message: str = "Rate exceeded") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "GetParameter",
    )


@dataclass
class Ssm:
    """GetParameter that raises `faults` in turn, then answers VALUE."""

    faults: list[Callable[[], Exception]]
    calls: list[str] = field(default_factory=list)

    def get_parameter(self, **request: Any) -> Mapping[str, Any]:
        self.calls.append(request["Name"])
        if self.faults:
            raise self.faults.pop(0)()
        return {"Parameter": {"Name": request["Name"], "Value": json.dumps(VALUE)}}


@pytest.mark.parametrize(
    "fault",
    [
        lambda: client_error("ThrottlingException", 400),
        lambda: client_error("InternalServerError", 500),
        lambda: EndpointConnectionError(endpoint_url="https://ssm.eu-west-1.amazonaws.com"),
    ],
    ids=["throttled", "5xx", "connection"],
)
def test_an_ssm_outage_is_a_dependency_outage_and_the_next_read_finds_the_feed(
    fault: Callable[[], Exception],
) -> None:
    ssm = Ssm([fault])
    feeds = ParameterFeeds(ssm, PATH)
    with pytest.raises(DependencyUnavailableError) as down:
        feeds.feed("vendor-b")
    assert down.value.dependency == "SSM"
    assert str(down.value).startswith("SSM GetParameter: ")
    assert "\n" not in str(down.value)
    # The outage is not remembered: the next read asks again and finds the feed.
    assert feeds.feed("vendor-b").destination_prefix == "vendors/vendor-b"
    assert ssm.calls == [f"{PATH}/vendor-b"] * 2


def test_a_missing_parameter_is_an_unknown_feed_naming_it() -> None:
    ssm = Ssm([lambda: client_error("ParameterNotFound", 400)])
    with pytest.raises(UnknownFeedError) as unknown:
        ParameterFeeds(ssm, PATH).feed("vendor-x")
    assert (
        str(unknown.value)
        == f"feed 'vendor-x' is not configured (no SSM parameter {PATH}/vendor-x)"
    )


def test_a_refusal_that_will_not_pass_is_one_line_naming_the_parameter() -> None:
    ssm = Ssm([lambda: client_error("AccessDeniedException", 400, "not authorized")])
    with pytest.raises(AwsRequestError) as refused:
        ParameterFeeds(ssm, PATH).feed("vendor-b")
    assert str(refused.value) == (
        f"SSM GetParameter on '{PATH}/vendor-b' refused: AccessDeniedException: not authorized"
    )

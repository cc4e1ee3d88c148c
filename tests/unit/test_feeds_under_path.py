"""The operators' listing of the feeds' SSM parameters: every page read, a bad name refused."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from dlpipe.adapters.feed_parameters import feeds_under_path
from dlpipe.domain.feeds import FeedError

FEED = {
    "provider_base_url": "https://api.vendor.example",
    "schedule": "cron(30 1 * * ? *)",
    "time_zone": "UTC",
    "deadline": "09:00",
    "url_allowed_hosts": ["*.vendor.example"],
    "token_secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:token-AbCdEf",
    "private_key_secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:key-AbCdEf",
}


def feed_of(parameter: str) -> dict[str, Any]:
    return {**FEED, "destination_prefix": "vendors/" + parameter.rsplit("/", 1)[-1]}


class PagedParameters:
    """GetParametersByPath over `names`, `page_size` a page, as SSM pages (NextToken)."""

    def __init__(self, names: list[str], page_size: int) -> None:
        self.names, self.page_size = names, page_size
        self.requests: list[dict[str, Any]] = []

    def get_parameters_by_path(self, **request: Any) -> Mapping[str, Any]:
        self.requests.append(request)
        start = int(request.get("NextToken", "0"))
        page = self.names[start : start + self.page_size]
        found = [{"Name": name, "Value": json.dumps(feed_of(name))} for name in page]
        end = start + self.page_size
        return {"Parameters": found, **({"NextToken": str(end)} if end < len(self.names) else {})}


def test_every_page_is_read() -> None:
    names = [f"/dlpipe/feeds/vendor-{i}" for i in range(25)]
    client = PagedParameters(names, page_size=10)
    feeds = feeds_under_path(client, "/dlpipe/feeds/")
    assert sorted(feeds) == sorted(f"vendor-{i}" for i in range(25))
    assert feeds["vendor-7"].deadline == "09:00"
    assert [r.get("NextToken") for r in client.requests] == [None, "10", "20"]
    assert {r["Path"] for r in client.requests} == {"/dlpipe/feeds"}


def test_a_parameter_whose_name_is_no_feed_name_is_one_line() -> None:
    client = PagedParameters(["/dlpipe/feeds/Vendor_B"], page_size=10)
    with pytest.raises(FeedError) as raised:
        feeds_under_path(client, "/dlpipe/feeds")
    assert (
        str(raised.value) == "SSM parameter /dlpipe/feeds/Vendor_B: 'Vendor_B' is not a feed name"
    )

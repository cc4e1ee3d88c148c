"""The local stack's feeds: the shipped template, `local up --feeds N`'s numbered feeds, and
the effective feeds the stack writes to SSM once its stubs' ports are known."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from dlpipe.adapters.feed_parameters import feed_from_parameter, parameter_value
from dlpipe.domain.feeds import FeedError
from dlpipe.local.stack_feeds import (
    LOCAL_FEEDS_TEMPLATE,
    effective_feeds,
    named_feed_keys,
    numbered_feeds,
    read_template,
)

TOKEN_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:dlpipe/feeds/vendor-b/provider-token-AbCdEf"
KEY_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:dlpipe/feeds/vendor-b/rsa-private-key-AbCdEf"


def test_the_shipped_template_runs_the_default_feed_and_vendor_b_under_its_own_prefix() -> None:
    """feeds.local.toml: the default feed (bucket root) and vendor-b (under vendor-b/)."""
    tables = read_template(LOCAL_FEEDS_TEMPLATE)
    assert list(tables) == ["default", "vendor-b"]
    assert tables["vendor-b"]["destination_prefix"] == "vendor-b"
    assert "destination_prefix" not in tables["default"]


def test_numbered_feeds_are_the_default_then_feed_2_to_n_each_under_its_name() -> None:
    """--feeds 3: default, feed-2, feed-3; each named feed publishes under its own prefix."""
    tables = numbered_feeds(3)
    assert list(tables) == ["default", "feed-2", "feed-3"]
    assert [tables[n]["destination_prefix"] for n in ("feed-2", "feed-3")] == ["feed-2", "feed-3"]


@pytest.mark.parametrize("count", [0, 9, -1])
def test_a_feed_count_out_of_bounds_is_one_line_naming_the_range(count: int) -> None:
    """--feeds outside 1..8: FeedError, one line, naming the range."""
    with pytest.raises(FeedError, match=r"^--feeds must be 1 to 8, got -?\d+$"):
        numbered_feeds(count)


def test_a_template_setting_a_field_the_stack_fills_is_refused_naming_it(tmp_path: Path) -> None:
    """A template's provider_base_url would be overwritten by the stub's: refused, one line."""
    template = tmp_path / "feeds.toml"
    template.write_text(
        '[feeds.vendor-b]\nschedule = "rate(1 day)"\ntime_zone = "UTC"\n'
        'destination_prefix = "b"\nprovider_base_url = "https://b.example/"\n'
    )
    with pytest.raises(FeedError) as caught:
        read_template(template)
    assert str(caught.value) == (
        f"{template}: feeds.vendor-b.provider_base_url: set by the local stack, leave it out"
    )


def test_a_template_with_an_invalid_field_is_refused_by_the_feeds_rule(tmp_path: Path) -> None:
    """Every other field is checked by the one rule, before any stub starts."""
    template = tmp_path / "feeds.toml"
    template.write_text('[feeds.vendor-b]\nschedule = "daily"\ntime_zone = "UTC"\n')
    with pytest.raises(FeedError, match=r"feeds\.vendor-b\.schedule: 'daily' is not a cron"):
        read_template(template)


def test_the_effective_feeds_give_each_named_feed_its_stub_secrets_and_the_emulator(
    tmp_path: Path,
) -> None:
    """What the stack writes to SSM: vendor-b's stub URL, the ARNs of its own token and key
    secrets, the emulator's host as its allowlist; the default feed keeps the settings. Its
    key and token files, which the stub reads, are 0600."""
    tables = read_template(LOCAL_FEEDS_TEMPLATE)
    keys = named_feed_keys(tmp_path / "vendor-b")
    urls = {"vendor-b": "http://127.0.0.1:9001"}
    arns = (TOKEN_ARN, KEY_ARN)
    feeds = effective_feeds(tables, {"vendor-b": arns}, urls, ("127.0.0.1:4566",))
    vendor_b = feeds["vendor-b"]
    assert vendor_b.provider_base_url == "http://127.0.0.1:9001"
    assert vendor_b.url_allowed_hosts == ("127.0.0.1:4566",)
    assert (vendor_b.token_secret, vendor_b.private_key_secret) == arns
    assert keys.private_key_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    paths = (keys.private_key_path, Path(str(keys.token_path)))
    assert {stat.S_IMODE(p.stat().st_mode) for p in paths} == {0o600}
    assert (feeds["default"].provider_base_url, feeds["default"].token_secret) == (None, None)
    # As a parameter, read back as the functions read it (the local switch on: http).
    value = parameter_value(vendor_b)
    assert feed_from_parameter("vendor-b", "/dlpipe/feeds/vendor-b", value, local=True) == vendor_b

"""A feed's fields are validated by one rule, whatever loads them; errors are one line
naming the feed and the field."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dlpipe.domain.feeds import (
    DEFAULT_FEED,
    DEFAULT_FEED_NAME,
    FeedError,
    feed_fields,
    feed_from_fields,
    feed_from_mapping,
)
from dlpipe.domain.model import make_file_id
from dlpipe.feeds_file import feeds_from_document, feeds_from_env, load_feeds_file

EXAMPLE = Path(__file__).resolve().parents[2] / "feeds.example.toml"

NAMED: dict[str, Any] = {
    "provider_base_url": "https://api.vendor-b.example/",
    "token_secret": "dlpipe/vendor-b/token",
    "private_key_secret": "arn:aws:secretsmanager:eu-west-2:123456789012:secret:dlpipe/key-AbCdEf",
    "schedule": "cron(0 7 * * ? *)",
    "time_zone": "Europe/London",
    "destination_prefix": "vendor-b",
}


def _refused(name: str, values: dict[str, Any], *, local: bool = True) -> str:
    with pytest.raises(FeedError) as refused:
        feed_from_mapping(name, values, local=local)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_named_feed_with_every_field_loads() -> None:
    """Every field, overrides included, lands in the record."""
    feed = feed_from_mapping(
        "vendor-b",
        {
            **NAMED,
            "url_allowed_hosts": ["a.example", "*.s3.amazonaws.com:443"],
            "deadline": "09:30",
            "poll_interval_seconds": 60,
            "max_polls": 5,
            "large_file_threshold_bytes": 0,
        },
        local=True,
    )
    assert feed.name == "vendor-b"
    assert not feed.is_default
    assert feed.url_allowed_hosts == ("a.example", "*.s3.amazonaws.com:443")
    assert (feed.deadline, feed.poll_interval_seconds, feed.max_polls) == ("09:30", 60, 5)


def test_a_feeds_fields_pass_through_json_and_give_the_same_feed_back() -> None:
    """What the orchestrator checkpoints of a looked-up feed (its fields but the name) loads
    back to the same feed, for a named feed with every field and for the default feed."""
    named = feed_from_mapping(
        "vendor-b", {**NAMED, "url_allowed_hosts": ["a.example"], "deadline": "09:30"}, local=True
    )
    for feed in (named, DEFAULT_FEED):
        fields = json.loads(json.dumps(feed_fields(feed)))
        assert "name" not in fields
        assert feed_from_fields(feed.name, fields) == feed
    # As it was, not validated again: a run's --poll-interval 1 is below a feed's own minimum.
    overridden = replace(named, poll_interval_seconds=1)
    assert feed_from_fields("vendor-b", feed_fields(overridden)) == overridden


def test_the_default_feed_is_todays_provider() -> None:
    """Named default, today's schedule, settings from the environment, keys as before."""
    assert DEFAULT_FEED.name == DEFAULT_FEED_NAME == "default"
    assert (DEFAULT_FEED.schedule, DEFAULT_FEED.time_zone) == ("cron(30 6 * * ? *)", "UTC")
    assert DEFAULT_FEED.provider_base_url is None
    assert DEFAULT_FEED.destination_prefix == ""
    assert feed_from_mapping("default", {}) == DEFAULT_FEED
    assert make_file_id("accounts", "2026-02-28", DEFAULT_FEED.name) == "accounts-2026-02-28"


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("time_zone", "Europe/Nowhere", "'Europe/Nowhere' is not an IANA time zone"),
        ("time_zone", "../../etc/passwd", "is not an IANA time zone"),
        ("time_zone", "", "is not an IANA time zone"),
        ("schedule", "cron(0 7 * * ?)", "is not a cron(6 fields) or rate(N unit)"),
        ("schedule", "rate(0 days)", "is not a cron(6 fields) or rate(N unit)"),
        ("schedule", "every day", "is not a cron(6 fields) or rate(N unit)"),
        ("schedule", "cron(0 7 * * ? \U0001f600)", "is not a cron(6 fields) or rate(N unit)"),
        ("provider_base_url", "ftp://x.example/", "must be an https or http URL"),
        ("provider_base_url", "https://user:pw@x.example/", "must be an https or http URL"),
        ("provider_base_url", "https://x.example/?apikey=1", "no credentials, query or fragment"),
        ("provider_base_url", "https://[oops/", "must be an https or http URL"),
        ("provider_base_url", None, "is required for a named feed"),
        ("token_secret", "a:b", "is not a Secrets Manager name or ARN, or file:PATH"),
        ("token_secret", "file:", "is not a Secrets Manager name or ARN, or file:PATH"),
        ("private_key_secret", None, "is required for a named feed"),
        ("private_key_secret", 7, "is not a Secrets Manager name or ARN"),
        ("destination_prefix", "", "is required for a named feed"),
        ("destination_prefix", "a/../b", "is not a key prefix"),
        ("destination_prefix", "/vendor-b", "is not a key prefix"),
        ("destination_prefix", "vendor-b//", "is not a key prefix"),
        ("destination_prefix", "/", "is not a key prefix"),
        ("destination_prefix", "a" * 201, "is not a key prefix"),
        ("url_allowed_hosts", "a.example", "is not a list of host patterns"),
        ("url_allowed_hosts", ["https://a.example/"], "is not a host pattern"),
        ("url_allowed_hosts", ["*"], "is not a host pattern"),
        ("deadline", "9:30", "is not a local time HH:MM"),
        ("deadline", "24:00", "is not a local time HH:MM"),
        ("poll_interval_seconds", 9, "is not a whole number >= 10 and <= 86400"),
        ("poll_interval_seconds", 86401, "is not a whole number >= 10 and <= 86400"),
        ("max_polls", True, "is not a whole number >= 1"),
        ("max_polls", 1001, "is not a whole number >= 1 and <= 1000"),
        ("max_polls", "3", "is not a whole number >= 1"),
        ("large_file_threshold_bytes", -1, "is not a whole number >= 0"),
    ],
)
def test_each_bad_field_is_one_line_naming_feed_and_field(field: str, value: Any, why: str) -> None:
    """feeds.{feed}.{field}: {why}."""
    message = _refused("vendor-b", {**NAMED, field: value})
    assert message.startswith(f"feeds.vendor-b.{field}: ")
    assert why in message


@pytest.mark.parametrize("days", [0, 3, 31, None])
def test_a_feeds_restatement_window_takes_0_to_31_days(days: int | None) -> None:
    """0 turns the feed's re-check off, 31 is the longest window; None: the deployment's."""
    values = NAMED if days is None else {**NAMED, "restatement_window_days": days}
    assert feed_from_mapping("vendor-b", values, local=True).restatement_window_days == days


@pytest.mark.parametrize("value", [32, -1, 1.5, True, "3"])
def test_a_bad_restatement_window_is_one_line_naming_the_field(value: Any) -> None:
    """Not a whole number from 0 to 31 (a bool or a string neither): one line, the range."""
    message = _refused("vendor-b", {**NAMED, "restatement_window_days": value})
    assert message == (
        f"feeds.vendor-b.restatement_window_days: {value!a} is not a whole number >= 0 and <= 31"
    )


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("provider_base_url", "http://x.example/", "must be an https URL with a host"),
        ("token_secret", "dlpipe/vendor-b/token", "is not a Secrets Manager secret's ARN"),
        ("private_key_secret", "file:/k.pem", "is not a Secrets Manager secret's ARN"),
    ],
)
def test_off_the_local_switch_only_https_and_secret_arns_load(
    field: str, value: Any, why: str
) -> None:
    """On AWS a provider is https and a secret an ARN; http, names and files are local."""
    arns = dict.fromkeys(("token_secret", "private_key_secret"), NAMED["private_key_secret"])
    message = _refused("vendor-b", {**NAMED, **arns, field: value}, local=False)
    assert message.startswith(f"feeds.vendor-b.{field}: ")
    assert why in message
    assert feed_from_mapping("vendor-b", {**NAMED, **arns}).token_secret == arns["token_secret"]


@pytest.mark.parametrize("written", ["vendor-b/daily", "vendor-b/daily/"])
def test_a_prefix_loads_with_or_without_its_trailing_slash(written: str) -> None:
    """Terraform's examples write "vendor-b/daily/"; the feed's prefix is "vendor-b/daily"."""
    feed = feed_from_mapping("vendor-b", {**NAMED, "destination_prefix": written}, local=True)
    assert feed.destination_prefix == "vendor-b/daily"


@pytest.mark.parametrize("name", ["Vendor-B", "vendor.b", "-x", "x" * 32, ""])
def test_a_bad_feed_name_is_refused(name: str) -> None:
    """Names are [a-z0-9][a-z0-9-]{0,30}: no '.', so keys can carry them."""
    assert "is not a feed name" in _refused(name, NAMED)


def test_an_unknown_field_is_refused_not_ignored() -> None:
    """A misspelt field would silently fall back to a default."""
    assert (
        _refused("vendor-b", {**NAMED, "timezone": "UTC"})
        == "feeds.vendor-b.timezone: unknown field"
    )


def test_a_secret_may_be_a_local_file_and_shared() -> None:
    """file:PATH locally; the same key may serve two feeds."""
    feed = feed_from_mapping(
        "b", {**NAMED, "token_secret": "file:/t", "private_key_secret": "file:k"}, local=True
    )
    assert (feed.token_secret, feed.private_key_secret) == ("file:/t", "file:k")


# The shape of a PEM private key (is_pem_private_key checks the shape; crypto loads it).
PEM_SHAPED = (
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
)


def _secret_files(folder: Path, token: str = "tok-123", key: str = PEM_SHAPED) -> None:
    """The files feeds.example.toml's vendor-b names, relative to `folder`."""
    (folder / ".dlpipe/feeds/vendor-b").mkdir(parents=True)
    (folder / ".dlpipe/feeds/vendor-b/token").write_text(token)
    (folder / ".dlpipe/feeds/vendor-b/private_key.pem").write_text(key)


def test_the_example_file_loads_two_feeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """feeds.example.toml: default and vendor-b, loaded through DLPIPE_FEEDS_FILE (its
    `file:` secrets, relative to the working directory, exist)."""
    monkeypatch.chdir(tmp_path)
    _secret_files(tmp_path)
    feeds = feeds_from_env({"DLPIPE_FEEDS_FILE": str(EXAMPLE)})
    assert list(feeds) == ["default", "vendor-b"]
    assert feeds["default"] == DEFAULT_FEED
    assert feeds["vendor-b"].time_zone == "Europe/London"


def test_without_a_feeds_file_there_is_the_default_feed_alone() -> None:
    """The behaviour before feeds."""
    assert feeds_from_env({}) == {"default": DEFAULT_FEED}


_VENDOR_B = "[feeds.vendor-b]\n" + "".join(
    f'{key} = "{value}"\n' for key, value in NAMED.items() if key != "time_zone"
)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            _VENDOR_B + 'time_zone = "Europe/Nowhere"\n',
            "feeds.vendor-b.time_zone: 'Europe/Nowhere' is not an IANA time zone",
        ),
        ("[feeds.b]\nschedule = \n", "not a TOML file: "),
        ("[other]\n", "'other': unknown top-level key"),
        ("feeds = 3\n", "feeds: no [feeds.NAME] table"),
        ("[feeds]\nb = 3\n", "feeds.b: must be a table of fields"),
    ],
)
def test_file_errors_are_one_line_naming_the_file(tmp_path: Path, text: str, why: str) -> None:
    """{file}: feeds.{feed}.{field}: ..."""
    path = tmp_path / "feeds.toml"
    path.write_text(text)
    with pytest.raises(FeedError) as refused:
        load_feeds_file(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert why in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    """Not a traceback: the path and why."""
    with pytest.raises(FeedError, match="cannot be read"):
        load_feeds_file(tmp_path / "absent.toml")


def test_two_feeds_may_not_share_a_destination_prefix() -> None:
    """Consumers tell feeds apart by prefix."""
    with pytest.raises(
        FeedError, match=r"^feeds.c.destination_prefix: 'vendor-b' overlaps feed b's 'vendor-b'"
    ):
        feeds_from_document({"feeds": {"b": NAMED, "c": NAMED}})


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ("accounts", "accounts/vendor", True),
        ("vendor/daily", "vendor", True),
        ("vendor", "vendor-b", False),
        ("a/b", "a/bc", False),
        ("a/b/c", "a/b/c", True),
        ("vendor-b", "Vendor-B/", True),  # one folder on a case-insensitive disk
        ("Accounts", "accounts/vendor", True),
    ],
)
def test_no_feed_s_prefix_may_contain_or_lie_inside_another_s(
    first: str, second: str, overlap: bool
) -> None:
    """A consumer listing `accounts/` must not find another feed's files in it."""
    document = {"feeds": {"b": {**NAMED, "destination_prefix": first},
                          "c": {**NAMED, "destination_prefix": second}}}  # fmt: skip
    if not overlap:
        assert set(feeds_from_document(document)) == {"b", "c"}
        return
    with pytest.raises(FeedError, match=r"^feeds.c.destination_prefix: .* overlaps feed b's"):
        feeds_from_document(document)


def test_the_default_feed_may_not_be_given_a_named_feed_s_prefix() -> None:
    """Its files would land among vendor-b's; one line naming both feeds and prefixes."""
    document = {"feeds": {"default": {"destination_prefix": "vendor-b"}, "vendor-b": NAMED}}
    with pytest.raises(FeedError) as refused:
        feeds_from_document(document)
    assert str(refused.value) == (
        "feeds.vendor-b.destination_prefix: 'vendor-b' overlaps feed default's 'vendor-b' (no"
        " prefix may equal, contain or lie inside another, in any letter case)"
    )


def test_the_default_feed_at_the_bucket_s_root_meets_no_named_feed() -> None:
    """'' is its own place: the root guard keeps its entities off the named feeds' prefixes."""
    document = {"feeds": {"default": {}, "vendor-b": NAMED}}
    assert set(feeds_from_document(document)) == {"default", "vendor-b"}


@pytest.mark.parametrize(
    "prefix", ["_dlpipe", "_dlpipe/manifests", "_dlpipe/x/", "_DLPipe/manifests"]
)
def test_a_feed_may_not_publish_where_dlpipe_keeps_its_own_keys(prefix: str) -> None:
    """The day manifests live under _dlpipe/manifests/: no feed's files go there."""
    assert "_dlpipe/" in _refused("b", {**NAMED, "destination_prefix": prefix})


def test_a_name_field_inside_the_table_is_refused() -> None:
    """The table's key is the feed's one name; a second spelling could disagree."""
    assert _refused("b", {**NAMED, "name": "c"}) == "feeds.b.name: unknown field"


def test_a_named_feed_without_schedule_or_time_zone_is_told_they_are_required() -> None:
    """Only the default feed falls back to today's schedule."""
    values = {k: v for k, v in NAMED.items() if k != "schedule"}
    assert _refused("vendor-b", values) == "feeds.vendor-b.schedule: is required"


def test_a_feed_name_with_a_newline_still_makes_one_line(tmp_path: Path) -> None:
    """TOML allows any quoted key; the message quotes it, and stays one line."""
    path = tmp_path / "feeds.toml"
    path.write_text('[feeds."a\\nb"]\ntimezone = "UTC"\n')
    with pytest.raises(FeedError) as refused:
        load_feeds_file(path)
    assert "\n" not in str(refused.value)
    assert "feeds.'a\\nb'.timezone: unknown field" in str(refused.value)


@pytest.mark.parametrize(
    ("token", "key", "why"),
    [
        (None, PEM_SHAPED, "token_secret: file '.dlpipe/feeds/vendor-b/token' cannot be read"),
        ("tok-CANARY\nsecond-line", PEM_SHAPED, "token_secret: file '.dlpipe/feeds/vendor-b/token'"
         " does not hold one token"),
        ("tok CANARY", PEM_SHAPED, "does not hold one token"),
        ("tok-123", "root:x:0:0:CANARY:/root:/bin/bash\n", "private_key_secret: file"
         " '.dlpipe/feeds/vendor-b/private_key.pem' does not hold one PEM private key"),
        ("tok-123", PEM_SHAPED.replace("PRIVATE KEY", "PUBLIC KEY") + "CANARY", "one PEM private key"),
        ("tok-123", "CANARY" * 20_000, "is larger than 65536 bytes"),
        ("tok-123", None, "private_key_secret: file '.dlpipe/feeds/vendor-b/private_key.pem' cannot"),
    ],
)  # fmt: skip
def test_file_secrets_exist_and_are_what_they_claim_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str | None, key: str | None, why: str
) -> None:
    """A missing token file, a two-line token, /etc/passwd as a key: refused when the feeds
    file is read, in one line naming the feed, field and path, never what the file holds."""
    monkeypatch.chdir(tmp_path)
    _secret_files(tmp_path, token or "x", key or "x")
    folder = tmp_path / ".dlpipe/feeds/vendor-b"
    if token is None:
        (folder / "token").unlink()
    if key is None:
        (folder / "private_key.pem").unlink()
    with pytest.raises(FeedError) as refused:
        load_feeds_file(EXAMPLE)
    message = str(refused.value)
    assert why in message
    assert "\n" not in message
    assert "CANARY" not in message

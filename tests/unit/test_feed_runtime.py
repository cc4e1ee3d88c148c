"""A feed's settings, where feeds are found, and which feed's day an event runs (no AWS)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner

from dlpipe.adapters.lambda_starter import LambdaStarter
from dlpipe.adapters.provider_token import token_from_settings
from dlpipe.bootstrap.orchestrator import feed_runs
from dlpipe.cli.worker import worker_command
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.events import parse_event
from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.feed_settings import ChainedFeeds, FileFeeds, UnknownFeedError, settings_for_feed
from dlpipe.services.orchestrator.durable import build_durable_handler
from tests.unit.test_orchestrator_durable import FakeFlow, failure_of, result_of, run

VENDOR = Feed(
    name="vendor-b",
    schedule="cron(30 1 * * ? *)",
    time_zone="Asia/Tokyo",
    provider_base_url="https://api.vendor-b.example",
    token_secret="dlpipe/feeds/vendor-b/provider-token",
    private_key_secret="file:/keys/vendor-b.pem",
    destination_prefix="vendors/vendor-b",
    poll_interval_seconds=600,
    max_polls=9,
    large_file_threshold_bytes=1024,
    stall_floor_bytes=4096,
    stall_window_seconds=120,
)
PROCESS = Settings(
    provider_base_url="https://api.default.example",
    provider_token="local-token",
    provider_token_secret_id="dlpipe/provider-token",
    private_key_secret_id="dlpipe/rsa-private-key",
    url_allowed_hosts=("*.default.example",),
)


def test_the_default_feed_without_overrides_keeps_the_settings_unchanged() -> None:
    assert settings_for_feed(PROCESS, DEFAULT_FEED) == PROCESS
    assert settings_for_feed(Settings(), DEFAULT_FEED) == Settings()


def test_a_named_feeds_settings_are_its_own_and_nothing_of_the_defaults_secrets() -> None:
    own = settings_for_feed(PROCESS, VENDOR)
    assert (own.feed, own.destination_prefix) == ("vendor-b", "vendors/vendor-b")
    assert own.provider_base_url == "https://api.vendor-b.example"
    # Exactly one source each: the process's token and key secret must never stand in.
    assert (own.provider_token, own.provider_token_file) == (None, None)
    assert own.provider_token_secret_id == "dlpipe/feeds/vendor-b/provider-token"
    assert (own.private_key_secret_id, own.private_key_file) == (None, "/keys/vendor-b.pem")
    assert own.url_allowed_hosts == ()  # its own provider's hosts, not the default's list
    assert (own.poll_interval_seconds, own.max_polls) == (600, 9)
    assert own.large_file_threshold_bytes == 1024
    assert (own.stall_floor_bytes, own.stall_window_seconds) == (4096, 120)
    assert own.jobs_table == PROCESS.jobs_table  # the deployment's tables, queues, bucket


@pytest.mark.parametrize("days", [0, 7])
def test_a_feeds_restatement_window_is_its_own_over_the_deployments(days: int) -> None:
    """A feed's restatement_window_days (0 too: off for that feed) replaces the process's;
    a feed that sets none keeps the deployment's (DLPIPE_RESTATEMENT_WINDOW_DAYS)."""
    process = replace(PROCESS, restatement_window_days=5)
    own = settings_for_feed(process, replace(VENDOR, restatement_window_days=days))
    assert own.restatement_window_days == days
    assert settings_for_feed(process, VENDOR).restatement_window_days == 5
    assert settings_for_feed(process, DEFAULT_FEED).restatement_window_days == 5


def test_a_feeds_downloads_use_its_own_stall_floor_and_the_default_keeps_the_process() -> None:
    """FeedParts gives the feed's service its floor; the default feed's is DLPIPE_STALL_*."""
    from dlpipe.bootstrap.download import stall_floor, tuning_from_settings
    from dlpipe.domain.stall import StallFloor

    assert stall_floor(settings_for_feed(PROCESS, VENDOR)) == StallFloor(4096, 120)
    assert tuning_from_settings(PROCESS).stall_floor == StallFloor()


def test_a_token_given_as_a_file_is_read_from_it(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  vendor-token\n")
    own = settings_for_feed(PROCESS, replace(VENDOR, token_secret=f"file:{token_file}"))
    assert (own.provider_token_secret_id, own.provider_token_file) == (None, str(token_file))
    assert token_from_settings(own, clients=None) == "vendor-token"  # type: ignore[arg-type]


@pytest.mark.parametrize(("content", "why"), [(None, "cannot be read"), ("\n", "holds no")])
def test_an_unusable_token_file_is_one_config_error_line(
    tmp_path: Path, content: str | None, why: str
) -> None:
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    with pytest.raises(ConfigError, match=why) as refused:
        token_from_settings(Settings(provider_token_file=str(token_file)), clients=None)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)


PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"


@pytest.mark.parametrize(
    "token", ["abc\ndef-secret-part", "Bearer abc", "tok\x1b[2Jen", "t\u00f6ken", PASSWD]
)
def test_a_token_that_is_no_header_value_is_refused_without_being_shown(
    tmp_path: Path, token: str
) -> None:
    """A token the HTTP library would refuse (and quote whole in its error, which reached the
    batch's outcome, the Day Failed event and every log line) is refused where it is read, in
    one line that shows none of it: as a value, a file (`file:/etc/passwd`) or a secret."""
    token_file = tmp_path / "token"
    token_file.write_text(token)
    sm = boto3.client("secretsmanager", region_name="us-east-1")
    stubber = Stubber(sm)
    stubber.add_response("get_secret_value", {"SecretString": token}, {"SecretId": "tok"})
    for settings in (
        Settings(provider_token=token),
        Settings(provider_token_file=str(token_file)),
        Settings(provider_token_secret_id="tok"),
    ):
        with stubber, pytest.raises(ConfigError, match="is not one line of visible") as refused:
            token_from_settings(settings, clients=SimpleNamespace(secretsmanager=sm))  # type: ignore[arg-type]
        shown = str(refused.value)
        assert "\n" not in shown
        assert not [part for part in token.split() if len(part) > 3 and part in shown], shown


def test_the_default_feed_is_always_known_and_another_is_named_when_unknown() -> None:
    feeds = FileFeeds({"vendor-b": VENDOR}, " in the feeds file")
    assert feeds.feed("default") is DEFAULT_FEED
    assert feeds.feed("vendor-b") is VENDOR
    with pytest.raises(UnknownFeedError, match=r"^feed 'vendor-x' is not configured in the"):
        feeds.feed("vendor-x")


def test_chained_sources_answer_from_the_first_that_knows_the_feed() -> None:
    other = replace(VENDOR, name="vendor-c", destination_prefix="c")
    chained = ChainedFeeds(FileFeeds({"vendor-b": VENDOR}), FileFeeds({"vendor-c": other}))
    assert chained.feed("vendor-c") is other
    with pytest.raises(UnknownFeedError, match=r"^feed 'vendor-x' is not configured$"):
        chained.feed("vendor-x")


@pytest.mark.parametrize(
    ("time_zone", "scheduled", "day"),
    [
        ("UTC", "2026-03-01T23:30:00Z", "2026-02-28"),
        # 08:30 on March 2nd in Tokyo: its day is the 2nd, and it polls the 1st.
        ("Asia/Tokyo", "2026-03-01T23:30:00Z", "2026-03-01"),
        # 22:00 on February 28th in Los Angeles: it polls the 27th.
        ("America/Los_Angeles", "2026-03-01T06:00:00Z", "2026-02-27"),
    ],
)
def test_a_scheduled_event_polls_the_day_before_the_feeds_local_day(
    time_zone: str, scheduled: str, day: str
) -> None:
    event = {"scheduled_time": scheduled, "feed": "vendor-b"}
    assert parse_event(event, 1, time_zone).polling_date == day


def _handler(built: list[Settings]) -> object:
    def build(own: Settings) -> FakeFlow:
        built.append(own)
        return FakeFlow(final_after=99)

    settings = Settings(poll_interval_seconds=300, max_polls=4)
    runs = feed_runs(settings, FileFeeds({"vendor-b": VENDOR}, " in the feeds file"), build)
    return build_durable_handler(FakeFlow, 300, 4, runs=runs)


def test_the_event_runs_its_feeds_day_with_the_feeds_settings_plan_and_time_zone() -> None:
    built: list[Settings] = []
    event = {"scheduled_time": "2026-03-01T23:30:00Z", "feed": "vendor-b"}
    result = result_of(run(_handler(built), event))  # type: ignore[arg-type]
    assert (result["date"], result["status"], result["polls"]) == ("2026-03-01", "timeout", 9)
    # Built once per invocation (each resume after a wait is one), always on its own settings.
    assert {(s.feed, s.destination_prefix) for s in built} == {("vendor-b", "vendors/vendor-b")}


def test_an_event_naming_an_unconfigured_feed_fails_at_once_naming_it() -> None:
    built: list[Settings] = []
    event = {"date": "2026-02-28", "feed": "vendor-x"}
    error_type, message = failure_of(run(_handler(built), event))  # type: ignore[arg-type]
    assert error_type == "dlpipe.domain.events.InvalidEventError"
    assert message == "feed 'vendor-x' is not configured in the feeds file"
    assert built == []


def test_a_worker_with_an_invalid_feeds_file_stops_with_one_line(tmp_path: Path) -> None:
    feeds_file = tmp_path / "feeds.toml"
    feeds_file.write_text('[feeds.vendor-b]\nschedule = "nope"\n')
    env = {
        "DLPIPE_FEEDS_FILE": str(feeds_file),
        "DLPIPE_QUEUE_URL": "http://127.0.0.1:9/queue",
        "DLPIPE_DEST_BUCKET": "bucket",
    }
    result = CliRunner().invoke(worker_command, ["--exit-when-idle", "1"], env=env)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {feeds_file}: feeds.vendor-b.schedule: 'nope' is not a cron(6 fields)"
        " or rate(N unit) expression"
    )


def test_a_named_feeds_polling_window_shorter_than_the_recovery_bound_fails_at_once() -> None:
    built: list[Settings] = []
    runs = feed_runs(
        Settings(), FileFeeds({"vendor-b": replace(VENDOR, max_polls=1)}), built.append
    )
    handler = build_durable_handler(FakeFlow, 300, 4, runs=runs)
    error_type, message = failure_of(run(handler, {"date": "2026-02-28", "feed": "vendor-b"}))
    assert error_type == "dlpipe.domain.events.InvalidEventError"
    assert message.startswith("feeds.vendor-b: 1 polls x 600s = 600s is shorter than the recovery")
    assert built == []


@pytest.mark.parametrize(
    ("feed", "payload"),
    [
        ("default", {"date": "2026-02-27", "rerun": True}),
        ("vendor-b", {"date": "2026-02-27", "rerun": True, "feed": "vendor-b"}),
    ],
)
def test_backfill_starts_a_named_feeds_day_naming_the_feed(
    feed: str, payload: dict[str, object]
) -> None:
    client = boto3.client(
        "lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    alias = "arn:aws:lambda:us-east-1:123456789012:function:dlpipe-orchestrator:live"
    with Stubber(client) as stub:
        # The execution's name carries the feed and date: two feeds' days never share one.
        name = f"{feed}-2026-02-27-0badcafe"
        request = {"FunctionName": alias, "InvocationType": "Event", "DurableExecutionName": name}
        stub.add_response(
            "invoke", {"StatusCode": 202}, {**request, "Payload": json.dumps(payload).encode()}
        )
        starter = LambdaStarter(client, alias, new_suffix=lambda: "0badcafe")
        starter.start("2026-02-27", rerun=True, feed=feed)
        stub.assert_no_pending_responses()

"""One list of configured feeds: a feed both the feeds file and an SSM parameter (moto, over
HTTP) define is the file's for every consumer (the feed source, the worker's queues, the
orchestrator's reserved prefixes, the operator commands), as the chain looks feeds up."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from dlpipe.adapters.aws import AwsClients
from dlpipe.bootstrap import orchestrator
from dlpipe.bootstrap.feed_source import configured_feeds, feed_source
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.bootstrap.worker_queues import build_worker_queues
from dlpipe.config import ENV_FEEDS_FILE, Settings
from dlpipe.domain.feeds import DEFAULT_FEED, FeedError

pytestmark = pytest.mark.integration

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:dlpipe/feeds/vendor-x/token-AbCdEf"
QUEUES = "https://sqs.us-east-1.amazonaws.com/123456789012"
MAIN_QUEUE = f"{QUEUES}/dlpipe-downloads"


def _fields(prefix: str) -> dict[str, object]:
    return {
        "provider_base_url": "https://api.vendor-x.example",
        "schedule": "cron(0 7 * * ? *)",
        "time_zone": "UTC",
        "destination_prefix": prefix,
        "token_secret": ARN,
        "private_key_secret": ARN,
        "queue_url": f"{QUEUES}/dlpipe-downloads-feed-{prefix}",
    }


@pytest.fixture
def path(clients: AwsClients) -> Iterator[str]:
    """A parameter path of this test's own; its parameters are deleted afterwards."""
    prefix = f"/t{uuid.uuid4().hex[:10]}-dlpipe/feeds"
    yield prefix
    found = clients.ssm.get_parameters_by_path(Path=prefix, Recursive=True)["Parameters"]
    for parameter in found:
        clients.ssm.delete_parameter(Name=parameter["Name"])


def _feeds_file(tmp_path: Path, tables: dict[str, dict[str, object]]) -> Path:
    lines = []
    for name, fields in tables.items():
        lines.append(f"[feeds.{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    written = tmp_path / "feeds.toml"
    written.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


def test_a_feed_in_the_file_and_in_ssm_is_the_files_for_every_consumer(
    clients: AwsClients, path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = json.dumps({**_fields("ssm-x"), "name": "vendor-x"})
    clients.ssm.put_parameter(Name=f"{path}/vendor-x", Value=value, Type="String")
    feeds_file = _feeds_file(tmp_path, {"vendor-x": _fields("file-x")})
    monkeypatch.setenv(ENV_FEEDS_FILE, str(feeds_file))
    settings = replace(Settings.from_env(), feeds_parameter_path=path, queue_url=MAIN_QUEUE)
    env = {ENV_FEEDS_FILE: str(feeds_file)}
    want = (f"{QUEUES}/dlpipe-downloads-feed-file-x", "file-x")

    looked_up = feed_source(settings, clients, env=env).feed("vendor-x")
    assert (looked_up.queue_url, looked_up.destination_prefix) == want
    listed = build_ops_context(settings, clients).feeds["vendor-x"]
    assert (listed.queue_url, listed.destination_prefix) == want
    lanes = {
        lane.name: lane.queue.queue_url for lane in build_worker_queues(settings, clients).feeds
    }
    assert lanes == {"default": MAIN_QUEUE, "vendor-x": want[0]}
    assert orchestrator.named_prefixes(settings, lambda: clients) == ["file-x"]


def _put(clients: AwsClients, path: str, name: str, prefix: str) -> None:
    value = json.dumps({**_fields(prefix), "name": name})
    clients.ssm.put_parameter(Name=f"{path}/{name}", Value=value, Type="String")


def test_two_ssm_feeds_whose_prefixes_overlap_are_refused_by_every_consumer(
    clients: AwsClients, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`shared` and `shared/ssmb`: the listing is one line naming both; the orchestrator runs
    neither's day, the worker drains neither's queue (logged) and reserves nothing of theirs."""
    _put(clients, path, "ssma", "shared")
    _put(clients, path, "ssmb", "shared/ssmb")
    monkeypatch.delenv(ENV_FEEDS_FILE, raising=False)
    settings = replace(Settings.from_env(), feeds_parameter_path=path, queue_url=MAIN_QUEUE)
    line = (
        "feeds.ssmb.destination_prefix: 'shared/ssmb' overlaps feed ssma's 'shared' (no prefix"
        " may equal, contain or lie inside another, in any letter case)"
    )
    with pytest.raises(FeedError) as refused:
        configured_feeds(settings, clients, env={})
    assert str(refused.value) == line
    with pytest.raises(FeedError, match=re.escape(line)):
        feed_source(settings, clients, env={}, checked=True).feed("ssmb")
    assert feed_source(settings, clients, env={}, checked=True).feed("default") is DEFAULT_FEED
    with capture_logs() as logs:
        lanes = [lane.name for lane in build_worker_queues(settings, clients).feeds]
        reserved = orchestrator.named_prefixes(settings, lambda: clients)
    assert (lanes, reserved) == (["default"], [])
    assert [entry["error"] for entry in logs] == [line, line]


def test_a_case_variant_of_a_file_feed_s_prefix_in_ssm_overlaps_it(
    clients: AwsClients, path: str, tmp_path: Path
) -> None:
    """`Vendor-B/` in a parameter and `vendor-b` in the feeds file are one folder to a
    consumer on a case-insensitive disk."""
    _put(clients, path, "vendor-c", "Vendor-B/")
    feeds_file = _feeds_file(tmp_path, {"vendor-b": _fields("vendor-b")})
    settings = replace(Settings.from_env(), feeds_parameter_path=path)
    with pytest.raises(FeedError, match=r"^feeds.vendor-c.destination_prefix: 'Vendor-B' overlaps"):
        configured_feeds(settings, clients, env={ENV_FEEDS_FILE: str(feeds_file)})

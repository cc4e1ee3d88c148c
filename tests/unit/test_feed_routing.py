"""A delayed copy of a message is routed as the orchestrator routed its file: by the size
threshold of the feed its FileID names (a feed's `large_file_threshold_bytes`)."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from dlpipe.adapters.download_queue import Received
from dlpipe.bootstrap.worker_queues import build_worker_queues
from dlpipe.config import ENV_FEEDS_FILE, Settings
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import make_batch_id, make_file_id
from dlpipe.domain.routing import MIB
from tests.unit.test_routing import LARGE, MAIN, FakeSqs

DAY = "2026-02-28"
VENDOR_B = """
[feeds.vendor-b]
provider_base_url = "https://b.example.com"
token_secret = "b-token"
private_key_secret = "b-key"
schedule = "rate(1 day)"
time_zone = "UTC"
destination_prefix = "vendor-b"
large_file_threshold_bytes = 1048576
"""


def _body(feed: str) -> str:
    file_id = make_file_id("accounts", DAY, feed)
    return encode_message(JobMessage(file_id, make_batch_id(DAY, str(uuid.uuid4()), feed)))


def test_a_delayed_copy_goes_where_its_feeds_threshold_routes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2 MiB file of vendor-b (its threshold 1 MiB) is copied to the large queue; the default
    feed's 2 MiB file (the process's 100 MiB threshold) to the main queue; a feed configured
    nowhere falls back to the process's threshold."""
    feeds = tmp_path / "feeds.toml"
    feeds.write_text(VENDOR_B)
    monkeypatch.setenv(ENV_FEEDS_FILE, str(feeds))
    settings = Settings(queue_url=MAIN, large_queue_url=LARGE, large_file_threshold_bytes=100 * MIB)
    sqs = FakeSqs()
    main = build_worker_queues(settings, SimpleNamespace(sqs=sqs)).feeds[0].queue  # type: ignore[arg-type]
    for feed in ("vendor-b", "default", "vendor-x"):
        body = _body(feed)
        copied = main.visibility(Received("m", "rh", body)).send_copy_later(body, 5, 2 * MIB)
        assert copied, feed
    assert sqs.single == [LARGE, MAIN, MAIN]

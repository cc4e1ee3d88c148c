"""A named feed's day end to end, beside the default feed's day of the same date and entity:
the orchestrator (the wiring's feed_runs, served_request, run_batch) against two stub
providers, the downloader (one DownloadService for both feeds) between the polls."""

from __future__ import annotations

import queue
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters import keys
from dlpipe.adapters.aws import AwsClients
from dlpipe.bootstrap.download import build_service
from dlpipe.bootstrap.orchestrator import build_flow, feed_runs
from dlpipe.config import Settings
from dlpipe.domain.feeds import Feed
from dlpipe.domain.messages import decode_message
from dlpipe.domain.model import JobStatus
from dlpipe.feed_settings import FileFeeds
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.download.service import DownloadService
from dlpipe.services.orchestrator.feed_runs import served_request
from dlpipe.services.orchestrator.sequence import InlineSteps, run_batch
from tests.integration.test_downloader_kit import FAST, object_exists
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.integration


@pytest.fixture
def queue_url(clients: AwsClients) -> Iterator[str]:
    """A download queue of this test's own, deleted afterwards."""
    url = clients.sqs.create_queue(QueueName=f"feedday-{uuid.uuid4().hex[:16]}")["QueueUrl"]
    yield url
    clients.sqs.delete_queue(QueueUrl=url)


def _download_queued(clients: AwsClients, queue_url: str, service: DownloadService) -> None:
    """What the downloaders do between two polls: every queued file, processed."""
    while True:
        got = clients.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
        if not got.get("Messages"):
            return
        for message in got["Messages"]:
            service.process(decode_message(message["Body"]).file_id)
            clients.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def test_a_named_feeds_day_runs_in_its_own_keys_items_and_prefix(
    clients: AwsClients,
    provisioned: Provisioned,
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
    queue_url: str,
    entity: str,
    tmp_path: Path,
) -> None:
    day = unique_day()
    specs = [StubFileSpec(entity, 2048, "AES-256-GCM")]  # the same entity in both feeds
    default_stub, vendor_stub = stub_factory(specs), stub_factory(specs)
    key_file, token_file = tmp_path / "key.pem", tmp_path / "token"
    key_file.write_bytes(rsa_keypair[0])
    token_file.write_text(TEST_PROVIDER_TOKEN)
    vendor = Feed(
        name="vendor-b",
        schedule="cron(0 7 * * ? *)",
        time_zone="Europe/Berlin",
        provider_base_url=vendor_stub.base_url,
        token_secret=f"file:{token_file}",
        private_key_secret=f"file:{key_file}",
        destination_prefix="in/vendor-b",
        url_allowed_hosts=("127.0.0.1:*",),
        max_polls=3,
    )
    settings = replace(
        Settings.from_env(),
        jobs_table=provisioned.jobs_table,
        batches_table=provisioned.batches_table,
        queue_url=queue_url,
        destination_bucket=provisioned.destination_bucket,
        provider_base_url=default_stub.base_url,
        provider_token=TEST_PROVIDER_TOKEN,
        private_key_file=str(key_file),
        allow_http_urls=True,
        allow_private_url_hosts=True,
        poll_interval_seconds=3600,
        max_polls=2,
    )
    feeds = FileFeeds({"vendor-b": vendor})
    keys.clear_cache()
    service = build_service(settings, clients, tuning=FAST, feeds=feeds)
    runs = feed_runs(settings, feeds, lambda own: build_flow(own, clients))
    # The poller runs on a thread of its own and hands each wait to this thread, which
    # downloads what is queued: each side's AWS calls are made as its own component.
    turns: queue.Queue[str | None] = queue.Queue()
    done: queue.Queue[bool] = queue.Queue()
    results: dict[str, Any] = {}

    def wait_for_downloads(_seconds: float) -> None:
        turns.put("poll")
        done.get(timeout=60)

    def poller() -> None:
        try:
            steps = InlineSteps(sleep=wait_for_downloads)
            for event in ({"date": day}, {"date": day, "feed": "vendor-b"}):
                request, run = served_request(steps, event, 1, runs)
                results[request.feed] = run_batch(steps, run.flow, request, run.plan).to_dict()
        finally:
            turns.put(None)

    thread = threading.Thread(target=poller, daemon=True)
    thread.start()
    while turns.get(timeout=120) is not None:
        _download_queued(clients, queue_url, service)
        done.put(True)
    thread.join(timeout=10)
    keys.clear_cache()

    assert results["vendor-b"]["batch_id"].startswith(f"vendor-b.batch-{day}-")
    assert results["default"]["batch_id"].startswith(f"batch-{day}-")
    assert {r["status"] for r in results.values()} == {"completed"}
    bucket = str(provisioned.destination_bucket)
    for file_id, feed, key in (
        (f"{entity}-{day}", None, f"{entity}/{day}/{entity}-{day}"),
        (
            f"vendor-b.{entity}-{day}",
            "vendor-b",
            f"in/vendor-b/{entity}/{day}/vendor-b.{entity}-{day}",
        ),
    ):
        item = clients.dynamodb.get_item(
            TableName=provisioned.jobs_table, Key={"FileID": {"S": file_id}}
        )["Item"]
        assert item["Status"] == {"S": str(JobStatus.COMPLETED)}
        assert item.get("Feed") == ({"S": feed} if feed else None)
        assert item["DestinationKey"] == {"S": key}
        assert object_exists(clients, bucket, key)
    batch = clients.dynamodb.get_item(
        TableName=provisioned.batches_table, Key={"BatchID": {"S": results["vendor-b"]["batch_id"]}}
    )["Item"]
    assert batch["Feed"] == {"S": "vendor-b"}
    assert results["vendor-b"]["polls"] <= 3

"""A job of a feed its downloader does not know: left unclaimed and its message hidden longer
each delivery, run with the feed's own parts once its configuration names it, ended
`unknown_feed` on the last delivery the bound allows (service, Lambda and worker on fakes)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from structlog.testing import capture_logs

from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.adapters.download_queue import DownloadQueue, EventQueues
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import JobStatus
from dlpipe.entrypoints.lambda_batch import Runtime, handle_event
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.feed_settings import FileFeeds, UnknownFeedError
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.service import DownloadService, Outcome
from tests.fakes.download import FakeDestination, FakeSource
from tests.fakes.stores import FakeJobsTable
from tests.support import ManualClock
from tests.unit.services.test_download_service import POLICY, TUNING
from tests.unit.test_downloader_dispatch import QUEUE_URL, FakeSqs
from tests.unit.test_feed_reread import (
    BATCH_ID,
    DAY,
    FILE_ID,
    Clock,
    built,
    feed_job,
    feed_key,
    write_feeds_file,
)

BODY = encode_message(JobMessage(FILE_ID, BATCH_ID))


def _unknown(name: str) -> DownloadService:
    raise UnknownFeedError(name, " in the feeds file")


def _service(jobs: FakeJobsTable) -> DownloadService:
    """The default feed's service, knowing no other feed."""
    key = load_pem_private_key(generate_rsa_keypair()[0], password=None)
    assert isinstance(key, RSAPrivateKey)
    deps = ServiceDeps(
        jobs=jobs,
        destination=FakeDestination(),
        source=FakeSource(),
        decryption=KeyDecryption(key),
        provider=None,
        lease_seconds=30,
        url_policy=POLICY,
        tuning=TUNING,
        stop=threading.Event(),
        owner_prefix="test:1",
        clock=jobs.clock,
    )
    return DownloadService(deps, _unknown)


def _jobs() -> FakeJobsTable:
    jobs = FakeJobsTable(ManualClock())
    jobs.create(feed_job())
    return jobs


def test_an_unknown_feeds_job_is_left_unclaimed_its_message_hidden_longer_each_time() -> None:
    jobs = _jobs()
    service = _service(jobs)
    delays = []
    with capture_logs() as logs:
        for receive_count in range(1, 5):
            result = service.process(FILE_ID, receive_count=receive_count)
            assert (result.outcome, result.acknowledge) == (Outcome.FEED_UNKNOWN, False)
            delays.append(result.retry_after_s)
    assert delays == [30, 60, 120, 240]
    assert jobs.require(FILE_ID) == feed_job()  # never claimed, never ended
    assert [e["event"] for e in logs] == ["job.feed_unknown"] * 4  # one line a delivery
    assert logs[0]["error"] == "feed 'vendor-x' is not configured in the feeds file"


def test_on_the_last_delivery_the_job_ends_unknown_feed_before_it_could_dead_letter() -> None:
    jobs = _jobs()
    result = _service(jobs).process(FILE_ID, receive_count=5)
    assert (result.outcome, result.acknowledge) == (Outcome.ERROR, True)
    stored = jobs.require(FILE_ID)
    assert (stored.status, stored.attempts) == (JobStatus.ERROR, 1)  # claimed once, no fetch
    assert stored.error_message == (
        "unknown_feed: feed 'vendor-x' is not configured in the feeds file (delivery 5, the last)"
    )


def test_a_finished_or_missing_job_of_an_unknown_feed_is_acknowledged_at_once() -> None:
    jobs = FakeJobsTable(ManualClock())
    service = _service(jobs)
    assert service.process(FILE_ID, receive_count=1).outcome is Outcome.NOT_FOUND
    jobs.create(replace(feed_job(), status=JobStatus.COMPLETED))
    assert service.process(FILE_ID, receive_count=1).outcome is Outcome.ALREADY_DONE


def test_a_feed_added_after_a_delivery_found_it_unknown_runs_on_a_later_one(
    tmp_path: Path,
) -> None:
    """Delivery 1 re-reads the file before the feed is in it; delivery 2, past the re-read
    interval, finds it and runs the job with the feed's own key and prefix."""
    feeds_file = tmp_path / "feeds.toml"
    key_file, public_pem = feed_key(tmp_path)
    write_feeds_file(feeds_file, key_file)
    clock = Clock()
    feeds = FileFeeds({}, " in the feeds file", path=str(feeds_file), clock=clock)
    jobs, source = FakeJobsTable(ManualClock()), FakeSource()
    service, destination = built(feeds, jobs, source)
    jobs.create(feed_job(public_pem, source))
    first = service.process(FILE_ID, receive_count=1)
    assert (first.outcome, first.retry_after_s) == (Outcome.FEED_UNKNOWN, 30)
    write_feeds_file(feeds_file, key_file, with_feed=True)
    clock.now += first.retry_after_s
    assert service.process(FILE_ID, receive_count=2).outcome is Outcome.COMPLETED
    assert destination.objects[f"pub-x/accounts/{DAY}/{FILE_ID}"]


def _record(receive_count: str) -> dict[str, Any]:
    return {
        "messageId": "m1",
        "receiptHandle": "rh-m1",
        "body": BODY,
        "attributes": {"ApproximateReceiveCount": receive_count},
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q",
    }


def test_the_lambda_leaves_the_record_hidden_for_the_backoff_then_ends_the_job() -> None:
    jobs = _jobs()
    sqs = FakeSqs()
    runtime = Runtime(_service(jobs), EventQueues(sqs, QUEUE_URL))  # type: ignore[arg-type]
    second = handle_event({"Records": [_record("2")]}, runtime)
    assert second == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert sqs.visibility == [("rh-m1", 60)]
    assert jobs.require(FILE_ID).status is JobStatus.AVAILABLE
    assert handle_event({"Records": [_record("5")]}, runtime) == {"batchItemFailures": []}
    assert jobs.require(FILE_ID).status is JobStatus.ERROR


class OneMessageSqs(FakeSqs):
    """Delivers one message once, with its ApproximateReceiveCount, then nothing."""

    def __init__(self, receive_count: int) -> None:
        super().__init__()
        self.pending = [receive_count]
        self.requests: list[dict[str, Any]] = []
        self.deleted: list[str] = []

    def receive_message(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        if not self.pending:
            return {"Messages": []}
        count = self.pending.pop()
        message = {"MessageId": "m1", "ReceiptHandle": "rh", "Body": BODY}
        return {"Messages": [{**message, "Attributes": {"ApproximateReceiveCount": str(count)}}]}

    def delete_message(self, QueueUrl: str, ReceiptHandle: str) -> None:
        self.deleted.append(ReceiptHandle)


def test_the_worker_asks_for_the_receive_count_and_hides_the_message_for_the_backoff() -> None:
    jobs = _jobs()
    sqs = OneMessageSqs(3)
    options = WorkerOptions(wait_seconds=0, exit_when_idle_s=0.3)
    worker = Worker(_service(jobs), DownloadQueue(sqs, QUEUE_URL), options)  # type: ignore[arg-type]
    assert worker.run() == 0
    assert sqs.requests[0]["MessageSystemAttributeNames"] == ["ApproximateReceiveCount"]
    assert (sqs.visibility, sqs.deleted) == ([("rh", 120)], [])
    assert jobs.require(FILE_ID).status is JobStatus.AVAILABLE

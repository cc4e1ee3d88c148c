"""Downloads of two feeds in one process: each job decrypted with its own feed's key, published
under its own feed's prefix; another feed's key ends the job `wrong_key`; a feed configured
nowhere leaves the job untouched until its message's last delivery, which ends it
`unknown_feed` (real encryption, the emulator's S3 and DynamoDB, one DownloadService)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from dlpipe.adapters import keys
from dlpipe.adapters.aws import AwsClients
from dlpipe.bootstrap.download import build_service
from dlpipe.config import Settings
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.feeds import Feed
from dlpipe.domain.model import FileJob, JobStatus, make_batch_id
from dlpipe.feed_settings import FileFeeds
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.download.service import DownloadService, Outcome
from dlpipe.services.orchestrator.jobs_from_listing import job_from_descriptor
from tests.integration.test_downloader_kit import DAY, FAST, wall_clock_jobs
from tests.provider_support import TEST_PROVIDER_TOKEN, fast_client

pytestmark = pytest.mark.integration

FILES_PER_FEED = 3


def _feed(name: str, stub: StubProvider, key_pem: bytes, tmp_path: Path) -> Feed:
    """A named feed on `stub`, its key and token in files, publishing under `pub-{name}`."""
    key_file = tmp_path / f"{name}.pem"
    key_file.write_bytes(key_pem)
    token_file = tmp_path / f"{name}.token"
    token_file.write_text(TEST_PROVIDER_TOKEN)
    return Feed(
        name=name,
        schedule="cron(0 7 * * ? *)",
        time_zone="UTC",
        provider_base_url=stub.base_url,
        token_secret=f"file:{token_file}",
        private_key_secret=f"file:{key_file}",
        destination_prefix=f"pub-{name}",
        url_allowed_hosts=("127.0.0.1:*",),
    )


def _jobs_of(stub: StubProvider, feed: str) -> list[FileJob]:
    """The day's jobs of `stub`'s listing, recorded as jobs of `feed` (as its orchestrator
    would write them)."""
    batch_id = make_batch_id(DAY, str(uuid.uuid4()), feed)
    now_ms = SystemClock().now_ms()
    listing = fast_client(stub).list_files(DAY)
    return [job_from_descriptor(d, batch_id, now_ms, feed=feed) for d in listing.files]


@pytest.fixture
def two_feeds(
    clients: AwsClients, provisioned: Provisioned, tmp_path: Path
) -> tuple[DownloadService, dict[str, StubProvider]]:
    """One DownloadService (the default feed's) that knows feeds `feed-a` and `feed-b`, each
    served by a stub encrypting with its own key pair."""
    stubs: dict[str, StubProvider] = {}
    feeds: dict[str, Feed] = {}
    for name in ("feed-a", "feed-b"):
        private_pem, public_pem = generate_rsa_keypair()
        specs = [
            StubFileSpec(f"e{uuid.uuid4().hex[:10]}", 4096 + i, "AES-256-GCM")
            for i in range(FILES_PER_FEED)
        ]
        stub = StubProvider(
            clients, public_pem, TEST_PROVIDER_TOKEN, specs, key_prefix=f"{uuid.uuid4().hex[:12]}/"
        )
        stub.start()
        stubs[name] = stub
        feeds[name] = _feed(name, stub, private_pem, tmp_path)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key at all")
    feeds["feed-c"] = replace(
        feeds["feed-a"],
        name="feed-c",
        private_key_secret=f"file:{garbage}",
        destination_prefix="pub-feed-c",
    )
    default_key = tmp_path / "default.pem"
    default_key.write_bytes(generate_rsa_keypair()[0])
    settings = replace(
        Settings.from_env(),
        jobs_table=provisioned.jobs_table,
        destination_bucket=provisioned.destination_bucket,
        private_key_file=str(default_key),
        allow_http_urls=True,
        allow_private_url_hosts=True,
    )
    keys.clear_cache()
    service = build_service(
        settings,
        clients,
        tuning=FAST,
        jobs=wall_clock_jobs(clients, provisioned),
        feeds=FileFeeds(feeds),
    )
    yield service, stubs
    for stub in stubs.values():
        stub.stop()
        stub.purge()
    keys.clear_cache()


def _published_sha256(clients: AwsClients, bucket: str, key: str) -> str:
    body = clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return hashlib.sha256(body).hexdigest()


def test_each_feeds_job_is_decrypted_with_its_own_key_and_published_under_its_prefix(
    clients: AwsClients,
    provisioned: Provisioned,
    two_feeds: tuple[DownloadService, dict[str, StubProvider]],
) -> None:
    service, stubs = two_feeds
    table = wall_clock_jobs(clients, provisioned)
    by_feed = {name: _jobs_of(stub, name) for name, stub in stubs.items()}
    # Interleaved: a, b, a, b, ... through the one service, as one worker's queue would be.
    interleaved = [job for pair in zip(*by_feed.values(), strict=True) for job in pair]
    for job in interleaved:
        table.create(job)
    for job in interleaved:
        assert service.process(job.file_id).outcome is Outcome.COMPLETED, job.file_id
    for name, jobs in by_feed.items():
        expected = stubs[name].expected(DAY)
        for job in jobs:
            stored = table.get(job.file_id)
            assert stored is not None
            assert stored.status is JobStatus.COMPLETED
            key = f"pub-{name}/{job.entity}/{DAY}/{name}.{job.entity}-{DAY}"
            assert stored.destination_key == key
            want = expected[f"{job.entity}-{DAY}"].sha256
            assert _published_sha256(clients, str(provisioned.destination_bucket), key) == want


def test_a_file_under_another_feeds_key_ends_wrong_key(
    clients: AwsClients,
    provisioned: Provisioned,
    two_feeds: tuple[DownloadService, dict[str, StubProvider]],
) -> None:
    """feed-b's file recorded as a job of feed-a: feed-a's key cannot unwrap it."""
    service, stubs = two_feeds
    table = wall_clock_jobs(clients, provisioned)
    job = _jobs_of(stubs["feed-b"], "feed-a")[0]
    table.create(job)
    assert service.process(job.file_id).outcome is Outcome.ERROR
    stored = table.get(job.file_id)
    assert stored is not None
    assert stored.status is JobStatus.ERROR
    assert (stored.error_message or "").startswith("wrong_key:")


def test_a_job_of_a_feed_configured_nowhere_waits_then_ends_error_unknown_feed(
    clients: AwsClients,
    provisioned: Provisioned,
    two_feeds: tuple[DownloadService, dict[str, StubProvider]],
) -> None:
    service, stubs = two_feeds
    table = wall_clock_jobs(clients, provisioned)
    job = _jobs_of(stubs["feed-a"], "feed-z")[0]
    table.create(job)
    waiting = service.process(job.file_id, receive_count=4)
    assert (waiting.outcome, waiting.retry_after_s) == (Outcome.FEED_UNKNOWN, 240)
    untouched = table.get(job.file_id)
    assert untouched is not None
    assert (untouched.status, untouched.attempts) == (JobStatus.AVAILABLE, 0)
    assert service.process(job.file_id, receive_count=5).outcome is Outcome.ERROR
    stored = table.get(job.file_id)
    assert stored is not None
    assert stored.status is JobStatus.ERROR
    assert stored.error_message == (
        "unknown_feed: feed 'feed-z' is not configured (delivery 5, the last)"
    )
    assert stored.attempts == 1  # claimed once, never fetched


def test_a_job_of_a_feed_whose_key_is_unusable_ends_error_not_redelivered(
    clients: AwsClients,
    provisioned: Provisioned,
    two_feeds: tuple[DownloadService, dict[str, StubProvider]],
) -> None:
    """feed-c's key file holds no key: its job ends `error` (invalid_private_key), where an
    exception would return the message until it dead-letters."""
    service, stubs = two_feeds
    table = wall_clock_jobs(clients, provisioned)
    job = _jobs_of(stubs["feed-a"], "feed-c")[0]
    table.create(job)
    assert service.process(job.file_id).outcome is Outcome.ERROR
    stored = table.get(job.file_id)
    assert stored is not None
    assert (stored.status, (stored.error_message or "").split(":")[0]) == (
        JobStatus.ERROR,
        "invalid_private_key",
    )

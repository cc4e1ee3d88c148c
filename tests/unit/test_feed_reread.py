"""Feed sources read their configuration again when asked for a feed they do not know, at
most once per interval: the feeds file (FileFeeds) and the SSM parameters (ParameterFeeds);
a feed found so runs its jobs with its own parts, as the wiring builds them (no AWS)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from structlog.testing import capture_logs

from dlpipe.adapters.feed_parameters import ParameterFeeds
from dlpipe.bootstrap.download import build_service
from dlpipe.config import ENV_FEEDS_FILE, Settings
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.feeds import FeedError
from dlpipe.domain.model import FileJob, JobStatus, make_batch_id, make_file_id
from dlpipe.feed_settings import FileFeeds, UnknownFeedError
from dlpipe.local.stub.crypto import (
    encrypt_bytes,
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    new_iv,
    wrap_aes_key,
)
from dlpipe.services.download.service import DownloadService, Outcome
from dlpipe.services.download.transfer import TransferTuning
from tests.fakes.download import FakeDestination, FakeSource
from tests.fakes.stores import FakeJobsTable
from tests.support import ManualClock, make_job

DAY = "2026-02-28"
FEED = "vendor-x"
URL = "http://127.0.0.1:9/files/accounts?X-Amz-Signature=abc"
PLAINTEXT = b"id,name\n1,ada\n" * 50
FILE_ID = make_file_id("accounts", DAY, FEED)
BATCH_ID = make_batch_id(DAY, "0b5e0b5e-0b5e-4b5e-8b5e-0b5e0b5e0b5e", FEED)
TUNING = TransferTuning(attempts=2, retry_wait_s=0.0, retry_wait_max_s=0.0)


class Clock:
    """A monotonic clock that moves when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def feed_job(public_pem: bytes | None = None, source: FakeSource | None = None) -> FileJob:
    """An available job of FEED; with a key, its file encrypted for it and put in `source`."""
    job = make_job("accounts", file_id=FILE_ID, batch_id=BATCH_ID, feed=FEED, presigned_url=URL)
    if public_pem is None or source is None:
        return job
    aes_key, iv = new_aes_key(), new_iv(CIPHER_GCM)
    source.bodies[URL] = encrypt_bytes(PLAINTEXT, CIPHER_GCM, aes_key, iv)
    return replace(
        job,
        cipher=CIPHER_GCM,
        encrypted_aes_key=wrap_aes_key(load_public_key(public_pem), aes_key),
        encoded_aes_iv=base64.b64encode(iv).decode(),
        expected_size=len(PLAINTEXT),
        expected_sha256=hashlib.sha256(PLAINTEXT).hexdigest(),
    )


def _block(name: str, prefix: str, key_file: Path) -> str:
    return (
        f'[feeds.{name}]\nschedule = "rate(1 day)"\ntime_zone = "UTC"\n'
        f'destination_prefix = "{prefix}"\nprovider_base_url = "http://127.0.0.1:9"\n'
        f'token_secret = "file:{key_file}.token"\nprivate_key_secret = "file:{key_file}"\n'
        'url_allowed_hosts = ["127.0.0.1:*"]\n'
    )


def write_feeds_file(path: Path, key_file: Path, *, with_feed: bool = False) -> None:
    """A feeds file with vendor-b; `with_feed`: FEED too (key `key_file`, prefix pub-x).
    vendor-b's secret files are written too: a feeds file's `file:` secrets must exist."""
    vendor_b = path.parent / "vendor-b.pem"
    if not vendor_b.exists():
        vendor_b.write_bytes(generate_rsa_keypair()[0])
        Path(f"{vendor_b}.token").write_text("token-b")
    text = _block("vendor-b", "pub-b", vendor_b)
    path.write_text(text + ("\n" + _block(FEED, "pub-x", key_file) if with_feed else ""))


def feed_key(tmp_path: Path) -> tuple[Path, bytes]:
    """FEED's private key (and token) as files; returns the key's path and public PEM."""
    private_pem, public_pem = generate_rsa_keypair()
    key_file = tmp_path / "vendor-x.pem"
    key_file.write_bytes(private_pem)
    Path(f"{key_file}.token").write_text("token")
    return key_file, public_pem


def built(
    feeds: FileFeeds, jobs: FakeJobsTable, source: FakeSource
) -> tuple[DownloadService, FakeDestination]:
    """The default feed's service as the wiring builds it (its own key), on fakes and `feeds`."""
    default_key = load_pem_private_key(generate_rsa_keypair()[0], password=None)
    assert isinstance(default_key, RSAPrivateKey)
    settings = Settings(
        destination_bucket="bucket", allow_http_urls=True, allow_private_url_hosts=True
    )
    destination = FakeDestination()
    service = build_service(
        settings,
        tuning=TUNING,
        jobs=jobs,
        destination=destination,
        source=source,
        private_key=default_key,
        clock=jobs.clock,
        feeds=feeds,
    )
    return service, destination


def test_a_feed_added_to_the_file_after_the_start_runs_its_first_job_with_its_own_parts(
    tmp_path: Path,
) -> None:
    """The downloader read the file before the feed was in it: its first job re-reads the file
    and runs with the feed's own key (not the default's) and destination prefix."""
    feeds_file = tmp_path / "feeds.toml"
    key_file, public_pem = feed_key(tmp_path)
    write_feeds_file(feeds_file, key_file)
    jobs, source = FakeJobsTable(ManualClock()), FakeSource()
    service, destination = built(
        FileFeeds.from_env({ENV_FEEDS_FILE: str(feeds_file)}), jobs, source
    )
    write_feeds_file(feeds_file, key_file, with_feed=True)  # the operator adds the feed
    jobs.create(feed_job(public_pem, source))  # then its day is queued
    assert service.process(FILE_ID).outcome is Outcome.COMPLETED
    stored = jobs.require(FILE_ID)
    key = f"pub-x/accounts/{DAY}/{FILE_ID}"
    assert (stored.status, stored.destination_key) == (JobStatus.COMPLETED, key)
    assert destination.objects[key] == PLAINTEXT


def test_the_feeds_file_is_read_again_at_most_once_per_interval(tmp_path: Path) -> None:
    feeds_file = tmp_path / "feeds.toml"
    key_file, _ = feed_key(tmp_path)
    write_feeds_file(feeds_file, key_file)
    clock = Clock()
    feeds = FileFeeds({}, " in the feeds file", path=str(feeds_file), clock=clock)
    with pytest.raises(UnknownFeedError, match=r"^feed 'vendor-x' is not configured in the"):
        feeds.feed(FEED)  # read again: still not there
    assert feeds.feed("vendor-b").destination_prefix == "pub-b"  # what that read found
    write_feeds_file(feeds_file, key_file, with_feed=True)
    clock.now += 4.9
    with pytest.raises(UnknownFeedError):
        feeds.feed(FEED)  # within the interval: not read again
    clock.now += 0.1
    assert feeds.feed(FEED).destination_prefix == "pub-x"


def test_a_feeds_file_that_no_longer_reads_keeps_the_feeds_it_had(tmp_path: Path) -> None:
    feeds_file = tmp_path / "feeds.toml"
    write_feeds_file(feeds_file, tmp_path / "vendor-x.pem")
    feeds = FileFeeds.from_env({ENV_FEEDS_FILE: str(feeds_file)})
    feeds_file.write_text("[feeds.vendor-b\n")  # half written
    with capture_logs() as logs, pytest.raises(UnknownFeedError):
        feeds.feed(FEED)
    assert feeds.feed("vendor-b").destination_prefix == "pub-b"
    assert [e["event"] for e in logs] == ["feeds.reread_failed"]


PATH = "/dlpipe/feeds"
VENDOR = {
    "provider_base_url": "https://api.vendor-b.example",
    "schedule": "cron(30 1 * * ? *)",
    "time_zone": "UTC",
    "destination_prefix": "vendors/vendor-b",
    "token_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:dlpipe/feeds/vendor-b/provider-token-AbCdEf",
    "private_key_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:dlpipe/feeds/vendor-b/rsa-private-key-AbCdEf",
}
NOT_FOUND = ClientError({"Error": {"Code": "ParameterNotFound", "Message": "-"}}, "GetParameter")


class FakeSsm:
    """Parameters by name; counts the GetParameter calls."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.calls = 0

    def get_parameter(self, **request: Any) -> Mapping[str, Any]:
        self.calls += 1
        if request["Name"] not in self.values:
            raise NOT_FOUND
        return {"Parameter": {"Value": self.values[request["Name"]]}}


def test_a_missing_parameter_is_asked_for_again_only_after_the_interval() -> None:
    ssm, clock = FakeSsm(), Clock()
    feeds = ParameterFeeds(ssm, PATH, clock=clock)
    for _ in range(50):  # a flood of the feed's jobs
        with pytest.raises(UnknownFeedError) as unknown:
            feeds.feed("vendor-b")
    assert str(unknown.value) == (
        f"feed 'vendor-b' is not configured (no SSM parameter {PATH}/vendor-b)"
    )
    assert ssm.calls == 1
    ssm.values[f"{PATH}/vendor-b"] = json.dumps(VENDOR)  # terraform apply adds the feed
    clock.now += 4.9
    with pytest.raises(UnknownFeedError):
        feeds.feed("vendor-b")
    clock.now += 0.1
    assert feeds.feed("vendor-b").destination_prefix == "vendors/vendor-b"
    assert feeds.feed("vendor-b") is feeds.feed("vendor-b")  # cached from now on
    assert ssm.calls == 2


def test_an_invalid_parameter_is_remembered_for_the_interval_too() -> None:
    ssm, clock = FakeSsm(), Clock()
    ssm.values[f"{PATH}/vendor-b"] = "not json"
    feeds = ParameterFeeds(ssm, PATH, clock=clock)
    for _ in range(3):
        with pytest.raises(FeedError, match=r"is not a JSON object$") as refused:
            feeds.feed("vendor-b")
        assert not isinstance(refused.value, UnknownFeedError)
    assert ssm.calls == 1
    ssm.values[f"{PATH}/vendor-b"] = json.dumps(VENDOR)  # fixed
    clock.now += 5
    assert feeds.feed("vendor-b").time_zone == "UTC"

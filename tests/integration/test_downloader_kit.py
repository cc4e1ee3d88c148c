"""Helpers shared by the downloader's integration and e2e tests (this module holds no tests)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.adapters.destination import S3Destination
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.sink import MIN_PART_BYTES
from dlpipe.adapters.source import HttpSource
from dlpipe.config import Settings
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.model import FileJob
from dlpipe.domain.url_policy import UrlPolicy
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import ExpectedFile
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.service import DownloadService
from dlpipe.services.download.transfer import TransferTuning
from dlpipe.services.orchestrator.jobs_from_listing import job_from_descriptor
from tests.provider_support import TEST_PROVIDER_TOKEN, fast_client
from tests.support import new_batch_id

StubFactory = Callable[..., StubProvider]  # the stub_factory fixture of tests.provider_fixtures
DAY = "2026-02-28"
MIB = 1024 * 1024
MULTIPART_SIZE = MIN_PART_BYTES + 123_457  # two parts: exercises CreateMultipartUpload..Complete
# Milliseconds of backoff, the S3 minimum part, short margins: fast tests, same code paths.
FAST = TransferTuning(
    chunk_bytes=256 * 1024,
    part_bytes=MIN_PART_BYTES,
    retry_wait_s=0.01,
    retry_wait_max_s=0.05,
    retry_after_max_s=0.2,
    visibility_margin_s=1,
)

# The local stack's exemption, explicit: plain http to loopback, any port (the emulator and
# the fault relays that stand in front of it).
LOOPBACK_URLS = UrlPolicy.from_patterns(["127.0.0.1:*"], allow_http=True, allow_private=True)


def wall_clock_jobs(clients: AwsClients, provisioned: Provisioned) -> JobsTable:
    """The jobs table on the wall clock: leases must agree with real presigned-URL time."""
    return JobsTable(clients.dynamodb, provisioned.jobs_table, SystemClock())


def make_service(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    *,
    stub: StubProvider | None = None,
    lease_seconds: int = 30,
    tuning: TransferTuning = FAST,
    s3: Any = None,
    jobs: JobsTable | None = None,
    stop: threading.Event | None = None,
    provider_token: str = TEST_PROVIDER_TOKEN,
) -> DownloadService:
    """A DownloadService on the emulator; it refreshes URLs from `stub` when one is given."""
    assert provisioned.destination_bucket
    provider = (lambda: fast_client(stub, provider_token)) if stub is not None else None
    return DownloadService(
        ServiceDeps(
            jobs=jobs or wall_clock_jobs(clients, provisioned),
            destination=S3Destination(s3 or clients.s3, provisioned.destination_bucket),
            source=HttpSource(),
            decryption=KeyDecryption(private_key),
            provider=provider,
            lease_seconds=lease_seconds,
            url_policy=LOOPBACK_URLS,
            tuning=tuning,
            stop=stop or threading.Event(),
        )
    )


def queue_files(
    stub: StubProvider,
    jobs: JobsTable,
    day: str = DAY,
    mutate: Callable[[FileJob], FileJob] | None = None,
) -> dict[str, ExpectedFile]:
    """Write an available job per listed file, as the poller would; the stub's expectations."""
    listing = fast_client(stub).list_files(day)
    batch_id, now_ms = new_batch_id(day), SystemClock().now_ms()
    for descriptor in listing.files:
        job = job_from_descriptor(descriptor, batch_id, now_ms)
        jobs.create(mutate(job) if mutate else job)
    return stub.expected(day)


def destination_key(file_id: str) -> str:
    """Where a FileID of DAY is published."""
    entity = file_id[: -len(DAY) - 1]
    return f"{entity}/{DAY}/{file_id}"


def uploads_in_progress(clients: AwsClients, bucket: str, key: str) -> list[Any]:
    """In-progress multipart uploads of exactly `key`."""
    listing = clients.s3.list_multipart_uploads(Bucket=bucket, Prefix=key)
    return [u for u in listing.get("Uploads", []) if u["Key"] == key]


def object_exists(clients: AwsClients, bucket: str, key: str) -> bool:
    """True when `key` exists in `bucket`."""
    listing = clients.s3.list_objects_v2(Bucket=bucket, Prefix=key)
    return any(o["Key"] == key for o in listing.get("Contents", []))


@dataclass
class PublishCounter:
    """An S3 client of its own that counts the calls that make an object visible."""

    client: Any
    published: list[str] = field(default_factory=list)

    @classmethod
    def create(cls) -> PublishCounter:
        counter = cls(AwsClients(Settings.from_env()).s3)
        for operation in ("CompleteMultipartUpload", "PutObject"):
            counter.client.meta.events.register(f"after-call.s3.{operation}", counter._count)
        return counter

    def _count(self, model: Any, **_: Any) -> None:
        self.published.append(model.name)


class Relay:
    """A local HTTP relay in front of one URL: can fail the first N GETs, or trickle bytes."""

    def __init__(
        self,
        target: str,
        *,
        fail_first: int = 0,
        status: int = 503,
        headers: dict[str, str] | None = None,
        bytes_per_s: int | None = None,
        slow_requests: int | None = None,
    ) -> None:
        self.target, self.fail_first, self.status = target, fail_first, status
        self.headers, self.bytes_per_s = headers or {}, bytes_per_s
        self.slow_requests = slow_requests  # only the first N requests trickle (None: all)
        self.requests = self.bytes_sent = 0
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                relay.requests += 1
                if relay.requests <= relay.fail_first:
                    self.send_response(relay.status)
                    for name, value in {"Content-Length": "0", **relay.headers}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    return
                relay._forward(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The relay's URL, with a fake signature so that log checks have something to find."""
        return f"http://127.0.0.1:{self._server.server_port}/o?X-Amz-Signature=relaysig0123456789"

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        slow = self.bytes_per_s and (
            self.slow_requests is None or self.requests <= self.slow_requests
        )
        with requests.get(self.target, stream=True, timeout=30) as upstream:
            handler.send_response(upstream.status_code)
            handler.send_header("Content-Length", upstream.headers.get("Content-Length", "0"))
            handler.end_headers()
            for chunk in upstream.iter_content(chunk_size=64 * 1024):
                try:
                    handler.wfile.write(chunk)
                except OSError:
                    return  # the client went away (a killed or stopped worker)
                self.bytes_sent += len(chunk)
                if slow:
                    time.sleep(len(chunk) / self.bytes_per_s)

    @contextmanager
    def running(self) -> Iterator[Relay]:
        """Serve while the block runs."""
        self._thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()

"""Provider URLs are checked before any request: every refused URL ends the job `error`
`url_refused: <reason> (host <host>)`, and the server it names is never contacted."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.descriptor import FileDescriptor
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.url_policy import UrlPolicy
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.download.service import DownloadService, Outcome
from tests.integration.test_downloader_kit import (
    DAY,
    StubFactory,
    destination_key,
    make_service,
    object_exists,
    queue_files,
    wall_clock_jobs,
)
from tests.provider_support import fast_client

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory
SECRET_QUERY = "?X-Amz-Signature=deadbeefcafe&X-Amz-Credential=secretcred"
EXPIRED = b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"


@dataclass
class Recorder:
    """A plain-HTTP server on 127.0.0.1 that records every request that reaches it."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"not a ciphertext"
    paths: list[str] = field(default_factory=list)
    port: int = 0

    @property
    def origin(self) -> str:
        """http://127.0.0.1:port."""
        return f"http://127.0.0.1:{self.port}"

    @contextmanager
    def running(self) -> Iterator[Recorder]:
        """Serve on a free port until the block ends."""
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                recorder.paths.append(self.path)
                self.send_response(recorder.status)
                for name, value in {"Content-Length": str(len(recorder.body))}.items():
                    self.send_header(name, value)
                for name, value in recorder.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(recorder.body)

            do_GET = do_HEAD = do_POST = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = server.server_port
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join()


def policy(*hosts: str, http: bool = True, private: bool = True) -> UrlPolicy:
    """An explicit policy for one test."""
    return UrlPolicy.from_patterns(hosts, allow_http=http, allow_private=private)


def run_with_url(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub: StubProvider,
    url: str,
    url_policy: UrlPolicy,
    provider: Callable[[], Any] | None = None,
) -> tuple[FileJob, Outcome]:
    """Queue `stub`'s one file with its job pointing at `url`; process it under `url_policy`."""
    table: JobsTable = wall_clock_jobs(clients, provisioned)
    ((file_id, _),) = queue_files(
        stub, table, mutate=lambda j: replace(j, presigned_url=url)
    ).items()
    base = make_service(clients, provisioned, private_key).deps
    service = DownloadService(replace(base, url_policy=url_policy, provider=provider))
    outcome = service.process(file_id).outcome
    assert not object_exists(clients, str(provisioned.destination_bucket), destination_key(file_id))
    return table.require(file_id), outcome


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """The server that must never be contacted."""
    with Recorder().running() as running:
        yield running


def assert_refused(job: FileJob, outcome: Outcome, message: str, recorder: Recorder) -> None:
    """Job `error` with exactly `message`; nothing reached the recorder; no secret is shown."""
    assert outcome is Outcome.ERROR
    assert (job.status, job.error_message) == (JobStatus.ERROR, message)
    assert recorder.paths == [], f"the refused server was contacted: {recorder.paths}"


Case = tuple[Callable[[Recorder], str], Callable[[Recorder], UrlPolicy], str]
CASES: dict[str, Case] = {
    "plain http not allowed": (
        lambda r: f"{r.origin}/latest/meta-data/iam/security-credentials/x{SECRET_QUERY}",
        lambda _r: policy("127.0.0.1:*", http=False),
        "url_refused: plain http is not allowed (host 127.0.0.1)",
    ),
    "host not in the allowlist": (
        lambda r: f"{r.origin}/bucket/key{SECRET_QUERY}",
        lambda _r: policy("127.0.0.1:1"),
        "url_refused: the host is not in the allowlist (host 127.0.0.1:{port})",
    ),
    "userinfo": (
        lambda r: f"http://user:pw@127.0.0.1:{r.port}/bucket/key{SECRET_QUERY}",
        lambda _r: policy("127.0.0.1:*"),
        "url_refused: credentials (userinfo) in the URL are not allowed (host 127.0.0.1)",
    ),
    "IP literal": (
        lambda r: f"{r.origin}/bucket/key{SECRET_QUERY}",
        lambda _r: policy("127.0.0.1:*", private=False),
        "url_refused: IP literal hosts are not allowed (host 127.0.0.1)",
    ),
    "loopback resolution": (
        lambda r: f"http://localhost:{r.port}/bucket/key{SECRET_QUERY}",
        lambda _r: policy("localhost:*", private=False),
        "url_refused: the host resolves to internal address {address} (host localhost)",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_url_ends_the_job_error_without_contacting_its_server(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    recorder: Recorder,
    name: str,
) -> None:
    """Each refusal names its reason and host, and the server behind the URL sees no request."""
    make_url, make_policy, message = CASES[name]
    job, outcome = run_with_url(
        clients, provisioned, private_key, stub_factory([StubFileSpec(entity, 1000, CIPHER_GCM)]),
        make_url(recorder), make_policy(recorder),
    )  # fmt: skip
    if "{address}" in message:
        # localhost resolves to 127.0.0.1 or ::1 depending on the machine: either is loopback.
        assert (job.error_message or "").endswith("(host localhost)")
        message = message.format(address=(job.error_message or "").split("address ")[1][:-17])
        assert message.split("address ")[1].startswith(("127.", "::1"))
    assert_refused(job, outcome, message.format(port=recorder.port), recorder)
    assert "secretcred" not in (job.error_message or "")


def test_a_redirect_to_a_host_outside_the_allowlist_is_not_followed(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    recorder: Recorder,
) -> None:
    """The allowed server's 302 points elsewhere: refused, the target never contacted."""
    target = f"{recorder.origin}/latest/meta-data/iam/security-credentials/role"
    with Recorder(status=302, headers={"Location": target}).running() as redirector:
        job, outcome = run_with_url(
            clients, provisioned, private_key, stub_factory([StubFileSpec(entity, 1000, CIPHER_GCM)]),
            f"{redirector.origin}/bucket/key{SECRET_QUERY}", policy(f"127.0.0.1:{redirector.port}"),
        )  # fmt: skip
    assert len(redirector.paths) == 1
    message = f"url_refused: the host is not in the allowlist (host 127.0.0.1:{recorder.port})"
    assert_refused(job, outcome, message, recorder)


def test_a_redirect_within_the_allowlist_is_followed(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
) -> None:
    """A 307 from an allowed server to the (allowed) real presigned URL completes the file."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, 1000, CIPHER_GCM)])
    with Recorder(status=307).running() as redirector:
        real: list[str] = []

        def via_redirector(job: FileJob) -> FileJob:
            real.append(job.presigned_url)
            return replace(job, presigned_url=f"{redirector.origin}/hop{SECRET_QUERY}")

        ((file_id, expected),) = queue_files(stub, table, mutate=via_redirector).items()
        redirector.headers["Location"] = real[0]
        url_policy = policy(f"127.0.0.1:{redirector.port}", urlsplit(real[0]).netloc)
        base = make_service(clients, provisioned, private_key).deps
        outcome = DownloadService(replace(base, url_policy=url_policy)).process(file_id).outcome
    assert outcome is Outcome.COMPLETED
    assert redirector.paths == [f"/hop{SECRET_QUERY}"]
    assert table.require(file_id).sha256 == expected.sha256


@dataclass
class Signer:
    """A provider that re-signs with a URL of its choosing."""

    descriptor: FileDescriptor

    def get_file(self, entity: str, date: str) -> FileDescriptor:
        """The fixed descriptor."""
        return self.descriptor


def test_a_refreshed_url_is_checked_before_it_is_stored_or_fetched(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    recorder: Recorder,
) -> None:
    """The listed URL has expired; the provider re-signs to a refused host: error, no request."""
    with Recorder(status=403, body=EXPIRED).running() as expired:
        stub = stub_factory([StubFileSpec(entity, 1000, CIPHER_GCM)])
        fresh = fast_client(stub).get_file(entity, DAY)
        bad = replace(fresh, url=f"{recorder.origin}/refreshed{SECRET_QUERY}")
        job, outcome = run_with_url(
            clients, provisioned, private_key, stub,
            f"{expired.origin}/listed{SECRET_QUERY}", policy(f"127.0.0.1:{expired.port}"),
            provider=lambda: Signer(bad),
        )  # fmt: skip
    assert len(expired.paths) == 1
    message = f"url_refused: the host is not in the allowlist (host 127.0.0.1:{recorder.port})"
    assert_refused(job, outcome, message, recorder)
    assert job.presigned_url == f"{expired.origin}/listed{SECRET_QUERY}"


def test_a_refusal_stores_the_hosts_control_characters_escaped(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    recorder: Recorder,
) -> None:
    """An ESC in the listed host reaches `dlpipe jobs show` as the text `\\x1b`, never raw."""
    job, outcome = run_with_url(
        clients, provisioned, private_key, stub_factory([StubFileSpec(entity, 1000, CIPHER_GCM)]),
        f"http://evil\x1bc.example:{recorder.port}/k{SECRET_QUERY}", policy("127.0.0.1:*"),
    )  # fmt: skip
    message = (
        f"url_refused: the host is not in the allowlist (host evil\\x1bc.example:{recorder.port})"
    )
    assert_refused(job, outcome, message, recorder)

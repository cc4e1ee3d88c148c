"""Reading a presigned URL: HTTP answers and broken connections become typed errors."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from dlpipe.adapters.source import open_source, url_host
from dlpipe.domain.download_errors import (
    DownloadError,
    PermanentError,
    ProviderSlowError,
    SourceNotFoundError,
    SourceRejectedError,
    SourceUnavailableError,
    TransientError,
    UrlExpiredError,
    UrlNotAllowedError,
    UrlRefusedError,
)
from dlpipe.domain.url_policy import UrlPolicy

SIGNED_QUERY = "?X-Amz-Signature=deadbeefcafe&X-Amz-Credential=secretcred"
EXPIRED_BODY = b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
BODY = bytes(range(256)) * 40
# The local server is plain http on loopback: allowed explicitly, as the local stack does.
LOCAL = UrlPolicy.from_patterns(["127.0.0.1:*"], allow_http=True, allow_private=True)

ROUTES: dict[str, tuple[int, dict[str, str], bytes]] = {
    "/ok": (200, {}, BODY),
    "/missing": (404, {}, b"<Error><Code>NoSuchKey</Code></Error>"),
    "/expired": (403, {}, EXPIRED_BODY),
    "/denied": (403, {}, b"<Error><Code>AccessDenied</Code></Error>"),
    # A 403 whose error body cannot be read: it does not decode, or it breaks off.
    "/denied-garbled": (403, {"Content-Encoding": "gzip"}, b"<Error>not gzip</Error>"),
    "/denied-short": (403, {"Content-Length": "5000"}, b"<Error><Code>AccessDenied"),
    "/busy": (503, {"Retry-After": "7"}, b""),
    "/throttled": (429, {}, b""),
    "/bad": (400, {}, b""),
    # Content-Length promises more than is sent: the connection breaks mid-body.
    "/short": (200, {"Content-Length": str(len(BODY) + 100)}, BODY),
    "/hop": (302, {"Location": "/ok"}, b""),  # relative, same server: followed
    "/loop": (307, {"Location": "/loop"}, b""),
}


TRICKLE_BYTES, TRICKLE_EVERY_S = 6, 0.25  # "/trickle": a byte every quarter second


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path in ("/trickle", "/silent"):
            self._slow(path)
            return
        status, headers, body = ROUTES[path]
        self.send_response(status)
        headers = {"Content-Length": str(len(body)), **headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _slow(self, path: str) -> None:
        """200 with a body of TRICKLE_BYTES that comes a byte at a time ("/trickle") or never
        comes at all ("/silent", the connection held open for 3 s)."""
        self.send_response(200)
        self.send_header("Content-Length", str(TRICKLE_BYTES))
        self.end_headers()
        self.wfile.flush()
        if path == "/silent":
            time.sleep(3)
            return
        for _ in range(TRICKLE_BYTES):
            time.sleep(TRICKLE_EVERY_S)
            self.wfile.write(b"x")
            self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """A local HTTP server answering each path with a fixed status and body."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def read(url: str) -> bytes:
    with (
        requests.Session() as session,
        open_source(session, url, chunk_bytes=1000, timeout_s=(2, 2), policy=LOCAL) as chunks,
    ):
        return b"".join(chunks)


def test_a_200_is_streamed_in_chunks_of_the_asked_size(base_url: str) -> None:
    """The body arrives whole, in chunks no bigger than chunk_bytes."""
    with (
        requests.Session() as session,
        open_source(
            session,
            f"{base_url}/ok{SIGNED_QUERY}",
            chunk_bytes=1000,
            timeout_s=(2, 2),
            policy=LOCAL,
        ) as chunks,
    ):
        pieces = list(chunks)
    assert b"".join(pieces) == BODY
    assert max(len(p) for p in pieces) == 1000


@pytest.mark.parametrize(
    ("path", "error", "kind"),
    [
        ("/missing", SourceNotFoundError, PermanentError),
        ("/expired", UrlExpiredError, TransientError),
        ("/denied", UrlRefusedError, TransientError),
        ("/denied-garbled", UrlRefusedError, TransientError),
        ("/denied-short", UrlRefusedError, TransientError),
        ("/busy", SourceUnavailableError, TransientError),
        ("/throttled", SourceUnavailableError, TransientError),
        ("/bad", SourceRejectedError, PermanentError),
        ("/short", SourceUnavailableError, TransientError),
    ],
)
def test_http_faults_become_typed_errors_without_the_signed_query(
    base_url: str, path: str, error: type[DownloadError], kind: type[DownloadError]
) -> None:
    """Each answer maps to its error type; the message names the host, never the signature."""
    with pytest.raises(error) as raised:
        read(f"{base_url}{path}{SIGNED_QUERY}")
    assert type(raised.value) is error
    assert isinstance(raised.value, kind)
    assert "deadbeefcafe" not in str(raised.value)
    assert "127.0.0.1" in str(raised.value)


def test_a_trickling_body_reaches_the_caller_as_it_comes(base_url: str) -> None:
    """A byte every 0.25 s: the chunks come within about a second each, never held until a
    full chunk is there, so the caller's stall floor sees a slow source while it is slow."""
    with (
        requests.Session() as session,
        open_source(
            session, f"{base_url}/trickle", chunk_bytes=1000, timeout_s=(2, 2), policy=LOCAL
        ) as chunks,
    ):
        pieces = []
        for piece in chunks:
            pieces.append(piece)
    assert b"".join(pieces) == b"x" * TRICKLE_BYTES
    assert len(pieces) >= 2
    assert len(pieces[0]) < TRICKLE_BYTES, pieces  # handed on before the last byte came


def test_a_source_silent_for_the_read_timeout_is_slow(base_url: str) -> None:
    """No byte of the body within the read timeout: ProviderSlowError naming the host."""
    with (
        pytest.raises(ProviderSlowError, match=r"127\.0\.0\.1"),
        requests.Session() as session,
        open_source(
            session, f"{base_url}/silent", chunk_bytes=1000, timeout_s=(2, 1), policy=LOCAL
        ) as chunks,
    ):
        list(chunks)


def test_a_503_carries_its_retry_after(base_url: str) -> None:
    """Retry-After in seconds is kept on the error for the retry policy."""
    with pytest.raises(SourceUnavailableError) as raised:
        read(f"{base_url}/busy{SIGNED_QUERY}")
    assert raised.value.retry_after_s == 7.0


def test_a_refused_connection_is_transient_and_hides_the_url() -> None:
    """Nothing listening: SourceUnavailableError naming only the host."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(SourceUnavailableError) as raised:
        read(f"http://127.0.0.1:{port}/x{SIGNED_QUERY}")
    assert "deadbeefcafe" not in str(raised.value)
    assert raised.value.__suppress_context__


def test_url_host_is_the_only_loggable_part() -> None:
    """url_host drops the path and the signed query."""
    assert url_host(f"https://bucket.s3.amazonaws.com/k{SIGNED_QUERY}") == "bucket.s3.amazonaws.com"


def test_a_relative_redirect_to_an_allowed_host_is_followed(base_url: str) -> None:
    """302 to a path on the same (allowed) server: the body of the target arrives."""
    assert read(f"{base_url}/hop{SIGNED_QUERY}") == BODY


def test_a_redirect_loop_is_refused_after_a_bounded_number_of_hops(base_url: str) -> None:
    """A server redirecting to itself forever: url_refused, naming the host only."""
    with pytest.raises(UrlNotAllowedError, match=r"more than 3 redirects \(host 127.0.0.1\)") as e:
        read(f"{base_url}/loop{SIGNED_QUERY}")
    assert e.value.error_message.startswith("url_refused: ")
    assert "secretcred" not in e.value.error_message

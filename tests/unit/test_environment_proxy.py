"""An HTTPS_PROXY / HTTP_PROXY in the environment never carries provider or download
traffic: the pinned sessions connect to the addresses the URL policy checked, and one log
line per process says the proxy was ignored. Both servers are ours, on 127.0.0.1; the
provider's name is answered by a fake resolver."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from structlog.testing import capture_logs

from dlpipe.adapters import pinned_http
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.adapters.source import HttpSource
from dlpipe.domain.url_policy import UrlPolicy

_LOOPBACK = "127.0.0.1"


class _Counting:
    """A TCP server that counts the connections it accepts and closes each at once."""

    def __init__(self) -> None:
        self.listener = socket.create_server((_LOOPBACK, 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    @contextmanager
    def running(self) -> Iterator[_Counting]:
        self._thread.start()
        try:
            yield self
        finally:
            # Closing alone does not wake a thread blocked in accept(); a shutdown does.
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)
            self.listener.close()
            self._thread.join(timeout=5)
            assert not self._thread.is_alive(), "the counting server did not stop"


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"files": []}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Silent."""


@contextmanager
def _server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer((_LOOPBACK, 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counting]:
    """A recording 'proxy' every proxy variable names; NO_PROXY unset, so requests with the
    environment trusted would send even a loopback request through it."""
    monkeypatch.setattr(pinned_http, "_told", [])
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with _Counting().running() as counting:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"):
            monkeypatch.setenv(name, f"http://{_LOOPBACK}:{counting.port}")
        yield counting


def _ignored(logs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [line for line in logs if line["event"] == "http.environment_proxy_ignored"]


def test_provider_requests_never_reach_an_environment_proxy(proxy: _Counting) -> None:
    with _server() as provider, capture_logs() as logs:
        for _ in range(2):  # two clients, two requests each: one log line for the process
            client = ProviderClient(
                f"http://api.provider.test:{provider.server_port}", "tok-123",
                allow_http=True, allow_private=True, max_attempts=1,
                resolver=lambda host, port: [_LOOPBACK],
            )  # fmt: skip
            client.check_listing("2026-03-07")
            client.check_listing("2026-03-08")
    assert proxy.connections == 0
    [line] = _ignored(logs)
    assert "HTTPS_PROXY" in line["variables"]  # type: ignore[operator]
    assert "AWS SDK traffic may still use the proxy" in str(line["detail"])


def test_downloads_never_reach_an_environment_proxy(proxy: _Counting) -> None:
    with _server() as files, capture_logs() as logs:
        policy = UrlPolicy(
            (f"files.vendor.test:{files.server_port}",), allow_http=True, allow_private=True,
            resolver=lambda host, port: [_LOOPBACK],
        )  # fmt: skip
        url = f"http://files.vendor.test:{files.server_port}/a.enc?X-Amz-Signature=s"
        with HttpSource().open(url, chunk_bytes=1024, timeout_s=(5, 5), policy=policy) as chunks:
            assert b"".join(chunks) == b'{"files": []}'
    assert proxy.connections == 0
    assert len(_ignored(logs)) == 1


def test_without_a_proxy_variable_nothing_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinned_http, "_told", [])
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    with _server() as provider, capture_logs() as logs:
        ProviderClient(
            f"http://api.provider.test:{provider.server_port}", "tok-123",
            allow_http=True, allow_private=True, max_attempts=1,
            resolver=lambda host, port: [_LOOPBACK],
        ).check_listing("2026-03-07")  # fmt: skip
    assert _ignored(logs) == []

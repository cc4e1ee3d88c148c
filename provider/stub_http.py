"""HTTP plumbing of the stub provider: a threaded server on 127.0.0.1 that calls one function."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from dlpipe.log import get_logger

HOST = "127.0.0.1"
_log = get_logger(component="provider.stub")


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, JSON body bytes, extra headers."""

    status: int
    body: bytes
    headers: Sequence[tuple[str, str]] = ()

    @classmethod
    def json(cls, status: int, payload: object, headers: Sequence[tuple[str, str]] = ()) -> Reply:
        """A reply whose body is `payload` as JSON."""
        return cls(status, json.dumps(payload).encode(), headers)


Serve = Callable[[str, str | None], Reply]  # (path with query, Authorization header) -> Reply


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real API behind a load balancer

    def do_GET(self) -> None:
        server = cast("_Server", self.server)
        reply = server.serve(self.path, self.headers.get("Authorization"))
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body)
        _log.debug("provider.stub.request", path=self.path.split("?")[0], status=reply.status)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence http.server's stderr lines; `provider.stub.request` logs each call."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, serve: Serve) -> None:
        super().__init__((HOST, port), _Handler)
        self.serve = serve

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out has closed its socket: writing the late answer fails.
        _log.debug("provider.stub.client_gone")


class StubHttpServer:
    """Serves `serve` on 127.0.0.1:`port` (0 = a free port) from a background thread."""

    def __init__(self, serve: Serve, *, port: int = 0) -> None:
        self._stopping = threading.Event()
        self._server = _Server(port, serve)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="stub-provider-http", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:port."""
        return f"http://{HOST}:{self._server.server_address[1]}"

    def pause(self, seconds: float) -> None:
        """Sleep in a request thread, cut short when the server closes."""
        if seconds > 0:
            self._stopping.wait(seconds)

    def close(self) -> None:
        """Stop accepting, wake paused requests, release the port, join the thread."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

"""HTTP plumbing of the stub provider: a threaded server on 127.0.0.1, routes, bearer check."""

from __future__ import annotations

import functools
import hmac
import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import validate_date
from dlpipe.log import get_logger

HOST = "127.0.0.1"


def _log() -> Any:
    # Bound per call: a logger bound at import would miss configure_logging (stream, level).
    return get_logger(component="dlpipe.local.stub.server")


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, JSON body bytes, extra headers; or a body streamed in chunks."""

    status: int
    body: bytes
    headers: Sequence[tuple[str, str]] = ()
    chunks: Iterable[bytes] | None = None  # sent with Transfer-Encoding: chunked; body unused

    @classmethod
    def streamed(cls, status: int, chunks: Iterable[bytes]) -> Reply:
        """A reply whose body is produced while it is sent (a listing of any size)."""
        return cls(status, b"", (), chunks)

    @classmethod
    def json(cls, status: int, payload: object, headers: Sequence[tuple[str, str]] = ()) -> Reply:
        """A reply whose body is `payload` as JSON."""
        return cls(status, json.dumps(payload).encode(), headers)


_ROUTE = re.compile(r"/v1/files(?:/([^/]+))?")


@dataclass(frozen=True)
class Route:
    """The API call a request path asks for."""

    entity: str | None  # None: the day's listing
    date: str | None  # None: missing, or not a calendar date
    cursor: str | None = None  # the listing's `cursor` parameter, decoded


def route(path: str) -> Route | None:
    """Parse `/v1/files[/{entity}]?date=`; None if the path names no endpoint."""
    url = urlsplit(path)
    match = _ROUTE.fullmatch(url.path)
    if match is None:
        return None
    query = parse_qs(url.query)
    try:
        date: str | None = validate_date(query.get("date", [""])[0])
    except InvalidIdentifierError:
        date = None
    return Route(match.group(1), date, query.get("cursor", [None])[0])


def bearer_matches(authorization: str | None, token: str) -> bool:
    """True if the Authorization header carries exactly `token` (constant-time compare)."""
    expected = f"Bearer {token}".encode()
    return authorization is not None and hmac.compare_digest(authorization.encode(), expected)


Serve = Callable[[str, str | None], Reply]  # (path with query, Authorization header) -> Reply


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real API behind a load balancer
    disable_nagle_algorithm = True  # headers, then chunks: no 40 ms delayed-ACK stall between

    def do_GET(self) -> None:
        server = cast("_Server", self.server)
        reply = server.serve(self.path, self.headers.get("Authorization"))
        # Logged before answering: the caller (a test's capture, say) is still waiting.
        _log().debug(
            "dlpipe.local.stub.server.request", path=self.path.split("?")[0], status=reply.status
        )
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        if reply.chunks is not None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        if reply.chunks is None:
            self.wfile.write(reply.body)
            return
        for chunk in reply.chunks:
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        """Silence http.server's stderr lines; `dlpipe.local.stub.server.request` logs each call."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, serve: Serve) -> None:
        super().__init__((HOST, port), _Handler)
        self.serve = serve

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out has closed its socket: writing the late answer fails.
        _log().debug("dlpipe.local.stub.server.client_gone")


class StubHttpServer:
    """Serves `serve` on 127.0.0.1:`port` (0 = a free port) from a background thread."""

    def __init__(self, serve: Serve, *, port: int = 0) -> None:
        self._stopping = threading.Event()
        self._server = _Server(port, serve)
        # A short poll interval: shutdown() waits for it, and tests stop many stubs.
        self._thread = threading.Thread(
            target=functools.partial(self._server.serve_forever, poll_interval=0.05),
            name="stub-provider-http",
            daemon=True,
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

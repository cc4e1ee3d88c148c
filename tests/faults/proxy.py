"""A fault-injecting HTTP proxy in front of one emulator endpoint (DynamoDB Local or moto).

Every request is forwarded as it came: method, path and query, each header (Host included, so
a SigV4 signature still verifies) and the body, streamed in 64 KiB pieces; the upstream's
status, headers and body come back the same way. A `FaultPlan` may instead answer with an
AWS-shaped refusal, reset the connection, delay the request, or forward it and then drop the
answer. Threaded (one thread per client connection, HTTP/1.1 keep-alive), bound to 127.0.0.1
on a free port, started and stopped by the test that owns it.

The plan sees a request's body only when it is small and protocol-bearing (DynamoDB, SQS and
SSM JSON, or SQS's query form); an S3 body is streamed, so S3 rules match on method and query alone.
"""

from __future__ import annotations

import http.client
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

from tests.faults.rules import FaultPlan, Rule
from tests.faults.shapes import THROTTLE, classify, error_response

PIECE = 64 * 1024
UPSTREAM_TIMEOUT_S = 120.0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The status line, headers and body are written apart: without TCP_NODELAY each answer
    # waited for the client's delayed ACK, about 40 ms a call.
    disable_nagle_algorithm = True
    server: _ProxyServer

    def log_message(self, format: str, *args: object) -> None:
        """Silent: the plan's log says what was injected."""

    def _proxy(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        small = "x-amz-target" in headers or "form-urlencoded" in headers.get("content-type", "")
        body = self._read_body(headers) if small else None
        service, operation = classify(self.command, self.path, headers, body or b"")
        plan = self.server.plan
        rule = plan.decide(service, operation, body or b"", plan.elapsed_s())
        self.server.count(service, operation, body)
        upload_id = _upload_id(self.path) if service == "s3" else None
        if rule is None and upload_id and plan.upload_gone(upload_id):
            rule = _NO_SUCH_UPLOAD
            plan.note(service, operation, "gone")
        if rule is not None and rule.fault == "reset":
            self._reset()
            return
        if rule is not None and rule.fault in ("throttle", "error"):
            if body is None:
                self._drain(headers)
            self._refuse(service, rule, headers)
            return
        if rule is not None and rule.fault == "delay":
            plan.sleep(rule.delay_s)
        self._forward(headers, body, drop=rule is not None and rule.fault == "drop")

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _proxy

    # --- request body -------------------------------------------------------------------
    def _read_body(self, headers: dict[str, str]) -> bytes:
        return b"".join(self._body_pieces(headers))

    def _drain(self, headers: dict[str, str]) -> None:
        for _ in self._body_pieces(headers):
            pass

    def _body_pieces(self, headers: dict[str, str]) -> Iterator[bytes]:
        """The body as it arrived on the wire (a chunked body with its chunk framing)."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            yield from _raw_chunks(self.rfile)
            return
        left = int(headers.get("content-length", "0") or 0)
        while left > 0:
            piece = self.rfile.read(min(PIECE, left))
            if not piece:
                raise ConnectionError("the client closed mid-body")
            left -= len(piece)
            yield piece

    # --- faults -------------------------------------------------------------------------
    def _reset(self) -> None:
        """Abortive close: the client reads ECONNRESET, nothing was forwarded."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _refuse(self, service: str, rule: Rule, headers: dict[str, str]) -> None:
        if rule.fault == "throttle":
            status, code = THROTTLE.get(service, (503, "SlowDown"))
        else:
            status, code = rule.status or 500, rule.code or "InternalError"
        status, extra, body = error_response(service, status, code, headers, self.command)
        self.send_response_only(status)
        for name, value in extra:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # --- forwarding ---------------------------------------------------------------------
    def _forward(self, headers: dict[str, str], body: bytes | None, *, drop: bool) -> None:
        upstream = http.client.HTTPConnection(
            self.server.upstream_host, self.server.upstream_port, timeout=UPSTREAM_TIMEOUT_S
        )
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                upstream.putheader(name, value)
            upstream.endheaders()
            for piece in [body] if body is not None else self._body_pieces(headers):
                upstream.send(piece)
            response = upstream.getresponse()
            upload_id = _upload_id(self.path)
            if upload_id and self.command == "POST" and 200 <= response.status < 300:
                self.server.plan.upload_completed(upload_id)
            if drop:
                response.read()  # the write took effect upstream; its answer goes nowhere
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self._relay(response)
        finally:
            upstream.close()

    def _relay(self, response: http.client.HTTPResponse) -> None:
        self.wfile.write(f"HTTP/1.1 {response.status} {response.reason}\r\n".encode("latin-1"))
        for name, value in response.getheaders():
            self.wfile.write(f"{name}: {value}\r\n".encode("latin-1"))
        self.wfile.write(b"\r\n")
        chunked = "chunked" in (response.getheader("Transfer-Encoding") or "").lower()
        sized = response.getheader("Content-Length") is not None
        if self.command != "HEAD" and response.status not in (204, 304):
            while piece := response.read(PIECE):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            elif not sized:
                self.close_connection = True  # the body ended with the upstream's close
        if (response.getheader("Connection") or "").lower() == "close":
            self.close_connection = True
        self.wfile.flush()


_NO_SUCH_UPLOAD = Rule(service="s3", fault="error", status=404, code="NoSuchUpload")


def _upload_id(path: str) -> str | None:
    return parse_qs(urlsplit(path).query).get("uploadId", [None])[0]


def _raw_chunks(rfile: BinaryIO) -> Iterator[bytes]:
    """A chunked body's bytes, framing and trailers included, up to its last empty line."""
    while True:
        size_line = rfile.readline(1024)
        yield size_line
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while (line := rfile.readline(8192)) not in (b"\r\n", b"\n", b""):
                yield line
            yield b"\r\n"
            return
        left = size + 2  # the chunk and its CRLF
        while left > 0:
            piece = rfile.read(min(PIECE, left))
            if not piece:
                raise ConnectionError("the client closed mid-chunk")
            left -= len(piece)
            yield piece


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, upstream: str, plan: FaultPlan, keep: frozenset[str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.plan, self.keep = plan, keep
        self.requests: dict[str, int] = {}
        self.bodies: dict[str, list[bytes]] = {}
        self._lock = threading.Lock()

    def count(self, service: str, operation: str, body: bytes | None) -> None:
        with self._lock:
            key = f"{service}.{operation}"
            self.requests[key] = self.requests.get(key, 0) + 1
            if key in self.keep and body is not None:
                self.bodies.setdefault(key, []).append(body)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client or upstream that went away mid-request is part of the game: no traceback."""


class FaultProxy:
    """One proxy in front of `upstream` (http://host:port), applying `plan`; the bodies of the
    requests named in `keep` (`service.Operation`, protocol-bearing ones only) are kept, in
    order, for the test to read what the client asked."""

    def __init__(self, upstream: str, plan: FaultPlan, keep: frozenset[str] = frozenset()) -> None:
        self.plan = plan
        self._server = _ProxyServer(upstream, plan, keep)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fault-proxy", daemon=True
        )

    @property
    def url(self) -> str:
        """The proxy's endpoint URL."""
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def requests(self) -> dict[str, int]:
        """Requests seen, by `service.Operation` (faulted ones included)."""
        with self._server._lock:
            return dict(self._server.requests)

    def bodies(self, key: str) -> list[bytes]:
        """The kept bodies of `key` (`service.Operation`) requests, in the order they came."""
        with self._server._lock:
            return list(self._server.bodies.get(key, []))

    def use(self, plan: FaultPlan) -> None:
        """Apply `plan` from the next request on (its clock starts now if it has not yet)."""
        plan.start()
        self.plan = self._server.plan = plan

    def start(self) -> FaultProxy:
        """Serve on a thread; the plan's clock starts now if it has not yet."""
        self.plan.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    @contextmanager
    def running(self) -> Iterator[FaultProxy]:
        """Serve while the block runs."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

"""An AWS endpoint that is down for a while: answers 500 (InternalError, AWS's JSON protocol)
to its first requests, then forwards every request to the real emulator over HTTP."""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class FailingEndpoint:
    """127.0.0.1 only; `fail_first` requests get a 500 (`failed` counts them), then it forwards
    to `target` (e.g. the moto server). Stopped by `stop` (or the with block)."""

    def __init__(self, target: str, fail_first: int) -> None:
        self.target = urlsplit(target)
        self.fail_first = fail_first
        self.failed = 0
        self.forwarded = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FailingEndpoint:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _take_failure(self) -> bool:
        with self._lock:
            if self.failed < self.fail_first:
                self.failed += 1
                return True
            self.forwarded += 1
            return False

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        host, port = self.target.hostname or "127.0.0.1", self.target.port or 80
        connection = http.client.HTTPConnection(host, port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body written apart: no delayed-ACK wait

            def log_message(self, format: str, *args: object) -> None:
                return

            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if endpoint._take_failure():
                    self._answer(500, [("Content-Type", "application/x-amz-json-1.0")], _INTERNAL)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                status, answer_headers, answer = endpoint._forward(
                    self.command, self.path, headers, body
                )
                self._answer(status, answer_headers, answer)

            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET = do_PUT = do_DELETE = _relay

        return Handler


_INTERNAL = json.dumps(
    {"__type": "InternalError", "message": "We encountered an internal error. Please try again."}
).encode()

"""The pre-run check of the provider waits for its listing as the listing itself does: a
provider that takes 6 s to start a fresh date's listing passes the check (the probe's read
timeout was 5 s, so such a provider was reported down and waited out for nothing)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from dlpipe.adapters.provider_client import PROVIDER_TIMEOUT_S
from dlpipe.adapters.readiness import ProviderProbe

SLOW_START_S = 6.0  # over the probe's old 5 s, well under the listing's 30 s


class _SlowListing(BaseHTTPRequestHandler):
    answered: list[str]

    def do_GET(self) -> None:
        time.sleep(SLOW_START_S)
        body = b'{"files": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.answered.append(self.path)

    def log_message(self, format: str, *args: object) -> None:
        """Silent."""


@contextmanager
def _provider() -> Iterator[tuple[str, list[str]]]:
    answered: list[str] = []
    handler = type("Handler", (_SlowListing,), {"answered": answered})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answered
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_provider_slow_to_start_a_listing_passes_the_check() -> None:
    assert PROVIDER_TIMEOUT_S[1] > SLOW_START_S
    with _provider() as (url, answered):
        probe = ProviderProbe(url, lambda: "t0ken", allow_http=True, allow_private=True)
        probe.check_listing("2026-03-01")
    assert len(answered) == 1

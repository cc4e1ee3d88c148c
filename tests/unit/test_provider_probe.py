"""The provider client against a real HTTP server: the pre-run check waits for the listing
as the listing itself does (a provider that takes 6 s to start a fresh date's listing passes
the check; the probe's read timeout was 5 s, so such a provider was reported down and waited
out for nothing), and every request line names the client's feed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from structlog.testing import capture_logs

from dlpipe.adapters.provider_client import PROVIDER_TIMEOUT_S, ProviderClient
from dlpipe.adapters.readiness import ProviderProbe

SLOW_START_S = 6.0  # over the probe's old 5 s, well under the listing's 30 s


class _SlowListing(BaseHTTPRequestHandler):
    answered: list[str]
    delay_s: float

    def do_GET(self) -> None:
        time.sleep(self.delay_s)
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
def _provider(delay_s: float = SLOW_START_S) -> Iterator[tuple[str, list[str]]]:
    answered: list[str] = []
    handler = type("Handler", (_SlowListing,), {"answered": answered, "delay_s": delay_s})
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


def test_each_provider_request_line_names_the_clients_feed() -> None:
    """A client made for a feed names it on its provider.request lines (three feeds' lines in
    one log told apart); one made without names none."""
    with _provider(delay_s=0) as (url, _), capture_logs() as logs:
        ProviderClient(
            url, "t0ken", allow_http=True, allow_private=True, feed="vendor-b"
        ).check_listing("2026-03-01")
        ProviderClient(url, "t0ken", allow_http=True, allow_private=True).check_listing(
            "2026-03-01"
        )
    requests = [e for e in logs if e["event"] == "provider.request"]
    assert [e.get("feed") for e in requests] == ["vendor-b", None]

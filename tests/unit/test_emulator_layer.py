"""The emulator's strictness layer as pure WSGI: misrouted DynamoDB calls and presigned-URL expiry."""

from __future__ import annotations

import threading
import time
from typing import Any

from dlpipe.local.emulator import StrictEmulatorApp, presigned_url_expired


class SlowApp:
    """A WSGI app that records how many requests it serves at once."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.02)
        with self._lock:
            self.active -= 1
        start_response("200 OK", [])
        return [b"ok"]


def _run_concurrently(app: StrictEmulatorApp, environ: dict[str, Any], n: int = 6) -> None:
    threads = [
        threading.Thread(target=lambda: list(app(dict(environ), lambda *a: None))) for _ in range(n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_dynamodb_requests_that_reach_moto_are_refused_and_never_served() -> None:
    """A DynamoDB request at moto (a client that ignored AWS_ENDPOINT_URL_DYNAMODB) gets a 400
    naming the variable; moto's lenient DynamoDB never sees it."""
    inner = SlowApp()
    statuses: list[str] = []
    body = StrictEmulatorApp(inner)(
        {"HTTP_X_AMZ_TARGET": "DynamoDB_20120810.UpdateItem"},
        lambda status, _headers: statuses.append(status),
    )
    assert statuses == ["400 Bad Request"]
    assert b"AWS_ENDPOINT_URL_DYNAMODB" in b"".join(body)
    assert inner.peak == 0


def test_other_services_stay_concurrent() -> None:
    """SQS long polls and S3 transfers are not serialized."""
    inner = SlowApp()
    _run_concurrently(StrictEmulatorApp(inner), {"HTTP_X_AMZ_TARGET": "AmazonSQS.ReceiveMessage"})
    assert inner.peak > 1


def test_sigv4_url_expires_after_date_plus_expires() -> None:
    """X-Amz-Date 2026-02-28T00:00:00Z + 60 s is live at +60 s and expired at +61 s."""
    query = "X-Amz-Date=20260228T000000Z&X-Amz-Expires=60&X-Amz-Signature=x"
    signed_s = 1_772_236_800
    assert not presigned_url_expired(query, signed_s + 60)
    assert presigned_url_expired(query, signed_s + 61)


def test_sigv2_url_expires_at_its_expires_epoch() -> None:
    """Expires=epoch with a Signature is refused after that second."""
    assert not presigned_url_expired("Expires=100&Signature=x", 100)
    assert presigned_url_expired("Expires=100&Signature=x", 101)


def test_unsigned_requests_and_garbled_dates() -> None:
    """No presign parameters: never expired; an unreadable date: refused."""
    assert not presigned_url_expired("list-type=2", time.time())
    assert presigned_url_expired("X-Amz-Date=garbage&X-Amz-Expires=60", time.time())


def test_expired_url_gets_403_without_reaching_moto() -> None:
    """The layer answers an expired URL itself with S3's AccessDenied body."""
    inner = SlowApp()
    statuses: list[str] = []
    body = StrictEmulatorApp(inner)(
        {"QUERY_STRING": "Expires=1&Signature=x"}, lambda s, h: statuses.append(s)
    )
    assert statuses == ["403 Forbidden"]
    assert b"Request has expired" in b"".join(body)
    assert inner.peak == 0

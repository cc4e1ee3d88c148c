"""Reading the provider's object from its presigned URL as a stream of ciphertext chunks.

HTTP faults become typed errors here. No error message carries the URL: requests puts the
signed query string into its own messages, so those are never passed on (only the host).
Every URL, the first and each redirect target, passes the URL policy before it is requested;
requests' own redirect following is off, so no hop escapes the check. Each request connects
to the addresses its check approved (pinned_http.py): the host is resolved once, by the check.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urljoin

import requests
import urllib3

from dlpipe.adapters.pinned_http import pinning
from dlpipe.adapters.retry_after import retry_after_seconds
from dlpipe.domain.download_errors import (
    ProviderSlowError,
    SourceNotFoundError,
    SourceRejectedError,
    SourceUnavailableError,
    UrlExpiredError,
    UrlNotAllowedError,
    UrlRefusedError,
)
from dlpipe.domain.url_policy import MAX_REDIRECTS, UrlPolicy, check_url, url_host

_EXPIRED_MARKER = b"Request has expired"
_ERROR_BODY_LIMIT = 4096
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# A chunk is handed on when full or after this long, whichever comes first.
YIELD_EVERY_S = 1.0


def _status_error(response: requests.Response, host: str) -> Exception:
    status = response.status_code
    if status == 404:
        return SourceNotFoundError(f"HTTP 404 from {host}: the source object does not exist")
    if status == 403:
        try:
            body = response.raw.read(_ERROR_BODY_LIMIT, decode_content=True) or b""
        except (urllib3.exceptions.HTTPError, OSError):
            body = b""  # an error body that does not decode or breaks off: still a refusal
        if _EXPIRED_MARKER in body:
            return UrlExpiredError(f"HTTP 403 from {host}: the presigned URL has expired")
        return UrlRefusedError(f"HTTP 403 from {host}: access denied")
    if status == 429 or status >= 500:
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        return SourceUnavailableError(f"HTTP {status} from {host}", retry_after_s=retry_after)
    return SourceRejectedError(f"HTTP {status} from {host}")


@contextmanager
def open_source(
    session: requests.Session,
    url: str,
    *,
    chunk_bytes: int,
    timeout_s: tuple[float, float],
    policy: UrlPolicy,
) -> Iterator[Iterator[bytes]]:
    """Stream the object at `url` in chunks of up to `chunk_bytes`; typed errors on faults."""
    response = _get_following_allowed_redirects(session, url, timeout_s, policy)
    host = url_host(response.url or url)
    with response:
        if response.status_code != 200:
            raise _status_error(response, host)
        yield _chunks(response, host, chunk_bytes)


def _get_following_allowed_redirects(
    session: requests.Session, url: str, timeout_s: tuple[float, float], policy: UrlPolicy
) -> requests.Response:
    adapter = pinning(session)
    for _ in range(MAX_REDIRECTS + 1):
        adapter.pin(check_url(policy, url))
        host = url_host(url)
        try:
            response = session.get(url, stream=True, timeout=timeout_s, allow_redirects=False)
        except requests.RequestException as exc:
            raise SourceUnavailableError(f"{type(exc).__name__} contacting {host}") from None
        location = response.headers.get("Location")
        if response.status_code not in _REDIRECTS or not location:
            return response
        response.close()
        url = urljoin(url, location)
    raise UrlNotAllowedError(f"more than {MAX_REDIRECTS} redirects (host {url_host(url)})")


def _chunks(response: requests.Response, host: str, chunk_bytes: int) -> Iterator[bytes]:
    """The body in chunks of `chunk_bytes`, or less when YIELD_EVERY_S passed first: a slow
    source's bytes reach the caller's stall floor as they come (a full-chunk read would
    block as long as the source trickles)."""
    raw = response.raw
    pending = bytearray()
    started = time.monotonic()
    try:
        while data := raw.read1(chunk_bytes - len(pending)):
            pending += data
            if len(pending) >= chunk_bytes or time.monotonic() - started >= YIELD_EVERY_S:
                yield bytes(pending)
                pending.clear()
                started = time.monotonic()
    except urllib3.exceptions.ReadTimeoutError:
        # The read timeout is at most the stall floor's window: a source silent that long
        # is below any floor, and is given up as slow rather than retried at once.
        raise ProviderSlowError(f"no byte from {host} within the read timeout") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        # A body cut short (Content-Length not met) lands here too: the connection broke.
        raise SourceUnavailableError(f"{type(exc).__name__} reading from {host}") from None
    if pending:
        yield bytes(pending)


@dataclass(frozen=True)
class HttpSource:
    """Presigned URLs over HTTP (the download service's Source port): one session per open,
    since requests does not promise that a Session is thread-safe."""

    session: Callable[[], requests.Session] = requests.Session

    @contextmanager
    def open(
        self, url: str, *, chunk_bytes: int, timeout_s: tuple[float, float], policy: UrlPolicy
    ) -> Iterator[Iterator[bytes]]:
        """The object at `url` as chunks (see `open_source`)."""
        with (
            self.session() as http,
            open_source(
                http, url, chunk_bytes=chunk_bytes, timeout_s=timeout_s, policy=policy
            ) as chunks,
        ):
            yield chunks

"""HTTP client of the provider API: bearer token, bounded retries with full jitter, strict parsing.

`iter_listing` streams a day's listing page after page (dlpipe/adapters/listing_stream.py);
`list_files` collects it. 5xx, 429 (Retry-After honoured up to `max_wait_s`), connection errors
and timeouts before a page's body retry that page, then raise ProviderUnavailableError; other
4xx and a body that does not decode are permanent. Logs never carry the token or a file's URL.
Why a break mid-body is not retried: docs/ARCHITECTURE.md, "Why the listing is a stream".
The token comes in as a string; dlpipe/adapters/provider_token.py reads it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

import requests
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from dlpipe.adapters.listing_stream import ListingLimits, ListingParser, collect_listing
from dlpipe.adapters.pinned_http import pinning
from dlpipe.adapters.retry_after import retry_after_seconds
from dlpipe.config import ConfigError, check_provider_url
from dlpipe.domain.listing import (
    MAX_FILES_PER_LISTING,
    FileDescriptor,
    ListingResult,
    RejectedFile,
    parse_descriptor,
)
from dlpipe.domain.model import validate_date, validate_entity
from dlpipe.domain.provider_errors import (
    MalformedResponseError,
    ProviderAuthError,
    ProviderNotFoundError,
    ProviderRefusedError,
    ProviderRequestError,
    ProviderUnavailableError,
)
from dlpipe.domain.url_policy import Resolver, UrlRefused, approve_api, resolve_addresses
from dlpipe.log import get_logger

MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # one file's answer; the listing is streamed, uncapped
# connect, read: how long a call waits for the provider to connect, then for each read (the
# first listing page's headers included: a fresh date's listing may take the provider a while).
PROVIDER_TIMEOUT_S: tuple[float, float] = (5, 30)
_LISTING_CHUNK_BYTES = 64 * 1024
# Faults of the connection, not of the request: worth another attempt.
_T = TypeVar("_T")
_TRANSPORT_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
)
# A body that arrived whole (a cut one is ChunkedEncodingError) but does not decode under its
# Content-Encoding: the provider or a proxy on its side encoded it wrong, and a retry would
# fetch the same bytes. A malformed response, permanent like invalid JSON; not retried.
_UNDECODABLE = requests.exceptions.ContentDecodingError


def _log() -> Any:
    # Bound per call: a logger bound at import would miss configure_logging (stream, level).
    return get_logger(component="dlpipe.adapters.provider_client")


class _Retryable(Exception):
    """A transient answer (5xx, 429) or transport fault; retried, then ProviderUnavailableError."""

    def __init__(
        self, reason: str, status_code: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(reason)
        self.status_code = status_code
        self.retry_after_s = retry_after_s


class ProviderClient:
    """The provider's two endpoints; safe to share between threads if `session` is."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = PROVIDER_TIMEOUT_S,
        max_attempts: int = 5,
        max_wait_s: float = 30,
        initial_wait_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        listing_limits: ListingLimits | None = None,
        allow_http: bool = False,
        allow_private: bool = False,
        resolver: Resolver = resolve_addresses,
        feed: str | None = None,
    ) -> None:
        if not token:
            raise ConfigError("the provider token is empty")
        # The token is a bearer credential: plain http only where told (the local stub).
        self._base_url = check_provider_url(base_url, allow_http=allow_http).rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._session = session or requests.Session()
        self._allow_private, self._resolver = allow_private, resolver
        self._timeout = timeout
        self._feed = feed  # named on every line this client logs
        self._max_attempts = max(1, max_attempts)
        self._max_wait_s = max_wait_s
        self._backoff = wait_random_exponential(multiplier=initial_wait_s, max=max_wait_s)
        self._sleep = sleep
        self._listing_limits = listing_limits or ListingLimits()

    def __repr__(self) -> str:
        return f"ProviderClient({self._base_url!r})"  # never the token

    def _log(self) -> Any:
        log = _log()
        return log.bind(feed=self._feed) if self._feed else log

    def list_files(self, date: str) -> ListingResult:
        """The day's listing, all pages collected: parsed files and the refused ones.

        Held whole in memory (an entry with its presigned URL and wrapped key is 1-2 KB),
        so capped at MAX_FILES_PER_LISTING (10,000): a bound on this call's memory, not on
        the day. The orchestrator streams a day of any size with `iter_listing`; this is
        for callers that want one small answer whole (the tests' wrapping listers).
        """
        limits = replace(
            self._listing_limits,
            max_files=min(self._listing_limits.max_files, MAX_FILES_PER_LISTING),
        )
        return collect_listing(date, self._iter_listing(date, limits))

    def iter_listing(self, date: str) -> Iterator[FileDescriptor | RejectedFile]:
        """The day's listing entry by entry, following `next` cursors; O(one entry) of bytes.

        Raises MalformedResponseError (permanent) on a whole-listing fault, possibly after
        entries were yielded; a RejectedFile with `duplicate` set asks to refuse an entity
        yielded before (see dlpipe/adapters/listing_stream.py).
        """
        return self._iter_listing(date, self._listing_limits)

    def check_listing(self, date: str) -> None:
        """Open the day's first listing page and close it unread: ProviderError unless the
        provider answers 200 to our token (a check before a run, not a fetch)."""
        validate_date(date)
        self._open_listing_page(date, None, 1).close()

    def _iter_listing(
        self, date: str, limits: ListingLimits
    ) -> Iterator[FileDescriptor | RejectedFile]:
        validate_date(date)
        parser = ListingParser(date, limits)
        cursor: str | None = None
        while True:
            with self._open_listing_page(date, cursor, parser.pages + 1) as response:
                try:
                    yield from parser.page(response.iter_content(_LISTING_CHUNK_BYTES))
                except _UNDECODABLE as exc:
                    raise MalformedResponseError(
                        "the provider's listing does not decode (Content-Encoding)"
                        f" at entry {parser.entries} (page {parser.pages})"
                    ) from exc
                except _TRANSPORT_ERRORS as exc:
                    raise ProviderUnavailableError(
                        f"the provider's listing broke off at entry {parser.entries}"
                        f" (page {parser.pages}): {type(exc).__name__}",
                        attempts=1,
                        reason=f"GET /v1/files: {type(exc).__name__} mid-body",
                    ) from exc
            self._log().info(
                "provider.listing_page", date=date, page=parser.pages, entries=parser.entries
            )
            cursor = parser.next_cursor
            if cursor is None:
                return

    def _retried(self, path: str, what: str, attempt: Callable[..., _T], *args: object) -> _T:
        """`attempt(*args)`, retried on transient faults with backoff; ProviderUnavailableError
        naming `what` once the attempts are spent."""
        retrying = Retrying(
            stop=stop_after_attempt(self._max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_Retryable),
            before_sleep=self._log_retry,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            return retrying(attempt, *args)
        except _Retryable as exc:
            raise ProviderUnavailableError(
                f"provider unavailable for {what}: {exc} after {self._max_attempts} attempts",
                attempts=self._max_attempts,
                status_code=exc.status_code,
                reason=f"GET {path}: {exc}",
            ) from exc

    def _open_listing_page(self, date: str, cursor: str | None, page: int) -> requests.Response:
        """GET one listing page, retried like every request; the open 200 response."""
        params = {"date": date} if cursor is None else {"date": date, "cursor": cursor}
        return self._retried(
            "/v1/files", f"/v1/files (page {page})", self._open_page_attempt, params, page
        )

    def _pin(self) -> None:
        """Resolve the API's host for this attempt and connect only there (pinned_http.py):
        an internal address is a permanent refusal, a name that does not resolve a
        transient one."""
        try:
            approved = approve_api(
                self._base_url, allow_private=self._allow_private, resolver=self._resolver
            )
        except UrlRefused as exc:
            if exc.reason == "the host does not resolve":
                raise _Retryable("NameResolutionError") from None
            raise ProviderRefusedError(f"the provider API is refused: {exc}") from None
        pinning(self._session).pin(approved)

    def _open_page_attempt(self, params: dict[str, str], page: int) -> requests.Response:
        path, date = "/v1/files", params["date"]
        self._pin()
        started = time.monotonic()
        try:
            response = self._session.get(
                f"{self._base_url}{path}",
                params=params,  # requests URL-encodes the opaque cursor
                headers=self._headers,
                timeout=self._timeout,
                stream=True,
                allow_redirects=False,  # a bearer token is not sent wherever a redirect points
            )
        except _TRANSPORT_ERRORS as exc:
            self._log().info(
                "provider.request", path=path, date=date, page=page, error=type(exc).__name__
            )
            raise _Retryable(type(exc).__name__) from exc
        self._log().info(
            "provider.request",
            path=path,
            date=date,
            page=page,
            status=response.status_code,
            elapsed_ms=round((time.monotonic() - started) * 1000),  # to the headers
        )
        if response.status_code != 200:
            response.close()
            _check_status(response, path, f"no listing for {date}")
        return response

    def get_file(self, entity: str, date: str) -> FileDescriptor:
        """One file's descriptor with a freshly signed URL."""
        validate_entity(entity)
        validate_date(date)
        payload = self._get_json(f"/v1/files/{entity}", date, f"no file {entity!r} for {date}")
        return parse_descriptor(payload, date, expected_entity=entity)

    def _get_json(self, path: str, date: str, not_found: str) -> object:
        body: bytes = self._retried(path, path, self._attempt, path, date, not_found)
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise MalformedResponseError(
                f"the provider answered {path} with invalid JSON ({len(body)} bytes)"
            ) from None

    def _attempt(self, path: str, date: str, not_found: str) -> bytes:
        self._pin()
        started = time.monotonic()
        try:
            with self._session.get(
                f"{self._base_url}{path}",
                params={"date": date},
                headers=self._headers,
                timeout=self._timeout,
                stream=True,
                allow_redirects=False,  # a bearer token is not sent wherever a redirect points
            ) as response:
                body = _read_capped(response) if response.status_code == 200 else b""
        except _UNDECODABLE as exc:
            raise MalformedResponseError(
                f"the provider's answer to {path} does not decode (Content-Encoding)"
            ) from exc
        except _TRANSPORT_ERRORS as exc:
            self._log().info("provider.request", path=path, date=date, error=type(exc).__name__)
            raise _Retryable(type(exc).__name__) from exc
        elapsed_ms = round((time.monotonic() - started) * 1000)
        self._log().info(
            "provider.request",
            path=path,
            date=date,
            status=response.status_code,
            elapsed_ms=elapsed_ms,
        )
        _check_status(response, path, not_found)
        return body

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retryable) and exc.retry_after_s is not None:
            return min(exc.retry_after_s, self._max_wait_s)
        return float(self._backoff(state))

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait_s = state.next_action.sleep if state.next_action else None
        self._log().warning(
            "provider.retry", attempt=state.attempt_number, reason=str(exc), wait_s=wait_s
        )


def _read_capped(response: requests.Response) -> bytes:
    chunks: list[bytes] = []
    total = 0
    for chunk in response.iter_content(chunk_size=65536):
        total += len(chunk)
        if total > MAX_RESPONSE_BYTES:
            raise MalformedResponseError(
                f"the provider's answer exceeds {MAX_RESPONSE_BYTES} bytes"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _check_status(response: requests.Response, path: str, not_found: str) -> None:
    status = response.status_code
    if status == 200:
        return
    if status in (401, 403):
        raise ProviderAuthError(status)
    if status == 404:
        raise ProviderNotFoundError(f"the provider has {not_found} (HTTP 404)")
    if status == 429:
        raise _Retryable(
            "HTTP 429", status, retry_after_seconds(response.headers.get("Retry-After"))
        )
    if status >= 500:
        raise _Retryable(f"HTTP {status}", status)
    raise ProviderRequestError(
        f"the provider refused {path} with HTTP {status}", status_code=status
    )

"""HTTP client of the provider API: bearer token, bounded retries with full jitter, strict parsing.

Retried: 5xx, 429 (Retry-After seconds honoured, capped at `max_wait_s`), connection errors
and timeouts; then ProviderUnavailableError. Other 4xx are permanent and never retried.
Logs carry the API path, date, status and timing; never the token or a file's URL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import requests
from botocore.exceptions import ClientError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from dlpipe.config import ENV_PROVIDER_TOKEN, ENV_PROVIDER_TOKEN_SECRET, ConfigError, Settings
from dlpipe.log import get_logger
from provider.contract import FileDescriptor, ListingResult, parse_descriptor, parse_listing
from provider.errors import (
    MalformedResponseError,
    ProviderAuthError,
    ProviderNotFoundError,
    ProviderRequestError,
    ProviderUnavailableError,
)
from records.model import validate_date, validate_entity

if TYPE_CHECKING:
    from dlpipe.aws import AwsClients

MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # a full 10,000-file listing is a few MiB
# Faults of the connection, not of the request: worth another attempt.
_TRANSPORT_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
)


def _log() -> Any:
    # Bound per call: a logger bound at import would miss configure_logging (stream, level).
    return get_logger(component="provider.client")


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
        timeout: tuple[float, float] = (5, 30),
        max_attempts: int = 5,
        max_wait_s: float = 30,
        initial_wait_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not token:
            raise ConfigError("the provider token is empty")
        self._base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._session = session or requests.Session()
        self._timeout = timeout
        self._max_attempts = max(1, max_attempts)
        self._max_wait_s = max_wait_s
        self._backoff = wait_random_exponential(multiplier=initial_wait_s, max=max_wait_s)
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"ProviderClient({self._base_url!r})"  # never the token

    def list_files(self, date: str) -> ListingResult:
        """The day's listing: parsed files and the files refused with their reasons."""
        validate_date(date)
        return parse_listing(self._get_json("/v1/files", date, f"no listing for {date}"), date)

    def get_file(self, entity: str, date: str) -> FileDescriptor:
        """One file's descriptor with a freshly signed URL."""
        validate_entity(entity)
        validate_date(date)
        payload = self._get_json(f"/v1/files/{entity}", date, f"no file {entity!r} for {date}")
        return parse_descriptor(payload, date, expected_entity=entity)

    def _get_json(self, path: str, date: str, not_found: str) -> object:
        retrying = Retrying(
            stop=stop_after_attempt(self._max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_Retryable),
            before_sleep=self._log_retry,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            body: bytes = retrying(self._attempt, path, date, not_found)
        except _Retryable as exc:
            raise ProviderUnavailableError(
                f"provider unavailable for {path}: {exc} after {self._max_attempts} attempts",
                attempts=self._max_attempts,
                status_code=exc.status_code,
                reason=f"GET {path}: {exc}",
            ) from exc
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise MalformedResponseError(
                f"the provider answered {path} with invalid JSON ({len(body)} bytes)"
            ) from None

    def _attempt(self, path: str, date: str, not_found: str) -> bytes:
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
        except _TRANSPORT_ERRORS as exc:
            _log().info("provider.request", path=path, date=date, error=type(exc).__name__)
            raise _Retryable(type(exc).__name__) from exc
        elapsed_ms = round((time.monotonic() - started) * 1000)
        _log().info(
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
        _log().warning(
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
        raise _Retryable("HTTP 429", status, _retry_after_s(response.headers.get("Retry-After")))
    if status >= 500:
        raise _Retryable(f"HTTP {status}", status)
    raise ProviderRequestError(
        f"the provider refused {path} with HTTP {status}", status_code=status
    )


def _retry_after_s(header: str | None) -> float | None:
    # Only the delay-seconds form; an HTTP-date falls back to our own backoff.
    try:
        return max(0.0, float(header)) if header is not None else None
    except ValueError:
        return None


def token_from_settings(settings: Settings, clients: AwsClients) -> str:
    """The bearer token: from the local setting, else from the Secrets Manager secret."""
    if settings.provider_token:
        return settings.provider_token
    secret_id = settings.provider_token_secret_id
    if not secret_id:
        raise ConfigError(
            f"set {ENV_PROVIDER_TOKEN_SECRET} (on AWS) or {ENV_PROVIDER_TOKEN} (local)"
        )
    try:
        secret = clients.secretsmanager.get_secret_value(SecretId=secret_id)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
        raise ConfigError(f"secret {secret_id!r} does not exist or has no value yet") from exc
    token = (secret.get("SecretString") or "").strip()
    if not token:
        raise ConfigError(f"secret {secret_id!r} holds no provider token")
    return token

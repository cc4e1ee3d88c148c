"""The provider client's errors: one base; transient and permanent faults are different types.

`ProviderUnavailableError` is transient (retrying later may help: the provider is down, slow or
throttling us); `ProviderRefusedError` and its subclasses are permanent (the provider answered,
and asking again will not change the answer). Callers choose by type, never by message.
Messages never contain the bearer token or a presigned URL.
"""

from __future__ import annotations


class ProviderError(Exception):
    """Base of every error raised by the provider package."""


class ProviderUnavailableError(ProviderError):
    """Transient: 5xx, 429, timeouts or connection errors, after the client's retries ran out.

    `reason` is the short cause of the last attempt, e.g. "GET /v1/files: HTTP 503".
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        status_code: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status_code = status_code
        self.reason = reason or message


class ProviderRefusedError(ProviderError):
    """Permanent: the provider answered, and its answer will not change by asking again."""


class ProviderAuthError(ProviderRefusedError):
    """Permanent: the provider refused our bearer token (HTTP 401 or 403)."""

    def __init__(self, status_code: int) -> None:
        super().__init__(
            f"the provider refused the bearer token (HTTP {status_code}): the configured"
            " provider token is wrong, expired or lacks access"
        )
        self.status_code = status_code


class ProviderNotFoundError(ProviderRefusedError):
    """Permanent: the provider has no such file (or no listing) for the date (HTTP 404)."""


class ProviderRequestError(ProviderRefusedError):
    """Permanent: the provider refused the request with a 4xx other than 401/403/404/429."""

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class MalformedResponseError(ProviderRefusedError):
    """Permanent: the response is not valid JSON or breaks the contract; the message names the field."""

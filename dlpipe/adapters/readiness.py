"""The pre-run checks' probes (dlpipe/services/orchestrator/preflight.py) on AWS and the
provider: one call each, its fault classified here, at the edge, in the domain's terms.

A fault that may pass (aws_errors.is_transient: throttling, a 5xx, a timeout, a reset
connection; but not a refused connection, which at start is a wrong endpoint or an emulator
that is not running) is DependencyUnavailableError: the check waits it out. Within
`outages_waited_by_caller` (`dlpipe run`'s start, dlpipe/cli/run_wait.py, which waits it out
on the AWS outage budget and says so) it is NotReadyError at once instead, caused by the
DependencyUnavailableError, so the checks' own short wait is not spent first. Anything else
(a queue or table missing, access denied, an endpoint that is not a URL) is NotReadyError
naming what is wrong, at once. botocore's NoCredentialsError and a ConfigError propagate as
they are: the CLI names each in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import NoReturn

import requests
from botocore.exceptions import (
    ClientError,
    ConnectionError,
    EndpointConnectionError,
    HTTPClientError,
)

from dlpipe.adapters.aws_errors import is_transient
from dlpipe.adapters.provider_client import PROVIDER_TIMEOUT_S, ProviderClient
from dlpipe.config import ENV_PROVIDER_URL, ConfigError
from dlpipe.domain.errors import DependencyUnavailableError, NotReadyError

_MISSING_QUEUE_CODES = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


# Set while the caller waits a passing fault out itself (outages_waited_by_caller).
_CALLER_WAITS: ContextVar[bool] = ContextVar("dlpipe_probe_caller_waits", default=False)


def _passing(exc: BaseException) -> bool:
    return is_transient(exc) and not isinstance(exc, EndpointConnectionError)


@contextmanager
def outages_waited_by_caller() -> Iterator[None]:
    """While open (in this thread or task), an AwsProbe's passing fault is NotReadyError at
    once, its cause the DependencyUnavailableError naming the service: for a caller that
    waits the outage out on its own budget and says so, rather than the pre-run checks'
    silent TRANSIENT_WAIT_S (dlpipe/services/orchestrator/preflight.py) first."""
    token = _CALLER_WAITS.set(True)
    try:
        yield
    finally:
        _CALLER_WAITS.reset(token)


def waited_at_start(exc: DependencyUnavailableError) -> bool:
    """Whether a start waits `exc` out: not when it is a refused connection (nothing listens
    at the endpoint: at start, a wrong endpoint or an emulator not running), which the probes
    refuse at once too. A reset or timed-out connection, throttling or a 5xx may pass."""
    return not isinstance(exc.__cause__, EndpointConnectionError)


@dataclass(frozen=True)
class AwsProbe:
    """One AWS call that shows a dependency answers (the client built with PROBE_CONFIG)."""

    service: str
    endpoint: str  # for the message: the configured endpoint, or "AWS (<region>)"
    what: str  # e.g. "the download queue"
    call: Callable[[], object]

    def check(self) -> None:
        """Return if the call succeeds; else DependencyUnavailableError or NotReadyError."""
        try:
            self.call()
        except ConfigError:
            raise
        except ValueError as exc:  # botocore: "Invalid endpoint: ..."
            raise NotReadyError(f"{self.service}: {exc}") from exc
        except (ConnectionError, HTTPClientError) as exc:
            self._refuse(
                exc,
                f"cannot reach {self.service} at {self.endpoint} ({type(exc).__name__}): is the"
                " emulator running (`dlpipe local up`), or AWS_ENDPOINT_URL right?",
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code == "ResourceNotFoundException" or code in _MISSING_QUEUE_CODES:
                raise NotReadyError(f"{self.what} does not exist at {self.endpoint}") from exc
            cause = f"{code}: {error.get('Message')}"
            if _passing(exc):
                self._unavailable(
                    exc,
                    f"{self.service} at {self.endpoint} kept failing the check of {self.what}:"
                    f" {cause}",
                )
            raise NotReadyError(
                f"{self.service} at {self.endpoint} refused the check of {self.what}: {cause}"
            ) from exc

    def _refuse(self, exc: BaseException, message: str) -> NoReturn:
        if _passing(exc):
            self._unavailable(exc, message)
        raise NotReadyError(message) from exc

    def _unavailable(self, exc: BaseException, message: str) -> NoReturn:
        """DependencyUnavailableError, or NotReadyError caused by it for a caller that waits."""
        if not _CALLER_WAITS.get():
            raise DependencyUnavailableError(message, dependency=self.service) from exc
        unavailable = DependencyUnavailableError(message, dependency=self.service)
        unavailable.__cause__ = exc
        raise NotReadyError(message) from unavailable


@dataclass(frozen=True)
class ProviderProbe:
    """The provider's listing of a day, opened once with one attempt and closed unread, with
    the listing's own deadlines: a provider slow to start a fresh date's listing passes the
    check as it would pass the listing (a shorter read timeout reported it down)."""

    base_url: str
    token: Callable[[], str]  # read when the check runs: after the token's own probe passed
    allow_http: bool = False
    allow_private: bool = False

    def check_listing(self, date: str) -> None:
        """Return if the provider answers 200; ProviderError as the client raises it, or
        NotReadyError if the URL is not one requests can use."""
        client = ProviderClient(
            self.base_url,
            self.token(),
            timeout=PROVIDER_TIMEOUT_S,
            max_attempts=1,
            allow_http=self.allow_http,
            allow_private=self.allow_private,
        )
        try:
            client.check_listing(date)
        except requests.RequestException as exc:  # not a URL requests can use
            raise NotReadyError(f"{ENV_PROVIDER_URL}={self.base_url!r}: {exc}") from exc

"""Before a run starts: is everything the poller needs configured, and does it answer?

Without this check a run with no provider URL, or with the emulator down, spends minutes in
step retries (each with a traceback in the SDK's log) before it says anything. Here each
fault is one NotReadyError (or ConfigError) naming what is wrong, within seconds: the probes
(built by dlpipe.bootstrap.orchestrator) make each AWS call with two attempts and 2 s to
connect, and send the provider one request.

A misconfiguration (a queue or table missing, access denied, no credentials, an endpoint
that refuses connections or is not a URL) is refused at once. A fault that may pass (the
probe's DependencyUnavailableError: SQS or DynamoDB throttling, a 5xx, a timeout) is tried
again with jittered backoff for up to TRANSIENT_WAIT_S, all checks together, before the run
is refused: one 500 at the start of a run is not a reason to skip the day.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tenacity import Retrying, retry_if_exception_type, stop_before_delay, wait_random_exponential

from dlpipe.config import (
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_TOKEN_SECRET,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ConfigError,
    Settings,
    check_provider_url,
)
from dlpipe.domain.errors import DependencyUnavailableError, NotReadyError
from dlpipe.domain.provider_errors import (
    ProviderAuthError,
    ProviderRefusedError,
    ProviderUnavailableError,
)
from dlpipe.services.orchestrator.preflight_ports import ListingProbe, ReadinessProbe

TRANSIENT_WAIT_S = 30.0  # how long the checks together wait out throttling, 5xx, timeouts


def required_settings(settings: Settings) -> tuple[str, str]:
    """The provider's URL (checked) and the download queue's URL; ConfigError if either is
    missing, before anything is asked."""
    provider_url = _required(settings.provider_base_url, ENV_PROVIDER_URL, "the provider's URL")
    check_provider_url(provider_url, allow_http=settings.allow_http_urls)
    queue_url = _required(settings.queue_url, ENV_QUEUE_URL, "the download queue's URL")
    return provider_url, queue_url


def check_probes(
    probes: Sequence[ReadinessProbe], provider: ListingProbe, base_url: str, date: str
) -> None:
    """Raise NotReadyError unless every probe, then the provider's listing of `date`, answers."""
    deadline_s = time.monotonic() + TRANSIENT_WAIT_S
    for probe in probes:
        try:
            _waiting(probe.check, deadline_s)
        except DependencyUnavailableError as exc:
            raise NotReadyError(f"{exc} (still failing after {TRANSIENT_WAIT_S:.0f} s)") from exc
    _check_provider(provider, base_url, date)


def _required(value: str | None, variable: str, what: str) -> str:
    if not value:
        raise ConfigError(f"{variable} is not set ({what})")
    return value


def _waiting(call: Callable[[], None], deadline_s: float) -> None:
    """`call`, tried again with jittered backoff on a passing fault until `deadline_s`."""
    retrying = Retrying(
        retry=retry_if_exception_type(DependencyUnavailableError),
        wait=wait_random_exponential(multiplier=0.5, max=5),
        stop=stop_before_delay(max(0.0, deadline_s - time.monotonic())),
        reraise=True,
    )
    retrying(call)


def _check_provider(provider: ListingProbe, base_url: str, date: str) -> None:
    try:
        provider.check_listing(date)
    except ProviderUnavailableError as exc:
        raise NotReadyError(f"cannot reach the provider at {base_url} ({exc.reason})") from exc
    except ProviderAuthError as exc:
        raise NotReadyError(
            f"the provider at {base_url} refused the token (HTTP {exc.status_code}): check"
            f" {ENV_PROVIDER_TOKEN} or {ENV_PROVIDER_TOKEN_SECRET}"
        ) from exc
    except ProviderRefusedError as exc:
        raise NotReadyError(
            f"the provider at {base_url} refused the listing of {date}: {exc}"
        ) from exc

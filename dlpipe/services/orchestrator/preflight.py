"""Before a run starts: is everything the poller needs configured, and does it answer?

Without this check a run with no provider URL, or with the emulator down, spends minutes in
step retries (each with a traceback in the SDK's log) before it says anything. Here each
fault is one NotReadyError (or ConfigError) naming what is wrong, within seconds: the AWS
calls use PROBE_CONFIG (two attempts, 2 s to connect) and the provider gets one request.

A misconfiguration (a queue or table missing, access denied, no credentials, an endpoint
that refuses connections or is not a URL) is refused at once. A fault that may pass (SQS or
DynamoDB throttling, a 5xx, a timeout: aws_errors.is_transient) is tried again with jittered
backoff for up to TRANSIENT_WAIT_S, all checks together, before the run is refused: one 500
at the start of a run is not a reason to skip the day.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import requests
from botocore.exceptions import (
    ClientError,
    ConnectionError,
    EndpointConnectionError,
    HTTPClientError,
)
from tenacity import Retrying, retry_if_exception, stop_before_delay, wait_random_exponential

from dlpipe.adapters.aws import PROBE_CONFIG, AwsClients
from dlpipe.adapters.aws_errors import is_transient
from dlpipe.adapters.provider_client import ProviderClient, token_from_settings
from dlpipe.config import (
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_TOKEN_SECRET,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ConfigError,
    Settings,
    check_provider_url,
)
from dlpipe.domain.provider_errors import (
    ProviderAuthError,
    ProviderRefusedError,
    ProviderUnavailableError,
)

_T = TypeVar("_T")
_PROVIDER_TIMEOUT_S = (3.0, 5.0)  # connect, read (to the listing's headers)
_MISSING_QUEUE_CODES = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
TRANSIENT_WAIT_S = 30.0  # how long the checks together wait out throttling, 5xx, timeouts


class NotReadyError(RuntimeError):
    """A run cannot start: the one-line message says what is missing or does not answer."""


def check_ready(settings: Settings, date: str) -> None:
    """Raise ConfigError or NotReadyError unless the tables, the queue and the provider answer
    for `date`; botocore's NoCredentialsError propagates as it is."""
    provider_url = _required(settings.provider_base_url, ENV_PROVIDER_URL, "the provider's URL")
    check_provider_url(provider_url, allow_http=settings.allow_http_urls)
    queue_url = _required(settings.queue_url, ENV_QUEUE_URL, "the download queue's URL")
    clients = AwsClients(settings, config=PROBE_CONFIG)
    deadline_s = time.monotonic() + TRANSIENT_WAIT_S
    for table, key in ((settings.batches_table, "BatchID"), (settings.jobs_table, "FileID")):
        _aws(
            "dynamodb",
            settings,
            f"table {table!r}",
            lambda t=table, k=key: clients.dynamodb.get_item(  # type: ignore[misc]
                TableName=t, Key={k: {"S": "dlpipe-preflight"}}
            ),
            deadline_s,
        )
    _aws(
        "sqs",
        settings,
        "the download queue",
        lambda: clients.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"]),
        deadline_s,
    )
    token = _aws(
        "secretsmanager",
        settings,
        "the provider token",
        lambda: token_from_settings(settings, clients),
        deadline_s,
    )
    _check_provider(provider_url, token, date, allow_http=settings.allow_http_urls)


def _required(value: str | None, variable: str, what: str) -> str:
    if not value:
        raise ConfigError(f"{variable} is not set ({what})")
    return value


def _passing(exc: BaseException) -> bool:
    """A fault worth waiting for at start: transient, but not a refused connection (at start,
    that is an endpoint that is wrong or an emulator that is not running)."""
    return is_transient(exc) and not isinstance(exc, EndpointConnectionError)


def _waiting(call: Callable[[], _T], deadline_s: float) -> _T:
    """`call`, tried again with jittered backoff on a passing fault until `deadline_s`."""
    retrying = Retrying(
        retry=retry_if_exception(_passing),
        wait=wait_random_exponential(multiplier=0.5, max=5),
        stop=stop_before_delay(max(0.0, deadline_s - time.monotonic())),
        reraise=True,
    )
    return retrying(call)


def _aws(
    service: str, settings: Settings, what: str, call: Callable[[], _T], deadline_s: float
) -> _T:
    endpoint = settings.endpoint_for(service) or f"AWS ({settings.region})"
    try:
        return _waiting(call, deadline_s)
    except ConfigError:
        raise
    except ValueError as exc:  # botocore: "Invalid endpoint: ..."
        raise NotReadyError(f"{service}: {exc}") from exc
    except (ConnectionError, HTTPClientError) as exc:
        raise NotReadyError(
            f"cannot reach {service} at {endpoint} ({type(exc).__name__}): is the emulator"
            " running (`dlpipe local up`), or AWS_ENDPOINT_URL right?"
        ) from exc
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        if code == "ResourceNotFoundException" or code in _MISSING_QUEUE_CODES:
            raise NotReadyError(f"{what} does not exist at {endpoint}") from exc
        if _passing(exc):
            raise NotReadyError(
                f"{service} at {endpoint} kept failing the check of {what} for"
                f" {TRANSIENT_WAIT_S:.0f} s: {code}: {error.get('Message')}"
            ) from exc
        raise NotReadyError(
            f"{service} at {endpoint} refused the check of {what}: {code}: {error.get('Message')}"
        ) from exc


def _check_provider(base_url: str, token: str, date: str, *, allow_http: bool) -> None:
    client = ProviderClient(
        base_url, token, timeout=_PROVIDER_TIMEOUT_S, max_attempts=1, allow_http=allow_http
    )
    try:
        client.check_listing(date)
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
    except requests.RequestException as exc:  # not a URL requests can use
        raise NotReadyError(f"{ENV_PROVIDER_URL}={base_url!r}: {exc}") from exc

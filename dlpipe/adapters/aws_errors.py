"""AWS errors at the adapter edge: a ClientError or BotoCoreError becomes one typed line.

Credentials, region and an unreachable endpoint are left as botocore raised them: the CLI
already names each in one line (dlpipe/cli/main.py). Everything else becomes AwsRequestError,
naming the service, the operation and AWS's error code; a URL's query string (where a
signature would be) never reaches the message.

Transient or not is decided here alone (`is_transient`): throttling, 5xx, timeouts and
connection errors are an outage that may pass (DependencyUnavailableError, for the callers
that wait one out); anything else (a missing queue or table, access denied) will not pass by
itself. Services look at the error's type, never at its text.
"""

from __future__ import annotations

from typing import NoReturn

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError
from dlpipe.domain.text import one_line

_RENDERED_BY_CLI = (
    NoCredentialsError,
    PartialCredentialsError,
    NoRegionError,
    EndpointConnectionError,
)
# Error codes that mean "busy or broken for now" whatever the HTTP status (some throttling
# answers are 400s), across DynamoDB, SQS and SSM.
TRANSIENT_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "RequestThrottled",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "InternalServerError",
        "InternalFailure",
        "InternalError",
        "ServiceUnavailable",
        "TransactionConflictException",
        "AWS.SimpleQueueService.ServiceUnavailable",
    }
)


def is_transient(exc: BaseException) -> bool:
    """True if `exc` is an outage that may pass: throttling, 5xx, a timeout, a lost connection."""
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code") or "")
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return code in TRANSIENT_CODES or status >= 500 or status == 429
    return isinstance(exc, BotoConnectionError | HTTPClientError)


def raise_aws_error(
    exc: ClientError | BotoCoreError, service: str, operation: str, resource: str | None
) -> NoReturn:
    """Raise `exc` as DependencyUnavailableError if it is transient, else as raise_request_error."""
    if is_transient(exc):
        raise DependencyUnavailableError(
            f"{service} {operation}: {_cause(exc)}", dependency=service
        ) from exc
    raise_request_error(exc, service, operation, resource)


def _cause(exc: ClientError | BotoCoreError) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return one_line(f"{error.get('Code') or 'Unknown'}: {error.get('Message') or ''}", 200)
    return one_line(f"{type(exc).__name__}: {exc}", 200)


def raise_request_error(
    exc: ClientError | BotoCoreError, service: str, operation: str, resource: str | None
) -> NoReturn:
    """Raise `exc` as AwsRequestError (or as it is, when the CLI already renders it)."""
    if isinstance(exc, _RENDERED_BY_CLI):
        raise exc
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        raise AwsRequestError(
            service,
            exc.operation_name or operation,
            str(error.get("Code") or "Unknown"),
            one_line(str(error.get("Message") or "")),
            resource=resource,
        ) from exc
    raise AwsRequestError(
        service, operation, type(exc).__name__, one_line(str(exc)), resource=resource
    ) from exc


def queue_name(url: str) -> str:
    """A queue's name, from its URL (the CLI names the queue, not the endpoint)."""
    return url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]

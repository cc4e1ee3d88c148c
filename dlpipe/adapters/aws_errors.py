"""AWS errors at the adapter edge: a ClientError or BotoCoreError becomes one typed line.

Credentials, region and an unreachable endpoint are left as botocore raised them: the CLI
already names each in one line (dlpipe/cli/main.py). Everything else becomes AwsRequestError,
naming the service, the operation and AWS's error code; a URL's query string (where a
signature would be) never reaches the message.
"""

from __future__ import annotations

import re
from typing import NoReturn

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from dlpipe.domain.errors import AwsRequestError

_RENDERED_BY_CLI = (
    NoCredentialsError,
    PartialCredentialsError,
    NoRegionError,
    EndpointConnectionError,
)
_QUERY = re.compile(r"(https?://[^\s?\"'<>]*)\?[^\s\"'<>]*")


def one_line(text: str, limit: int = 300) -> str:
    """The first line of `text`, cut short, with any URL's query string removed."""
    lines = str(text).strip().splitlines()
    return _QUERY.sub(r"\1", lines[0] if lines else "")[:limit] or "no reason given"


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

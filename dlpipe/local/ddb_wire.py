"""The throughput proxy's wire: DynamoDB's answers to a throttled request, the request as the
operations see it, the per-item locks, and what the operations ask of the proxy (`Backend`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from dlpipe.local.ddb_capacity import TableShape
from dlpipe.local.ddb_limits import PartitionMeter, Refusal

ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
# The messages botocore's service model (dynamodb 2012-08-10, TransactionCanceledException)
# gives for throttled writes on an on-demand table or GSI; both tables here are on-demand.
_TABLE_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically"
    " scaling your table or index so please try again shortly. If exceptions persist, check if"
    " you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
    "bp-partition-key-design.html."
)
_INDEX_MESSAGE = (
    "Throughput exceeds the current capacity for one or more global secondary indexes."
    " DynamoDB is automatically scaling your index so please try again shortly."
)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer to the client."""

    status: int
    body: bytes
    content_type: str = "application/x-amz-json-1.0"


def json_answer(status: int, payload: Mapping[str, Any]) -> Answer:
    return Answer(status, json.dumps(payload).encode())


def throttled(refusal: Refusal) -> Answer:
    """DynamoDB's answer to a request over a partition's limit: HTTP 400,
    ProvisionedThroughputExceededException with its ThrottlingReasons (botocore's service
    model; the developer guide's "throttling-key-range-limit-exceeded-mitigation.html" and
    "gsi-throttling.html": a table write refused for its GSI names the index's ARN).
    botocore's standard and legacy retry handlers both retry that code as throttling."""
    message = _INDEX_MESSAGE if refusal.resource.is_index else _TABLE_MESSAGE
    return json_answer(
        400,
        {
            "__type": f"{ERROR_PREFIX}ProvisionedThroughputExceededException",
            "message": message,
            "ThrottlingReasons": [{"reason": refusal.reason, "resource": refusal.resource.arn}],
        },
    )


def cancelled(reasons: list[Refusal | None]) -> Answer:
    """A transaction refused for throughput: TransactionCanceledException, one reason per
    action in order, `ThrottlingError` where one was throttled (service model's documentation
    of TransactionCanceledException)."""
    listed = [
        {"Code": "None"}
        if r is None
        else {
            "Code": "ThrottlingError",
            "Message": _INDEX_MESSAGE if r.resource.is_index else _TABLE_MESSAGE,
        }
        for r in reasons
    ]
    codes = ", ".join(str(r["Code"]) for r in listed)
    return json_answer(
        400,
        {
            "__type": f"{ERROR_PREFIX}TransactionCanceledException",
            "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
            "CancellationReasons": listed,
        },
    )


class ItemLocks:
    """Striped locks: the writes of one item run one at a time inside the proxy."""

    def __init__(self, stripes: int = 128) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]

    @contextmanager
    def holding(self, keys: Iterable[str]) -> Iterator[None]:
        held = [self._locks[i] for i in sorted({hash(k) % len(self._locks) for k in keys})]
        for lock in held:
            lock.acquire()
        try:
            yield
        finally:
            for lock in reversed(held):
                lock.release()


@dataclass(frozen=True)
class Call:
    """One client request: its headers, raw body and parsed body."""

    headers: Mapping[str, str]
    body: bytes
    request: dict[str, Any]

    def with_request(self, request: dict[str, Any]) -> Call:
        return Call(self.headers, json.dumps(request).encode(), request)


def error_type(data: bytes) -> str:
    """The `__type` of DynamoDB's error body, without its namespace ("" if none)."""
    try:
        return str(json.loads(data).get("__type", "")).rpartition("#")[2]
    except (ValueError, AttributeError):
        return ""


class PassThrough(Exception):
    """DynamoDB Local refused the proxy's own read for a request (an unknown table, a bad
    key): the request goes to DynamoDB Local as sent, which answers it with its own error."""


class Backend(Protocol):
    """What an operation asks of the proxy."""

    meter: PartitionMeter
    locks: ItemLocks

    def forward(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]: ...

    def shape(self, table: str) -> TableShape: ...

    def current(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None: ...

    def direct_query(self, request: dict[str, Any]) -> list[dict[str, Any]]: ...

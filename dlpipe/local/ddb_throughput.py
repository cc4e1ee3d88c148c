"""A local DynamoDB as strict as AWS on throughput: an HTTP proxy in front of DynamoDB Local.

DynamoDB Local never throttles. This proxy, on 127.0.0.1, forwards DynamoDB's JSON protocol
to it and charges every write and read to the partition key values it touches, per table and
per global secondary index, by DynamoDB's rules (`ddb_capacity.py`), against per-partition
token buckets (`ddb_limits.py`). A request over a partition's limit is answered as DynamoDB
answers it, so botocore raises the same exception and its retry handler backs off the same way.
Opt in with DLPIPE_LOCAL_PARTITION_WCU / _RCU (`LocalAws` starts it, and the stack's
DynamoDB endpoint is then the proxy's); GET /_dlpipe/heat gives the counts, DELETE resets them.

It is a test layer, not a copy of DynamoDB's engine: to know what a write changed it reads the
item (GetItem, ConsistentRead, straight from DynamoDB Local, not charged) before and after
forwarding the write, and serializes the writes of one item inside the proxy so that the two
images belong to that write. Key schemas, projections and ARNs come from DescribeTable.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import boto3
import urllib3
from botocore.config import Config
from botocore.exceptions import ClientError

from dlpipe.local.ddb_capacity import TableShape, shape_from_description
from dlpipe.local.ddb_limits import PartitionHeat, PartitionMeter, ThroughputLimits
from dlpipe.local.ddb_reads import batch_get, get_item, query
from dlpipe.local.ddb_wire import (
    ERROR_PREFIX,
    Answer,
    Backend,
    Call,
    ItemLocks,
    PassThrough,
    json_answer,
)
from dlpipe.local.ddb_writes import batch_write, single_write, transact_write

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

HEAT_PATH = "/_dlpipe/heat"
_TARGET_PREFIX = "DynamoDB_20120810."
_TABLE_CHANGES = {"CreateTable", "DeleteTable", "UpdateTable"}


class ThroughputProxy:
    """The proxy server; `heat()` and `reset()` are its in-process accessors."""

    def __init__(
        self,
        target_url: str,
        limits: ThroughputLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.target_url = target_url.rstrip("/")
        self.meter = PartitionMeter(limits, clock)
        self._host, self._port = host, port
        self._http = urllib3.PoolManager(maxsize=64, retries=False)
        self._direct: DynamoDBClient = boto3.client(
            "dynamodb",
            endpoint_url=self.target_url,
            region_name="us-east-1",
            aws_access_key_id="testing",  # DynamoDB Local (-sharedDb) accepts any key
            aws_secret_access_key="testing",  # noqa: S106 - DynamoDB Local's dummy credentials
            config=Config(retries={"mode": "standard", "max_attempts": 3}),
        )
        self._shapes: dict[str, TableShape] = {}
        self._shapes_lock = threading.Lock()
        self.locks = ItemLocks()
        self._sent = threading.local()  # whether this request thread has forwarded its request
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle and accessors

    @property
    def endpoint_url(self) -> str:
        """http://127.0.0.1:port of the running proxy."""
        if self._server is None:
            raise RuntimeError("the throughput proxy is not running")
        return f"http://{self._host}:{self._server.server_address[1]}"

    def start(self) -> ThroughputProxy:
        """Serve on a thread of this process until stop()."""
        self._server = ThreadingHTTPServer((self._host, self._port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ddb-throughput-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._http.clear()

    def heat(self) -> list[PartitionHeat]:
        """Every partition key value's WCU, RCU and refusals so far, hottest first."""
        return self.meter.heat()

    def reset(self) -> None:
        """Forget the counts and refill the buckets."""
        self.meter.reset()

    # -- DynamoDB Local, straight

    def forward(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """Send one request to DynamoDB Local as the client sent it; (status, body)."""
        keep = {k: v for k, v in headers.items() if k not in ("host", "content-length")}
        self._sent.forwarded = True
        reply = self._http.request(
            "POST", self.target_url + "/", body=body, headers=keep, timeout=60.0
        )
        return reply.status, reply.data

    def shape(self, table: str) -> TableShape:
        """The table's keys and indexes, from DescribeTable (cached until a table changes)."""
        with self._shapes_lock:
            cached = self._shapes.get(table)
        if cached is not None:
            return cached
        try:
            described = self._direct.describe_table(TableName=table)["Table"]
        except ClientError as exc:
            raise PassThrough(table) from exc
        shape = shape_from_description(described)
        with self._shapes_lock:
            self._shapes[table] = shape
        return shape

    def forget_shapes(self) -> None:
        with self._shapes_lock:
            self._shapes.clear()

    def current(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored item (ConsistentRead), uncharged: the image before or after a write."""
        try:
            found = self._direct.get_item(TableName=table, Key=dict(key), ConsistentRead=True)
        except ClientError as exc:
            raise PassThrough(table) from exc
        item = found.get("Item")
        return dict(item) if item is not None else None

    def direct_query(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """A Query's page as read, before any projection or filter: what it is charged on."""
        items = self._direct.query(**request).get("Items", [])
        return [dict(i) for i in items]

    # -- one request

    def handle(self, headers: Mapping[str, str], body: bytes) -> Answer:
        """Charge, limit and forward one DynamoDB request."""
        target = headers.get("x-amz-target", "")
        operation = target.removeprefix(_TARGET_PREFIX)
        handler = _OPERATIONS.get(operation)
        if handler is None:
            status, data = self.forward(headers, body)
            if operation in _TABLE_CHANGES:
                self.forget_shapes()
            return Answer(status, data)
        try:
            request = json.loads(body)
        except ValueError:
            status, data = self.forward(headers, body)
            return Answer(status, data)
        self._sent.forwarded = False
        try:
            return handler(self, Call(headers, body, request))
        except PassThrough:
            if self._sent.forwarded:  # never send a write twice
                raise
            status, data = self.forward(headers, body)
            return Answer(status, data)


_OPERATIONS: dict[str, Callable[[Backend, Call], Answer]] = {
    "PutItem": single_write("Put"),
    "UpdateItem": single_write("Update"),
    "DeleteItem": single_write("Delete"),
    "BatchWriteItem": batch_write,
    "TransactWriteItems": transact_write,
    "GetItem": get_item,
    "BatchGetItem": batch_get,
    "Query": query,
}


def _handler_for(proxy: ThroughputProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # botocore keeps connections alive
        # The headers and the body are written apart: without TCP_NODELAY the body waited for
        # the client's delayed ACK, about 40 ms a call.
        disable_nagle_algorithm = True

        def _send(self, answer: Answer) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            # botocore checks DynamoDB's CRC32 of the body, when given: give the right one.
            self.send_header("x-amz-crc32", str(zlib.crc32(answer.body) & 0xFFFFFFFF))
            self.end_headers()
            self.wfile.write(answer.body)

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _heat_path(self) -> bool:
            if self.path.rstrip("/") == HEAT_PATH:
                return True
            wanted = f"POST / (DynamoDB), GET or DELETE {HEAT_PATH}"
            self._send(json_answer(404, {"message": f"the throughput proxy serves {wanted}"}))
            return False

        def do_GET(self) -> None:
            if self._heat_path():
                rows = [row.as_dict() for row in proxy.heat()]
                self._send(json_answer(200, {"partitions": rows}))

        def do_DELETE(self) -> None:
            if self._heat_path():
                proxy.reset()
                self._send(json_answer(200, {"partitions": []}))

        def do_POST(self) -> None:
            body = self._body()
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                answer = proxy.handle(headers, body)
            except Exception as exc:  # noqa: BLE001 - the client gets DynamoDB's 500, one line
                answer = json_answer(
                    500,
                    {
                        "__type": f"{ERROR_PREFIX}InternalServerError",
                        "message": f"dlpipe throughput proxy: {exc}",
                    },
                )
            self._send(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler

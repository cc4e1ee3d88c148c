"""Requests and capacity units as AWS bills them, counted from botocore event hooks.

Item sizes follow DynamoDB's rules: per attribute, the UTF-8 length of its name plus its
value (strings: UTF-8 bytes; numbers: 1 byte per two significant digits + 1; binary: bytes;
sets: the sum of their members; lists and maps: 3 bytes + 1 per element + the elements).
Capacity (on-demand request units, which bill the same units as provisioned capacity):
- GetItem: ceil(size / 4 KB), halved for eventually consistent reads (minimum 0.5 / 1).
- BatchGetItem: each item as its own GetItem (rounded up per item).
- Query: the page's total item size rounded up to 4 KB, halved (GSIs are eventually consistent).
- PutItem / UpdateItem: ceil(max(size before, size after) / 1 KB), minimum 1; a write whose
  condition fails still bills the item's size.
- GSI writes (every index here projects ALL, so an index entry is the whole item): a write
  that adds the item to an index costs its new size, one that changes an index key costs a
  delete (old size) plus a put (new size), one that changes any other attribute costs one
  write of the new size, one that changes nothing in the item costs nothing.
The size before a write comes from a shadow copy of each item kept from what the clients
wrote and read (PutItem's Item, UpdateItem's ALL_NEW attributes, reads' items).
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

KB = 1024
READ_UNIT = 4 * KB
WRITE_UNIT = KB
PHASE: contextvars.ContextVar[str] = contextvars.ContextVar("bench_phase", default="worker")


def number_size(text: str) -> int:
    """Bytes DynamoDB counts for a number: 1 per two significant digits, plus 1."""
    digits = format(Decimal(text).normalize(), "f").lstrip("-").replace(".", "").strip("0")
    return math.ceil(max(len(digits), 1) / 2) + 1


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one AttributeValue ({"S": ...}, {"N": ...}, ...)."""
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "N":
        return number_size(data)
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in data)
    if kind == "NS":
        return sum(number_size(n) for n in data)
    if kind == "BS":
        return sum(len(b) for b in data)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in data.items())
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: dict[str, Any] | None) -> int:
    """Bytes of a whole item: every attribute's name plus its value."""
    return sum(len(name.encode()) + value_size(v) for name, v in (item or {}).items())


def attribute_sizes(item: dict[str, Any]) -> dict[str, int]:
    """Per attribute, name + value bytes, largest first."""
    sizes = {name: len(name.encode()) + value_size(v) for name, v in item.items()}
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


def read_units(size: int, consistent: bool) -> float:
    """RCU of reading `size` bytes in one unit of billing."""
    units = max(1, math.ceil(size / READ_UNIT))
    return units if consistent else units / 2


def write_units(size: int) -> int:
    """WCU of writing an item of `size` bytes."""
    return max(1, math.ceil(size / WRITE_UNIT))


@dataclass
class Tally:
    """Requests by (phase, service, operation, table), capacity by (phase, table, kind)."""

    requests: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    capacity: defaultdict[tuple[str, str, str], float] = field(
        default_factory=lambda: defaultdict(float)
    )
    # (service, operation) -> seconds spent in calls (before-call to after-call), and errors
    seconds: defaultdict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    errors: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    meter_errors: list[str] = field(default_factory=list)
    # (phase, table) -> list of (items read, RCU) per BatchGetItem / Query call
    reads: defaultdict[tuple[str, str], list[tuple[int, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )


class CapacityMeter:
    """Counts SQS and DynamoDB requests on the clients it is attached to, and bills them."""

    def __init__(self, indexes: dict[str, dict[str, tuple[str, ...]]]) -> None:
        """`indexes`: table name -> index name -> key attribute names."""
        self._indexes = indexes
        self._keys: dict[str, tuple[str, ...]] = {}
        self._shadow: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.tally = Tally()

    def indexes(self, table: str) -> dict[str, tuple[str, ...]]:
        """The table's GSIs: index name -> key attribute names."""
        return dict(self._indexes.get(table, {}))

    def set_keys(self, table: str, key_attributes: tuple[str, ...]) -> None:
        """The table's primary key attribute names (to find an item's shadow)."""
        self._keys[table] = key_attributes

    def reset(self) -> Tally:
        """Start a new tally; return the previous one."""
        with self._lock:
            tally, self.tally = self.tally, Tally()
            return tally

    def attach(self, client: Any) -> None:
        """Count and time every call of `client`; bill it too if it is a DynamoDB client."""
        events = client.meta.events
        service = client.meta.service_model.service_id.hyphenize()
        events.register(f"before-parameter-build.{service}", self._keep_params)
        events.register(f"before-call.{service}", self._count)
        events.register(f"after-call.{service}", self._timed)
        if service == "dynamodb":
            events.register(f"after-call.{service}", self._bill)

    @staticmethod
    def _keep_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["bench_params"] = params

    def _count(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        service = model.service_model.service_id.hyphenize()
        params = context.get("bench_params", {})
        table = str(params.get("TableName") or ",".join(params.get("RequestItems", {})))
        with self._lock:
            self.tally.requests[(PHASE.get(), service, model.name, table)] += 1
        context["bench_started"] = time.perf_counter()

    def _timed(self, model: Any, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        elapsed = time.perf_counter() - context.get("bench_started", time.perf_counter())
        service = model.service_model.service_id.hyphenize()
        with self._lock:
            self.tally.seconds[(service, model.name)] += elapsed
            if http_response.status_code >= 300:
                self.tally.errors[(service, model.name, str(http_response.status_code))] += 1

    def _bill(self, model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        params = context.get("bench_params", {})
        handler = getattr(self, f"_bill_{model.name}", None)
        if handler is not None:
            with self._lock:
                try:
                    handler(PHASE.get(), params, parsed)
                except Exception as exc:  # noqa: BLE001 - a meter bug must not fail the code measured
                    self.tally.meter_errors.append(f"{model.name}: {type(exc).__name__}: {exc}")

    # ---- reads ------------------------------------------------------------------------

    def _bill_GetItem(self, phase: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        item = parsed.get("Item")
        table = params["TableName"]
        self._remember(table, item)
        rcu = read_units(item_size(item), bool(params.get("ConsistentRead")))
        self.tally.capacity[(phase, table, "RCU")] += rcu

    def _bill_BatchGetItem(
        self, phase: str, params: dict[str, Any], parsed: dict[str, Any]
    ) -> None:
        for table, items in parsed.get("Responses", {}).items():
            consistent = bool(params["RequestItems"][table].get("ConsistentRead"))
            rcu = 0.0
            for item in items:
                self._remember(table, item)
                rcu += read_units(item_size(item), consistent)
            self.tally.capacity[(phase, table, "RCU")] += rcu
            self.tally.reads[(phase, table)].append((len(items), rcu))

    def _bill_Query(self, phase: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        items = parsed.get("Items", [])
        table = params["TableName"]
        consistent = bool(params.get("ConsistentRead")) and "IndexName" not in params
        rcu = read_units(sum(item_size(i) for i in items), consistent)
        self.tally.capacity[(phase, table, "RCU")] += rcu
        self.tally.reads[(phase, table)].append((len(items), rcu))

    # ---- writes -----------------------------------------------------------------------

    def _bill_PutItem(self, phase: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        table, new = params["TableName"], params["Item"]
        failed = "Error" in parsed
        old = parsed.get("Item") if failed else self._shadow.get(self._key(table, new))
        self._write(phase, table, old, old if failed else new)

    def _bill_UpdateItem(self, phase: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        table = params["TableName"]
        key = self._key(table, params["Key"])
        if "Error" in parsed:
            old = parsed.get("Item")
            self._write(phase, table, old, old)
            return
        old, new = self._shadow.get(key), parsed.get("Attributes")
        if new is None:
            raise RuntimeError("UpdateItem without ReturnValues=ALL_NEW: cannot size the item")
        self._write(phase, table, old, new)

    def _bill_DeleteItem(self, phase: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        table = params["TableName"]
        old = self._shadow.pop(self._key(table, params["Key"]), None)
        self._write(phase, table, old, None)

    def _write(
        self,
        phase: str,
        table: str,
        old: dict[str, Any] | None,
        new: dict[str, Any] | None,
    ) -> None:
        self._trace(table, old, new)
        size = max(item_size(old), item_size(new))
        self.tally.capacity[(phase, table, "WCU")] += write_units(size)
        self.tally.capacity[(phase, table, "GSI WCU")] += self._index_writes(table, old, new)
        if new is not None:
            self._remember(table, new)

    def _index_writes(
        self, table: str, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> int:
        return index_write_units(self._indexes.get(table, {}), old, new, all_projected)

    def trace(self, table: str) -> None:
        """Keep every write of the first item written to `table` from now on (see `traced`)."""
        self._trace_table, self._trace_key, self.traced = table, None, []

    def _trace(self, table: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if table != getattr(self, "_trace_table", None) or new is None:
            return
        key = self._key(table, new)
        if self._trace_key is None:
            self._trace_key = key
        if key == self._trace_key:
            self.traced.append((old, new))

    # ---- shadow -----------------------------------------------------------------------

    def _key(self, table: str, item: dict[str, Any]) -> tuple[str, str]:
        names = self._keys.get(table, ())
        return table, "|".join(str(item.get(n)) for n in names)

    def _remember(self, table: str, item: dict[str, Any] | None) -> None:
        if item:
            self._shadow[self._key(table, item)] = item


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Label the requests made in this context (this thread) as `name`."""
    token = PHASE.set(name)
    try:
        yield
    finally:
        PHASE.reset(token)


def index_write_units(
    indexes: dict[str, tuple[str, ...]],
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    entry_size: Any,
) -> int:
    """GSI write units of one table write; `entry_size(item, keys)` sizes an index entry."""
    total = 0
    for keys in indexes.values():
        in_old = old is not None and all(k in old for k in keys)
        in_new = new is not None and all(k in new for k in keys)
        if in_old and not in_new:
            total += write_units(entry_size(old, keys))
        elif in_new and not in_old:
            total += write_units(entry_size(new, keys))
        elif in_old and in_new:
            assert old is not None
            assert new is not None
            if any(old[k] != new[k] for k in keys):
                total += write_units(entry_size(old, keys)) + write_units(entry_size(new, keys))
            elif old != new:
                total += write_units(entry_size(new, keys))
    return total


def all_projected(item: dict[str, Any] | None, _keys: tuple[str, ...]) -> int:
    """Index entry size with projection ALL: the whole item."""
    return item_size(item)


Item = dict[str, Any]


def lifecycle_units(
    writes: list[tuple[Item | None, Item]],
    indexes: dict[str, tuple[str, ...]],
    transform: Any = None,
    entry_size: Any = all_projected,
) -> tuple[int, int]:
    """(table WCU, GSI WCU) of one item's writes, after `transform(write_number, item)`."""

    def shape(n: int, item: Item | None) -> Item | None:
        return item if item is None or transform is None or n < 0 else transform(n, item)

    wcu = gsi = 0
    for n, (old, new) in enumerate(writes):
        before, after = shape(n - 1, old), shape(n, new)
        wcu += write_units(max(item_size(before), item_size(after)))
        gsi += index_write_units(indexes, before, after, entry_size)
    return wcu, gsi

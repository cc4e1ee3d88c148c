"""The throughput proxy's writes: PutItem, UpdateItem, DeleteItem, BatchWriteItem and
TransactWriteItems, each admitted on its estimated cost, forwarded, then charged what it did
cost from the item's images before and after (read under the item's lock)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dlpipe.local.ddb_capacity import (
    Charge,
    estimated_update_charges,
    item_size,
    key_of,
    scalar,
    write_charges,
    write_units,
)
from dlpipe.local.ddb_limits import Refusal
from dlpipe.local.ddb_wire import (
    Answer,
    Backend,
    Call,
    cancelled,
    error_type,
    json_answer,
    throttled,
)


@dataclass
class _Write:
    """One item write of a request: its table, kind, key, a Put's item and the image before."""

    table: str
    kind: str  # Put, Update, Delete (the request's word)
    key: dict[str, Any]
    item: dict[str, Any] | None = None  # a Put's item
    old: dict[str, Any] | None = None

    @property
    def lock_key(self) -> str:
        return self.table + json.dumps(self.key, sort_keys=True)


def _estimate(proxy: Backend, write: _Write, *, transactional: bool) -> list[Charge]:
    shape = proxy.shape(write.table)
    if write.kind == "Update":
        return estimated_update_charges(shape, write.key, write.old)
    new = write.item if write.kind == "Put" else None
    return write_charges(shape, write.key, write.old, new, transactional=transactional)


def _charge_done(proxy: Backend, writes: Iterable[_Write], *, transactional: bool) -> None:
    charges: list[Charge] = []
    for write in writes:
        new = proxy.current(write.table, write.key)
        shape = proxy.shape(write.table)
        charges += write_charges(shape, write.key, write.old, new, transactional=transactional)
    proxy.meter.charge(charges, write=True)


def _charge_refused_condition(proxy: Backend, write: _Write) -> None:
    # A write whose condition fails still costs the table the item's size, and no index.
    table = proxy.shape(write.table).table
    units = write_units(max(item_size(write.old), item_size(write.item)))
    proxy.meter.charge([Charge(table, scalar(write.key[table.hash_key]), units)], write=True)


def single_write(kind: str) -> Callable[[Backend, Call], Answer]:
    def run(proxy: Backend, call: Call) -> Answer:
        request = call.request
        table = request["TableName"]
        shape = proxy.shape(table)
        item = request.get("Item") if kind == "Put" else None
        key = key_of(shape, item) if item is not None else dict(request["Key"])
        write = _Write(table, kind, key, item)
        with proxy.locks.holding([write.lock_key]):
            write.old = proxy.current(table, key)
            refusal = proxy.meter.admit(_estimate(proxy, write, transactional=False), write=True)
            if refusal is not None:
                proxy.meter.refused(refusal)
                return throttled(refusal)
            status, data = proxy.forward(call.headers, call.body)
            if status == 200:
                _charge_done(proxy, [write], transactional=False)
            elif error_type(data) == "ConditionalCheckFailedException":
                _charge_refused_condition(proxy, write)
        return Answer(status, data)

    return run


def batch_write(proxy: Backend, call: Call) -> Answer:
    request = call.request
    writes: list[tuple[_Write, dict[str, Any]]] = []
    for table, entries in request.get("RequestItems", {}).items():
        shape = proxy.shape(table)
        for entry in entries:
            if "PutRequest" in entry:
                item = entry["PutRequest"]["Item"]
                writes.append((_Write(table, "Put", key_of(shape, item), item), entry))
            else:
                writes.append((_Write(table, "Delete", entry["DeleteRequest"]["Key"]), entry))
    with proxy.locks.holding(w.lock_key for w, _ in writes):
        admitted: list[tuple[_Write, dict[str, Any]]] = []
        unprocessed: dict[str, list[dict[str, Any]]] = {}
        first: Refusal | None = None
        for write, entry in writes:
            write.old = proxy.current(write.table, write.key)
            refusal = proxy.meter.admit(_estimate(proxy, write, transactional=False), write=True)
            if refusal is None:
                admitted.append((write, entry))
                continue
            # BatchWriteItem returns a throttled item in UnprocessedItems; only when every
            # item is throttled does the whole call fail (API reference, BatchWriteItem).
            proxy.meter.refused(refusal)
            first = first or refusal
            unprocessed.setdefault(write.table, []).append(entry)
        if not admitted:
            assert first is not None
            return throttled(first)
        sent: dict[str, list[dict[str, Any]]] = {}
        for write, entry in admitted:
            sent.setdefault(write.table, []).append(entry)
        status, data = proxy.forward(
            call.headers, call.with_request({**request, "RequestItems": sent}).body
        )
        if status != 200:
            return Answer(status, data)
        _charge_done(proxy, [w for w, _ in admitted], transactional=False)
    if not unprocessed:
        return Answer(status, data)
    answer = json.loads(data)
    merged = answer.setdefault("UnprocessedItems", {})
    for table, entries in unprocessed.items():
        merged.setdefault(table, []).extend(entries)
    return json_answer(200, answer)


_TRANSACT_KINDS = ("Put", "Update", "Delete")


def transact_write(proxy: Backend, call: Call) -> Answer:
    writes: list[_Write | None] = []
    for action in call.request.get("TransactItems", []):
        kind = next((k for k in _TRANSACT_KINDS if k in action), None)
        if kind is None:  # a ConditionCheck writes nothing
            writes.append(None)
            continue
        body = action[kind]
        shape = proxy.shape(body["TableName"])
        key = key_of(shape, body["Item"]) if kind == "Put" else dict(body["Key"])
        writes.append(_Write(body["TableName"], kind, key, body.get("Item")))
    real = [w for w in writes if w is not None]
    with proxy.locks.holding(w.lock_key for w in real):
        reasons: list[Refusal | None] = []
        for write in writes:
            if write is None:
                reasons.append(None)
                continue
            write.old = proxy.current(write.table, write.key)
            estimate = _estimate(proxy, write, transactional=True)
            reasons.append(proxy.meter.admit(estimate, write=True))
        if any(r is not None for r in reasons):
            for refusal in reasons:
                if refusal is not None:
                    proxy.meter.refused(refusal)
            return cancelled(reasons)
        status, data = proxy.forward(call.headers, call.body)
        if status == 200:
            _charge_done(proxy, real, transactional=True)
    return Answer(status, data)

"""The throughput proxy's reads: GetItem, BatchGetItem and Query, each admitted while its
partition holds capacity, forwarded, then charged on the size DynamoDB reads (the whole item
or index entry, whatever the request projects or filters)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dlpipe.local.ddb_capacity import Charge, Item, item_size, key_of, read_units, scalar
from dlpipe.local.ddb_limits import Refusal
from dlpipe.local.ddb_wire import Answer, Backend, Call, json_answer, throttled


def _read_refused(proxy: Backend, estimate: list[Charge]) -> Answer | None:
    refusal = proxy.meter.admit(estimate, write=False)
    if refusal is None:
        return None
    proxy.meter.refused(refusal)
    return throttled(refusal)


_PROJECTING = ("ProjectionExpression", "AttributesToGet")


def _full_size(
    proxy: Backend, table: str, key: Mapping[str, Any], got: Item | None, asked: Mapping[str, Any]
) -> int:
    # A read is charged on the whole item's size, whatever it projects.
    if got is None:
        return 0
    projected = any(k in asked for k in _PROJECTING)
    return item_size(proxy.current(table, key)) if projected else item_size(got)


def get_item(proxy: Backend, call: Call) -> Answer:
    request = call.request
    table, key = request["TableName"], request["Key"]
    shape = proxy.shape(table)
    consistent = bool(request.get("ConsistentRead"))
    partition = scalar(key[shape.table.hash_key])
    refused = _read_refused(proxy, [Charge(shape.table, partition, read_units(0, consistent))])
    if refused is not None:
        return refused
    status, data = proxy.forward(call.headers, call.body)
    if status == 200:
        size = _full_size(proxy, table, key, json.loads(data).get("Item"), request)
        proxy.meter.charge(
            [Charge(shape.table, partition, read_units(size, consistent))], write=False
        )
    return Answer(status, data)


def batch_get(proxy: Backend, call: Call) -> Answer:
    request = call.request
    sent: dict[str, dict[str, Any]] = {}
    unprocessed: dict[str, dict[str, Any]] = {}
    first: Refusal | None = None
    for table, asked in request.get("RequestItems", {}).items():
        shape = proxy.shape(table)
        consistent = bool(asked.get("ConsistentRead"))
        for key in asked.get("Keys", []):
            estimate = Charge(
                shape.table, scalar(key[shape.table.hash_key]), read_units(0, consistent)
            )
            refusal = proxy.meter.admit([estimate], write=False)
            # Throttled keys come back in UnprocessedKeys (API reference, BatchGetItem).
            into = sent if refusal is None else unprocessed
            into.setdefault(table, {**asked, "Keys": []})["Keys"].append(key)
            if refusal is not None:
                proxy.meter.refused(refusal)
                first = first or refusal
    if not sent:
        assert first is not None
        return throttled(first)
    status, data = proxy.forward(
        call.headers, call.with_request({**request, "RequestItems": sent}).body
    )
    if status != 200:
        return Answer(status, data)
    answer = json.loads(data)
    charges = []
    for table, items in answer.get("Responses", {}).items():
        shape = proxy.shape(table)
        consistent = bool(sent[table].get("ConsistentRead"))
        for item in items:
            key = key_of(shape, item)
            if len(key) == len(shape.table.keys):
                size = _full_size(proxy, table, key, item, sent[table])
                partition = scalar(key[shape.table.hash_key])
            else:  # projected without its key: sized as returned, on no known key
                size, partition = item_size(item), "?"
            charges.append(Charge(shape.table, partition, read_units(size, consistent)))
    proxy.meter.charge(charges, write=False)
    if not unprocessed:
        return Answer(status, data)
    merged = answer.setdefault("UnprocessedKeys", {})
    for table, asked in unprocessed.items():
        merged.setdefault(table, {**asked, "Keys": []})["Keys"].extend(asked["Keys"])
    return json_answer(200, answer)


_EQUALS = re.compile(r"([#\w.]+)\s*=\s*(:\w+)|(:\w+)\s*=\s*([#\w.]+)")
_TOKEN = re.compile(r"[#:]\w+")


def _hash_value(request: Mapping[str, Any], hash_key: str) -> str:
    """The partition key value a Query names in its KeyConditionExpression (or KeyConditions)."""
    names = request.get("ExpressionAttributeNames", {})
    values = request.get("ExpressionAttributeValues", {})
    for match in _EQUALS.finditer(request.get("KeyConditionExpression", "")):
        name, value = (match[1], match[2]) if match[1] else (match[4], match[3])
        if names.get(name, name) == hash_key and value in values:
            return scalar(values[value])
    legacy = request.get("KeyConditions", {}).get(hash_key)
    if legacy:
        return scalar(legacy["AttributeValueList"][0])
    return "?"


def _as_read(request: Mapping[str, Any]) -> dict[str, Any]:
    """The Query as DynamoDB reads it: the key condition only, whole entries, same page."""
    expression = request.get("KeyConditionExpression", "")
    used = set(_TOKEN.findall(expression))
    read = {
        k: request[k]
        for k in (
            "TableName",
            "IndexName",
            "KeyConditionExpression",
            "KeyConditions",
            "ExclusiveStartKey",
            "Limit",
            "ScanIndexForward",
            "ConsistentRead",
        )
        if k in request
    }
    names = {k: v for k, v in request.get("ExpressionAttributeNames", {}).items() if k in used}
    values = {k: v for k, v in request.get("ExpressionAttributeValues", {}).items() if k in used}
    if names:
        read["ExpressionAttributeNames"] = names
    if values:
        read["ExpressionAttributeValues"] = values
    return read


def query(proxy: Backend, call: Call) -> Answer:
    request = call.request
    shape = proxy.shape(request["TableName"])
    resource = shape.resource(request.get("IndexName"))
    consistent = bool(request.get("ConsistentRead")) and not resource.is_index
    partition = _hash_value(request, resource.hash_key)
    refused = _read_refused(proxy, [Charge(resource, partition, read_units(0, consistent))])
    if refused is not None:
        return refused
    status, data = proxy.forward(call.headers, call.body)
    if status == 200:
        whole = not any(
            k in request
            for k in (
                "Select",
                "ProjectionExpression",
                "FilterExpression",
                "AttributesToGet",
                "QueryFilter",
            )
        )
        items = (
            json.loads(data).get("Items", []) if whole else proxy.direct_query(_as_read(request))
        )
        size = sum(item_size(i) for i in items)
        proxy.meter.charge([Charge(resource, partition, read_units(size, consistent))], write=False)
    return Answer(status, data)

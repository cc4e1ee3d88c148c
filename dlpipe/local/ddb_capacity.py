"""DynamoDB's capacity rules as the throughput proxy (`ddb_throughput.py`) charges them.

Sizes: per attribute, the UTF-8 length of its name plus its value (strings: UTF-8 bytes;
numbers: 1 byte per two significant digits + 1; binary: bytes; sets: their members; lists and
maps: 3 bytes + 1 per element + the elements).

Writes: 1 WCU per 1 KB, rounded up, at least 1: the table write costs max(size before, size
after); a transactional write twice that. Each global secondary index is written when the
item's image there changes: an item that gains the index's key attributes is a put, one that
loses them (a sparse index) a delete, one whose index key (partition or sort) changes a
delete on the old key plus a put on the new, one whose projected attributes change one write;
an index entry's size is its projected attributes' (ALL: the item; KEYS_ONLY: the table's and
the index's keys; INCLUDE: those and the listed attributes). An item that never carries the
index's keys costs the index nothing.

Reads: 1 RCU per 4 KB, rounded up, strongly consistent; half that eventually consistent
(GSIs are always eventually consistent). A Query is charged on the page's total size.

The table and index shapes come from DescribeTable, so the rules follow whatever key design
is provisioned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

KB = 1024
READ_UNIT = 4 * KB

Item = Mapping[str, Any]  # attribute name -> AttributeValue ({"S": ...}, {"N": ...}, ...)


def number_size(text: str) -> int:
    """Bytes DynamoDB counts for a number: 1 per two significant digits, plus 1."""
    digits = format(Decimal(text).normalize(), "f").lstrip("-").replace(".", "").strip("0")
    return math.ceil(max(len(digits), 1) / 2) + 1


_SCALAR_SIZES: dict[str, Callable[[Any], int]] = {
    "S": lambda data: len(data.encode()),
    "N": number_size,
    "B": len,
    "BOOL": lambda _: 1,
    "NULL": lambda _: 1,
    "SS": lambda data: sum(len(s.encode()) for s in data),
    "NS": lambda data: sum(number_size(n) for n in data),
    "BS": lambda data: sum(len(b) for b in data),
}


def value_size(value: Mapping[str, Any]) -> int:
    """Bytes of one AttributeValue."""
    ((kind, data),) = value.items()
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in data.items())
    if kind not in _SCALAR_SIZES:
        raise ValueError(f"unknown attribute type {kind}")
    return _SCALAR_SIZES[kind](data)


def item_size(item: Item | None) -> int:
    """Bytes of a whole item: every attribute's name plus its value."""
    return sum(len(name.encode()) + value_size(v) for name, v in (item or {}).items())


def write_units(size: int) -> int:
    """WCU of one write of `size` bytes."""
    return max(1, math.ceil(size / KB))


def read_units(size: int, consistent: bool) -> float:
    """RCU of reading `size` bytes."""
    units = max(1, math.ceil(size / READ_UNIT))
    return float(units) if consistent else units / 2


@dataclass(frozen=True)
class Keyed:
    """A table or a global secondary index: its name as the heat report shows it, its ARN, its
    key attributes and what it projects."""

    label: str  # "table" or "table/index"
    arn: str
    hash_key: str
    range_key: str | None
    is_index: bool = False
    projection: str = "ALL"
    include: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.hash_key,) + ((self.range_key,) if self.range_key else ())


@dataclass(frozen=True)
class TableShape:
    """A table and its global secondary indexes, as DescribeTable gives them."""

    table: Keyed
    indexes: Mapping[str, Keyed]

    def resource(self, index: str | None) -> Keyed:
        """The table, or the index of that name."""
        return self.table if index is None else self.indexes[index]


def _key_attributes(schema: Iterable[Mapping[str, str]]) -> tuple[str, str | None]:
    by_type = {k["KeyType"]: k["AttributeName"] for k in schema}
    return by_type["HASH"], by_type.get("RANGE")


def shape_from_description(description: Mapping[str, Any]) -> TableShape:
    """The shape of DescribeTable's `Table`."""
    name = description["TableName"]
    hash_key, range_key = _key_attributes(description["KeySchema"])
    table = Keyed(name, description.get("TableArn", name), hash_key, range_key)
    indexes = {}
    for gsi in description.get("GlobalSecondaryIndexes", []):
        ihash, irange = _key_attributes(gsi["KeySchema"])
        projection = gsi.get("Projection", {})
        indexes[gsi["IndexName"]] = Keyed(
            f"{name}/{gsi['IndexName']}",
            gsi.get("IndexArn", f"{table.arn}/index/{gsi['IndexName']}"),
            ihash,
            irange,
            is_index=True,
            projection=projection.get("ProjectionType", "ALL"),
            include=tuple(projection.get("NonKeyAttributes", ())),
        )
    return TableShape(table, indexes)


def key_of(shape: TableShape, item: Item) -> dict[str, Any]:
    """The table key attributes of `item`."""
    return {k: item[k] for k in shape.table.keys if k in item}


def scalar(value: Mapping[str, Any]) -> str:
    """A key AttributeValue as the heat report shows it (its string, number or base64)."""
    ((_, data),) = value.items()
    return str(data)


@dataclass(frozen=True)
class Charge:
    """Capacity units charged to one partition key value of a table or index."""

    resource: Keyed
    key: str
    units: float


def index_entry(shape: TableShape, index: Keyed, image: Item | None) -> dict[str, Any] | None:
    """The item's entry in `index`, or None when it lacks the index's keys (sparse)."""
    if image is None or any(k not in image for k in index.keys):
        return None
    if index.projection == "ALL":
        return dict(image)
    kept = set(shape.table.keys) | set(index.keys)
    if index.projection == "INCLUDE":
        kept |= set(index.include)
    return {k: v for k, v in image.items() if k in kept}


def _index_charges(
    shape: TableShape, index: Keyed, old: Item | None, new: Item | None, factor: int
) -> list[Charge]:
    before, after = index_entry(shape, index, old), index_entry(shape, index, new)

    def on(entry: dict[str, Any]) -> Charge:
        return Charge(index, scalar(entry[index.hash_key]), factor * write_units(item_size(entry)))

    if before is None:
        return [] if after is None else [on(after)]
    if after is None:
        return [on(before)]
    if any(before[k] != after[k] for k in index.keys):
        return [on(before), on(after)]  # a delete on the old key, a put on the new
    return [on(after)] if before != after else []


def write_charges(
    shape: TableShape,
    key: Item,
    old: Item | None,
    new: Item | None,
    *,
    transactional: bool = False,
) -> list[Charge]:
    """What one item's write costs the table (at `key`) and each of its indexes."""
    factor = 2 if transactional else 1
    table = shape.table
    size = max(item_size(old), item_size(new))
    charges = [Charge(table, scalar(key[table.hash_key]), factor * write_units(size))]
    for index in shape.indexes.values():
        charges += _index_charges(shape, index, old, new, factor)
    return charges


def estimated_update_charges(shape: TableShape, key: Item, old: Item | None) -> list[Charge]:
    """Before an UpdateItem, what it will cost where the item sits now: the table at its old
    size and one write on each index holding it (the partition an update moves an item to is
    known only after it: charged then)."""
    charges = write_charges(shape, key, old, old)
    for index in shape.indexes.values():
        entry = index_entry(shape, index, old)
        if entry is not None:
            charges.append(
                Charge(index, scalar(entry[index.hash_key]), write_units(item_size(entry)))
            )
    return charges

"""Per-partition throughput limits of the local DynamoDB: token buckets and the heat counts.

DynamoDB caps each partition at 1,000 WCU and 3,000 RCU per second, and no burst or adaptive
capacity lifts that cap for one partition key value ("Burst capacity can't alleviate
partition-level throttling", AWS re:Post, "dynamodb-spiky-workloads-short-intervals";
developer guide, "burst-adaptive-capacity.html": adaptive capacity isolates a hot item on a
partition of its own, still capped at 1,000 WCU / 3,000 RCU). Burst capacity: "DynamoDB
currently retains up to 5 minutes (300 seconds) of unused read and write capacity" (same
pages). So each (table or index, partition key value) has a read and a write bucket of `rate`
units a second holding up to `burst_seconds` of them, full at first (a key unused so far).

A write or read is admitted while its partition's bucket holds what it is estimated to cost
(or the whole burst, when it costs more), and is then charged what it did cost: a bucket may
go into debt, which the next requests wait out, as DynamoDB charges consumed capacity after
the fact. Reads and writes are limited independently, as DynamoDB's partition-level
throttling is ("throttling-key-range-limit-exceeded-mitigation.html").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dlpipe.config import ConfigError
from dlpipe.local.ddb_capacity import Charge, Keyed

ENV_PARTITION_WCU = "DLPIPE_LOCAL_PARTITION_WCU"  # per-partition WCU a second; unset: no limit
ENV_PARTITION_RCU = "DLPIPE_LOCAL_PARTITION_RCU"  # per-partition RCU a second; unset: no limit
ENV_BURST_SECONDS = "DLPIPE_LOCAL_PARTITION_BURST_SECONDS"  # unused capacity kept; AWS: 300
AWS_BURST_SECONDS = 300.0
AWS_PARTITION_WCU = 1000.0
AWS_PARTITION_RCU = 3000.0


@dataclass(frozen=True)
class ThroughputLimits:
    """Units a second per partition key value (None: counted, never refused) and the burst."""

    wcu: float | None
    rcu: float | None
    burst_seconds: float = AWS_BURST_SECONDS


def _positive(env: Mapping[str, str], name: str) -> float | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{name}: {text!r} is not a positive number")
    return value


def limits_from_env(env: Mapping[str, str]) -> ThroughputLimits | None:
    """The limits the environment asks for; None (no proxy) when neither limit is set."""
    wcu, rcu = _positive(env, ENV_PARTITION_WCU), _positive(env, ENV_PARTITION_RCU)
    if wcu is None and rcu is None:
        return None
    burst = _positive(env, ENV_BURST_SECONDS)
    return ThroughputLimits(wcu, rcu, AWS_BURST_SECONDS if burst is None else burst)


class TokenBucket:
    """`rate` units a second, holding at most `capacity`; starts full."""

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate, self.capacity = rate, capacity
        self.tokens, self._at = capacity, now

    def refill(self, now: float) -> float:
        self.tokens = min(self.capacity, self.tokens + self.rate * max(0.0, now - self._at))
        self._at = now
        return self.tokens


@dataclass
class PartitionHeat:
    """What one partition key value of a table or index was charged and refused."""

    resource: str
    key: str
    wcu: float = 0.0
    rcu: float = 0.0
    writes: int = 0
    reads: int = 0
    throttled: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Refusal:
    """The partition that refused a request, and the ThrottlingReason DynamoDB names."""

    resource: Keyed
    key: str
    write: bool

    @property
    def reason(self) -> str:
        # ResourceType + OperationType + LimitType (API reference, "ThrottlingReason").
        kind = "Index" if self.resource.is_index else "Table"
        return f"{kind}{'Write' if self.write else 'Read'}KeyRangeThroughputExceeded"


@dataclass
class PartitionMeter:
    """The buckets and heat of every partition key value the proxy has seen."""

    limits: ThroughputLimits
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[tuple[str, str, bool], TokenBucket] = field(default_factory=dict)
    _heat: dict[tuple[str, str], PartitionHeat] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _bucket(self, label: str, key: str, write: bool, now: float) -> TokenBucket | None:
        rate = self.limits.wcu if write else self.limits.rcu
        if rate is None:
            return None
        bucket = self._buckets.get((label, key, write))
        if bucket is None:
            bucket = TokenBucket(rate, rate * self.limits.burst_seconds, now)
            self._buckets[(label, key, write)] = bucket
        return bucket

    def _row(self, resource: Keyed, key: str) -> PartitionHeat:
        return self._heat.setdefault((resource.label, key), PartitionHeat(resource.label, key))

    def admit(self, estimate: Iterable[Charge], *, write: bool) -> Refusal | None:
        """None if every partition the request touches holds its estimated cost; else the
        first that does not (an index before the table: GSI back-pressure names the index)."""
        wanted: dict[tuple[str, str], tuple[Keyed, float]] = {}
        for charge in estimate:
            resource, units = wanted.get((charge.resource.label, charge.key), (charge.resource, 0))
            wanted[(charge.resource.label, charge.key)] = (resource, units + charge.units)
        ordered = sorted(wanted.items(), key=lambda kv: not kv[1][0].is_index)
        with self._lock:
            now = self.clock()
            for (label, key), (resource, units) in ordered:
                bucket = self._bucket(label, key, write, now)
                if bucket is not None and bucket.refill(now) < min(units, bucket.capacity):
                    return Refusal(resource, key, write)
        return None

    def refused(self, refusal: Refusal) -> None:
        """Count a refused request against the partition that refused it."""
        with self._lock:
            self._row(refusal.resource, refusal.key).throttled += 1

    def charge(self, charges: Iterable[Charge], *, write: bool) -> None:
        """Take what a request cost from its partitions' buckets and count it."""
        with self._lock:
            now = self.clock()
            for charge in charges:
                bucket = self._bucket(charge.resource.label, charge.key, write, now)
                if bucket is not None:
                    bucket.refill(now)
                    bucket.tokens -= charge.units
                row = self._row(charge.resource, charge.key)
                if write:
                    row.wcu += charge.units
                    row.writes += 1
                else:
                    row.rcu += charge.units
                    row.reads += 1

    def heat(self) -> list[PartitionHeat]:
        """Every partition's counts so far, hottest (by WCU) first."""
        with self._lock:
            rows = [PartitionHeat(**row.as_dict()) for row in self._heat.values()]
        return sorted(rows, key=lambda r: (-r.wcu, -r.rcu, r.resource, r.key))

    def reset(self) -> None:
        """Forget every count and refill every bucket (between a bench's runs)."""
        with self._lock:
            self._heat.clear()
            self._buckets.clear()

"""The fault proxy's rules: which requests (service, operation, body text) get which fault, how
often, in which time window and how many times; read from a JSON or TOML rule file.

A rule file:

    {"seed": 7, "s3_completed_uploads_gone": true, "rules": [
      {"service": "dynamodb", "operations": ["UpdateItem"], "fault": "drop",
       "probability": 0.1, "start_s": 0, "end_s": 60, "count": 5,
       "body_contains": "if_not_exists(#attempts"}]}

Faults: `throttle` (the service's own throttling answer), `error` (`status` and `code`, an
AWS-shaped body), `reset` (TCP RST before anything is forwarded), `delay` (`delay_s`, then
forwarded), `drop` (forwarded, the upstream's answer read, then the client's connection closed
without a byte of it). `s3_completed_uploads_gone` makes an upload ID completed through
the proxy answer NoSuchUpload afterwards, as S3 does (moto completes it again). Times are seconds since the proxy started. Whether a rule fires on its
n-th matching request is decided by a generator seeded with (seed, rule, n), so a run makes the
same choices whatever threads interleave in front of it.
"""

from __future__ import annotations

import json
import random
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAULTS = frozenset({"throttle", "error", "reset", "delay", "drop"})
SERVICES = frozenset({"dynamodb", "sqs", "s3", "ssm", "*"})


class RuleFileError(ValueError):
    """A rule file that cannot be used; the message names the rule and the field."""


@dataclass(frozen=True)
class Rule:
    """One kind of fault for the requests it matches."""

    service: str
    fault: str
    operations: frozenset[str] = frozenset()  # empty: every operation of the service
    probability: float = 1.0
    start_s: float = 0.0
    end_s: float | None = None  # None: until the proxy stops
    count: int | None = None  # at most this many firings; None: no limit
    body_contains: str | None = None
    status: int | None = None  # `error`: the HTTP status (default 500)
    code: str | None = None  # `error`: the error code (default InternalError)
    delay_s: float = 0.0  # `delay`

    def matches(self, service: str, operation: str, body: bytes, at_s: float) -> bool:
        """True when this rule applies to the request (its probability not yet drawn)."""
        if self.service not in ("*", service):
            return False
        if self.operations and operation not in self.operations:
            return False
        if at_s < self.start_s or (self.end_s is not None and at_s >= self.end_s):
            return False
        return self.body_contains is None or self.body_contains.encode() in body


def _rule(index: int, raw: Mapping[str, Any]) -> Rule:
    def fail(message: str) -> RuleFileError:
        return RuleFileError(f"rule {index}: {message}")

    unknown = set(raw) - {*Rule.__dataclass_fields__, "operation"}
    if unknown:
        raise fail(f"unknown field(s) {sorted(unknown)}")
    if raw.get("service") not in SERVICES:
        raise fail(f"service must be one of {sorted(SERVICES)}, not {raw.get('service')!r}")
    if raw.get("fault") not in FAULTS:
        raise fail(f"fault must be one of {sorted(FAULTS)}, not {raw.get('fault')!r}")
    operations = raw.get("operations", [raw["operation"]] if "operation" in raw else [])
    if not isinstance(operations, list) or not all(isinstance(o, str) for o in operations):
        raise fail("operations must be a list of operation names")
    probability = float(raw.get("probability", 1.0))
    if not 0.0 <= probability <= 1.0:
        raise fail(f"probability {probability} is not within 0..1")
    fields = {k: v for k, v in raw.items() if k not in ("operation", "operations")}
    try:
        return Rule(**{**fields, "operations": frozenset(operations), "probability": probability})
    except TypeError as exc:
        raise fail(str(exc)) from exc


@dataclass
class FaultPlan:
    """The rules and their firing record; thread-safe. `decide` picks the fault, if any."""

    rules: Sequence[Rule]
    seed: int = 0
    matched: list[int] = field(init=False)
    fired: list[int] = field(init=False)
    log: list[tuple[float, str, str, str]] = field(default_factory=list)  # at, service, op, fault
    started: float | None = None  # monotonic time of the first proxy's start
    # As S3 does and moto does not: an upload ID once completed answers NoSuchUpload (404) to
    # a later CompleteMultipartUpload or UploadPart (e.g. the retry of a dropped completion).
    s3_completed_uploads_gone: bool = False
    completed_uploads: set[str] = field(default_factory=set)
    sleep: Callable[[float], None] = time.sleep  # how a `delay` holds a request (tests record it)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.matched = [0] * len(self.rules)
        self.fired = [0] * len(self.rules)

    def start(self) -> None:
        """Start the rules' clock (once: proxies sharing the plan share its windows)."""
        with self._lock:
            if self.started is None:
                self.started = time.monotonic()

    def elapsed_s(self) -> float:
        """Seconds since `start`."""
        return 0.0 if self.started is None else time.monotonic() - self.started

    def decide(self, service: str, operation: str, body: bytes, at_s: float) -> Rule | None:
        """The first rule that matches and fires for this request; None: forward it as it is."""
        with self._lock:
            for index, rule in enumerate(self.rules):
                if not rule.matches(service, operation, body, at_s):
                    continue
                if rule.count is not None and self.fired[index] >= rule.count:
                    continue
                nth = self.matched[index]
                self.matched[index] += 1
                if random.Random(f"{self.seed}:{index}:{nth}").random() < rule.probability:
                    self.fired[index] += 1
                    self.log.append((round(at_s, 3), service, operation, rule.fault))
                    return rule
        return None

    def note(self, service: str, operation: str, what: str) -> None:
        """Log something the proxy answered on its own (not a rule's firing)."""
        with self._lock:
            self.log.append((round(self.elapsed_s(), 3), service, operation, what))

    def upload_gone(self, upload_id: str | None) -> bool:
        """True when S3 would no longer know `upload_id` (completed through this proxy)."""
        with self._lock:
            return self.s3_completed_uploads_gone and upload_id in self.completed_uploads

    def upload_completed(self, upload_id: str) -> None:
        """Remember an upload S3 completed."""
        with self._lock:
            self.completed_uploads.add(upload_id)

    def fired_count(self, fault: str | None = None, operation: str | None = None) -> int:
        """Firings so far, optionally of one fault and/or one operation."""
        with self._lock:
            return sum(
                1
                for _, _, op, f in self.log
                if (fault is None or f == fault) and (operation is None or op == operation)
            )


def plan_from_data(data: Mapping[str, Any]) -> FaultPlan:
    """A plan from the parsed rule file (`seed`, `rules`)."""
    rules = data.get("rules")
    if not isinstance(rules, list):
        raise RuleFileError("the rule file needs a list `rules`")
    seed = data.get("seed", 0)
    if not isinstance(seed, int):
        raise RuleFileError(f"seed must be an integer, not {seed!r}")
    gone = data.get("s3_completed_uploads_gone", False)
    if not isinstance(gone, bool):
        raise RuleFileError(f"s3_completed_uploads_gone must be true or false, not {gone!r}")
    rules_read = [_rule(n, raw) for n, raw in enumerate(rules)]
    return FaultPlan(rules_read, seed=seed, s3_completed_uploads_gone=gone)


def load_plan(path: Path) -> FaultPlan:
    """Read a rule file: `.toml` as TOML (rules as `[[rules]]`), anything else as JSON."""
    text = path.read_text()
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise RuleFileError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise RuleFileError(f"{path}: the top level must be a table/object")
    return plan_from_data(data)

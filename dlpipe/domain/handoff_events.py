"""The hand-off events: what dlpipe tells the next system on EventBridge when a day ends or is late.

Plain data, no I/O. One event per outcome: source `dlpipe`, detail-type `Day Completed`,
`Day Failed` or `Day Timed Out` when the batch ends, `Day Late` when the feed's deadline passes
while the batch still runs, and `Day Revised` instead of `Day Completed` when a revision batch
of a restated day completed (its detail adds the revision, the manifest it supersedes and the
counts of changed, added and withdrawn files: a consumer reloads the day). The detail (DETAIL_SCHEMA, a JSON Schema the README shows) carries
the feed, date, batch, status, counts, the errors by code (the batch's outcome summary,
dlpipe/domain/outcome.py, and for an ended day's files that never finished a `pending` line
with their first FileIDs, from the manifest) and the day manifest's URI, version and SHA-256
and its file lists' URIs when there is one.

PutEvents is at-least-once, and a durable step may run again after a crash: `event_id` is
derived from the event's content alone (feed | date | batch | detail-type | the rest of the
detail), never from a clock or a random value, so every copy of one content carries the same ID
(a consumer de-duplicates on it) and an ID never stands for two contents (a later report of
the batch with another manifest, say, is another event).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dlpipe.domain.manifest_lists import PENDING, Revision
from dlpipe.domain.redaction import redact
from dlpipe.domain.statuses import FINISHED_BATCH_EVENT, BatchStatus

SOURCE = "dlpipe"
# The event of each status a batch ends in is its row's in the status table.
DAY_COMPLETED = FINISHED_BATCH_EVENT[BatchStatus.COMPLETED]
DAY_LATE = "Day Late"
DAY_REVISED = "Day Revised"  # a revision batch's Day Completed
DETAIL_TYPES = (*FINISHED_BATCH_EVENT.values(), DAY_REVISED, DAY_LATE)
# The counts a Day Revised adds to `counts` (restatement.Revised's, but unchanged).
REVISED_COUNTS = ("changed", "added", "withdrawn")
# The status a Day Late event reports: the batch still runs.
STILL_RUNNING = str(BatchStatus.QUEUED)
DETAIL_VERSION = 1
# errors.codes' line for an ended day's files that never finished (the manifest's status).
PENDING_CODE = PENDING

_COUNT = {"type": "integer", "minimum": 0}
_NULLABLE_TEXT = {"type": ["string", "null"]}
# The contract downstream consumers code against: change it only by adding optional fields,
# or with a new DETAIL_VERSION.
DETAIL_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "dlpipe hand-off event detail",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "version",
        "event_id",
        "feed",
        "date",
        "batch_id",
        "status",
        "counts",
        "errors",
        "manifest",
        "deadline_at",
    ],
    "properties": {
        "version": {"const": DETAIL_VERSION},
        "event_id": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "feed": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,30}$"},
        "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "batch_id": {"type": "string", "minLength": 1},
        "status": {"enum": [*map(str, FINISHED_BATCH_EVENT), STILL_RUNNING]},
        "counts": {
            "type": "object",
            "additionalProperties": False,
            "required": ["expected", "completed", "failed", "error", "pending"],
            "properties": dict.fromkeys(
                ("expected", "completed", "failed", "error", "pending", *REVISED_COUNTS), _COUNT
            ),
        },
        "errors": {
            "type": "object",
            "additionalProperties": False,
            "required": ["cause", "codes"],
            "properties": {
                "cause": _NULLABLE_TEXT,
                "codes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["code", "count", "files"],
                        "properties": {
                            "code": {"type": "string"},
                            "count": _COUNT,
                            "files": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
        },
        "manifest": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["uri", "version_id", "sha256"],
                    "properties": {
                        "uri": {"type": "string", "pattern": "^s3://"},
                        "version_id": _NULLABLE_TEXT,
                        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "file_list_uri": {"type": "string", "pattern": "^s3://"},
                        "copy_uri": {"type": ["string", "null"], "pattern": "^s3://"},
                    },
                },
            ]
        },
        "deadline_at": _NULLABLE_TEXT,
        # Day Revised only: which revision of the day, and the manifest (key, version) it
        # supersedes (the one a consumer loaded before).
        "revision": {"type": "integer", "minimum": 2},
        "supersedes": {
            "type": "object",
            "additionalProperties": False,
            "required": ["key", "version_id"],
            "properties": {"key": {"type": "string"}, "version_id": _NULLABLE_TEXT},
        },
    },
}


@dataclass(frozen=True)
class DayCounts:
    """A batch's files by state; `expected` is their sum (what the batch counted)."""

    completed: int
    failed: int
    error: int
    pending: int

    def to_dict(self) -> dict[str, int]:
        """The detail's `counts`."""
        total = self.completed + self.failed + self.error + self.pending
        return {
            "expected": total,
            "completed": self.completed,
            "failed": self.failed,
            "error": self.error,
            "pending": self.pending,
        }


@dataclass(frozen=True)
class HandoffEvent:
    """One event as it goes on the bus: its detail-type and detail (the ID is in the detail)."""

    detail_type: str
    detail: Mapping[str, Any]

    @property
    def event_id(self) -> str:
        """The outcome's deterministic ID."""
        return str(self.detail["event_id"])

    def detail_json(self) -> str:
        """The detail as PutEvents sends it: compact JSON, sorted keys (a replay sends the same)."""
        return json.dumps(self.detail, sort_keys=True, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, as a durable step's checkpoint carries it."""
        return {"detail_type": self.detail_type, "detail": dict(self.detail)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HandoffEvent:
        """Rebuild from to_dict output."""
        return cls(str(data["detail_type"]), dict(data["detail"]))


def event_id(
    feed: str, date: str, batch_id: str, detail_type: str, content: Mapping[str, Any]
) -> str:
    """sha256 hex of `feed|date|batch_id|detail_type|` and the detail's canonical JSON
    (sorted keys, no spaces; its own `event_id` left out): one content, one ID, however often
    sent."""
    rest = {key: value for key, value in content.items() if key != "event_id"}
    canonical = json.dumps(rest, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(
        f"{feed}|{date}|{batch_id}|{detail_type}|{canonical}".encode()
    ).hexdigest()


def detail_type_for(status: str, manifest: Mapping[str, Any] | None = None) -> str:
    """The event of a final batch status (`Day Revised` for a completed revision batch, whose
    manifest reference says it is one); ValueError for a status that is not final."""
    try:
        detail_type = FINISHED_BATCH_EVENT[BatchStatus(status)]
    except (KeyError, ValueError):
        raise ValueError(f"no hand-off event for batch status {status!r}") from None
    revised = detail_type == DAY_COMPLETED and _revision(manifest) is not None
    return DAY_REVISED if revised else detail_type


def _revision(manifest: Mapping[str, Any] | None) -> Revision | None:
    named = (manifest or {}).get("revision")
    return None if not named else Revision.from_dict(named)


def manifest_fields(manifest: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The detail's `manifest` from the write-manifest step's reference (None: no manifest)."""
    if manifest is None:
        return None
    fields = {
        "uri": str(manifest["uri"]),
        "version_id": None if manifest.get("version_id") is None else str(manifest["version_id"]),
        "sha256": str(manifest["sha256"]),
    }
    if manifest.get("file_list_uri"):  # a reference written before the file lists has none
        fields |= {"file_list_uri": str(manifest["file_list_uri"])}
        fields |= {"copy_uri": manifest.get("copy_uri")}
    return fields


def _codes(day: DayFacts) -> list[dict[str, Any]]:
    """The outcome summary's codes, and `pending` with the first FileIDs the manifest names
    when an ended day's files never finished (the summary counts only failed and error)."""
    codes = [dict(code) for code in (day.outcome or {}).get("codes", [])]
    pending = list((day.manifest or {}).get("pending_files", []))
    if day.counts.pending and pending:
        codes.append({"code": PENDING_CODE, "count": day.counts.pending, "files": pending})
    return codes


@dataclass(frozen=True)
class DayFacts:
    """What an event says about the day: which day, which batch, how it stands."""

    feed: str
    date: str
    batch_id: str
    status: str
    counts: DayCounts
    outcome: Mapping[str, Any] | None = None  # the batch's OutcomeSummary.to_dict(), if any
    manifest: Mapping[str, Any] | None = None  # the write-manifest step's reference, if any
    deadline_at: str | None = None  # ISO 8601 UTC, when the feed has a deadline


def build_event(detail_type: str, day: DayFacts) -> HandoffEvent:
    """The event `detail_type` for `day`; ValueError for an unknown detail-type."""
    if detail_type not in DETAIL_TYPES:
        raise ValueError(f"unknown detail-type {detail_type!r}")
    outcome = day.outcome or {}
    detail: dict[str, Any] = {
        "version": DETAIL_VERSION,
        "event_id": "",
        "feed": day.feed,
        "date": day.date,
        "batch_id": day.batch_id,
        "status": day.status,
        "counts": day.counts.to_dict(),
        "errors": {
            "cause": None if outcome.get("cause") is None else redact(outcome["cause"]),
            "codes": _codes(day),
        },
        "manifest": manifest_fields(day.manifest),
        "deadline_at": day.deadline_at,
    }
    revision = _revision(day.manifest) if detail_type == DAY_REVISED else None
    if detail_type == DAY_REVISED and revision is None:
        raise ValueError("a Day Revised event needs its revision's manifest")
    if revision is not None:  # the other events carry none of these keys
        counts = revision.counts()
        detail["counts"] |= {name: counts[name] for name in REVISED_COUNTS}
        detail |= {"revision": revision.number, "supersedes": revision.supersedes()}
    detail["event_id"] = event_id(day.feed, day.date, day.batch_id, detail_type, detail)
    return HandoffEvent(detail_type, detail)

"""The provider's JSON contract (docs/ARCHITECTURE.md, "The provider's contract"), parsed strictly.

`parse_listing` raises MalformedResponseError only when the listing as a whole is unusable; a
defect in one file becomes a `RejectedFile` with a reason, next to the good files. It is for a
listing already in memory; the client streams listings of any size through
dlpipe/adapters/listing_stream.py under the same rules. Why, and what each refusal covers:
docs/ARCHITECTURE.md, "Why the listing is a stream".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from dlpipe.domain.descriptor import (
    MAX_DECLARED_SIZE_BYTES,
    FileDescriptor,
    check_date,
    kind,
    parse_file,
    safe_entity,
)
from dlpipe.domain.model import validate_date
from dlpipe.domain.provider_errors import MalformedResponseError

__all__ = [
    "MAX_DECLARED_SIZE_BYTES",
    "MAX_FILES_PER_LISTING",
    "FileDescriptor",
    "ListingResult",
    "RejectedFile",
    "parse_descriptor",
    "parse_listing",
]

MAX_FILES_PER_LISTING = 10_000


@dataclass(frozen=True)
class RejectedFile:
    """A listed file that breaks the contract; `entity` is set only when the entity is safe."""

    entity_or_index: str  # the entity, or "files[3]" when it is missing or unsafe
    reason: str
    entity: str | None = None


@dataclass(frozen=True)
class ListingResult:
    """A day's listing: the files that parse, and the ones refused with their reasons."""

    date: str
    files: list[FileDescriptor]
    rejected: list[RejectedFile]


def parse_listing(payload: object, expected_date: str) -> ListingResult:
    """Parse `GET /v1/files?date=`; structural faults raise, per-file faults are rejected."""
    validate_date(expected_date)
    if not isinstance(payload, dict):
        raise MalformedResponseError(f"listing: expected a JSON object, got {kind(payload)}")
    check_date(payload, expected_date, "listing")
    if "files" not in payload:
        raise MalformedResponseError("listing.files: missing")
    items = payload["files"]
    if not isinstance(items, list):
        raise MalformedResponseError(f"listing.files: expected a list, got {kind(items)}")
    if len(items) > MAX_FILES_PER_LISTING:
        raise MalformedResponseError(
            f"listing.files: {len(items)} files, more than the {MAX_FILES_PER_LISTING} accepted"
        )
    outcomes = [_parse_item(item, expected_date, index) for index, item in enumerate(items)]
    return _refuse_duplicates(expected_date, outcomes)


def parse_descriptor(
    payload: object, expected_date: str, *, expected_entity: str | None = None
) -> FileDescriptor:
    """Parse `GET /v1/files/{entity}?date=`; any defect raises MalformedResponseError."""
    validate_date(expected_date)
    if not isinstance(payload, dict):
        raise MalformedResponseError(f"file: expected a JSON object, got {kind(payload)}")
    if "date" in payload:  # the single-file object may carry the date; if so it must match
        check_date(payload, expected_date, "file")
    descriptor = parse_file(payload, expected_date, "file")
    if expected_entity is not None and descriptor.entity != expected_entity:
        raise MalformedResponseError(
            f"file.entity: expected {expected_entity!r}, got {descriptor.entity!r}"
        )
    return descriptor


def _parse_item(item: object, day: str, index: int) -> FileDescriptor | RejectedFile:
    where = f"files[{index}]"
    try:
        return parse_file(item, day, where)
    except MalformedResponseError as exc:
        entity = safe_entity(item)
        return RejectedFile(entity or where, str(exc), entity)


def _refuse_duplicates(day: str, outcomes: list[FileDescriptor | RejectedFile]) -> ListingResult:
    # Two descriptors for one FileID conflict; picking one would be a guess, so all copies go.
    entities = [o.entity for o in outcomes]
    counts = Counter(e for e in entities if e is not None)
    duplicated = {e for e, n in counts.items() if n > 1}
    files = [o for o in outcomes if isinstance(o, FileDescriptor) and o.entity not in duplicated]
    rejected = [o for o in outcomes if isinstance(o, RejectedFile) and o.entity not in duplicated]
    for entity in sorted(duplicated, key=entities.index):
        places = ", ".join(f"files[{i}]" for i, e in enumerate(entities) if e == entity)
        reason = f"duplicate entity {entity!r} in the listing ({places}): all copies refused"
        rejected.append(RejectedFile(entity, reason, entity))
    return ListingResult(day, files, rejected)

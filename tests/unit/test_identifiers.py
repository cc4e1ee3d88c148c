"""FileIDs, BatchIDs, entities and dates are validated before they reach a key or a path."""

from __future__ import annotations

import pytest

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import (
    make_batch_id,
    make_file_id,
    parse_file_id,
    validate_batch_id,
    validate_date,
    validate_entity,
)

UUID = "0b6c3f4e-8a7d-4c1b-9e2f-3a5b6c7d8e9f"


def test_file_id_is_entity_dash_date_and_parses_back() -> None:
    """accounts + 2026-02-28 -> accounts-2026-02-28, and back."""
    assert make_file_id("accounts", "2026-02-28") == "accounts-2026-02-28"
    assert parse_file_id("trade-lines-2026-02-28") == ("trade-lines", "2026-02-28")


@pytest.mark.parametrize(
    "day", ["2026-02-30", "2026-13-01", "20260228", "2026-2-28", "", "2026-02-28 ", None, 20260228]
)
def test_invalid_dates_are_refused(day: object) -> None:
    """Impossible or mis-written dates raise InvalidIdentifierError."""
    with pytest.raises(InvalidIdentifierError):
        validate_date(day)


@pytest.mark.parametrize(
    "entity",
    [
        "../../etc",
        "a/b",
        "a b",
        "a#b",
        "",
        ".hidden",
        "-lead",
        "trail-",
        "x" * 65,
        "é",
        None,
        "a.b",
    ],
)
def test_unsafe_entities_are_refused(entity: object) -> None:
    """Path traversal, separators, spaces, '#', dots and over-long names are refused."""
    with pytest.raises(InvalidIdentifierError):
        validate_entity(entity)


@pytest.mark.parametrize(
    "file_id", ["accounts", "accounts-2026-02-30", "../x-2026-02-28", "a_2026-02-28", 7]
)
def test_malformed_file_ids_are_refused(file_id: object) -> None:
    """A FileID that is not {entity}-{YYYY-MM-DD} with valid parts is refused."""
    with pytest.raises(InvalidIdentifierError):
        parse_file_id(file_id)


def test_batch_id_carries_date_and_uuid() -> None:
    """batch-{date}-{uuid} is built and validated; other shapes are refused."""
    assert make_batch_id("2026-02-28", UUID) == f"batch-2026-02-28-{UUID}"
    for bad in ["batch-2026-02-30-" + UUID, "batch-2026-02-28", f"x-2026-02-28-{UUID}"]:
        with pytest.raises(InvalidIdentifierError):
            validate_batch_id(bad)


@pytest.mark.parametrize("value", ["accounts\n", "accounts\r", " accounts"])
def test_entities_with_trailing_or_leading_whitespace_are_refused(value: str) -> None:
    """A newline after an otherwise good entity is not accepted (no `$` loophole)."""
    with pytest.raises(InvalidIdentifierError):
        validate_entity(value)


def test_date_with_trailing_newline_is_refused() -> None:
    """A date with a trailing newline is not a date."""
    with pytest.raises(InvalidIdentifierError):
        validate_date("2026-02-28\n")

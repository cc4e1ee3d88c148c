"""Records are written with one ISO 8601 form and read in every form they were ever written in."""

from __future__ import annotations

import pytest

from dlpipe.domain.clock import iso_from_ms, ms_from_iso, normalized_iso

MS = 1_772_258_400_123  # 2026-02-28T06:00:00.123Z


def test_new_writes_use_utc_with_milliseconds_and_z() -> None:
    """CreatedAt, UpdatedAt, StartTime, TimeoutAt, CompletedAt: one form."""
    assert iso_from_ms(MS) == "2026-02-28T06:00:00.123Z"


@pytest.mark.parametrize(
    "stored",
    [
        "2026-02-28T06:00:00.123Z",  # this form
        "2026-02-28T06:00:00.123+00:00",  # items written before it
        "2026-02-28T07:00:00.123+01:00",  # a provider's offset
        "2026-02-28T06:00:00.123",  # no zone: UTC
    ],
)
def test_every_stored_form_reads_as_the_same_instant(stored: str) -> None:
    """Readers accept the older forms: existing items stay as they are."""
    assert ms_from_iso(stored) == MS
    assert normalized_iso(stored) == "2026-02-28T06:00:00.123Z"


def test_a_provider_expiry_in_seconds_with_z_is_written_in_the_one_form() -> None:
    """URLExpiresAt as the stub sends it becomes the records' form."""
    assert normalized_iso("2026-02-28T01:00:00Z") == "2026-02-28T01:00:00.000Z"
    assert normalized_iso(None) is None

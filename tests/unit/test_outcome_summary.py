"""The outcome summary a finished batch carries: grouped by error code, within its byte budget."""

from __future__ import annotations

import random

from dlpipe.domain.outcome import (
    FILES_PER_CODE,
    MAX_CODES,
    MAX_SUMMARY_BYTES,
    OutcomeSummary,
    OutcomeTally,
    error_code,
)


def test_codes_are_read_from_the_error_message_prefix() -> None:
    """'wrong_key: ...' gives wrong_key; a message without a code prefix gives unknown."""
    assert error_code("wrong_key: could not unwrap the AES key") == "wrong_key"
    assert error_code("rejected_listing: bad url") == "rejected_listing"
    assert error_code("Traceback: boom") == "unknown"
    assert error_code(None) == "unknown"


def test_twenty_identical_errors_are_one_line_with_the_first_file_ids() -> None:
    """20 wrong_key jobs read in any order: 'wrong_key: 20 (first three FileIDs, ...)'."""
    tally = OutcomeTally()
    names = [f"accounts{n:02d}-2026-02-28" for n in range(20)]
    random.Random(7).shuffle(names)
    tally.add_jobs((f"wrong_key: could not unwrap ({n})", n) for n in names)
    summary = tally.summary()
    assert summary.text() == (
        "wrong_key: 20 (accounts00-2026-02-28, accounts01-2026-02-28, accounts02-2026-02-28, ...)"
    )
    assert OutcomeSummary.from_json(summary.to_json()) == summary


def test_the_summary_stays_within_its_byte_budget_for_thousands_of_files_and_many_codes() -> None:
    """5,000 distinct FileIDs of the longest kind over 40 codes, and a long non-ASCII cause:
    at most MAX_SUMMARY_BYTES, MAX_CODES lines, every file still counted."""
    tally = OutcomeTally()
    entity = "e" * 64
    for n in range(5_000):
        code = f"code_{n % 40:02d}_" + "x" * 30
        tally.add(code, f"vendor-feed-{n:05d}.{entity}-2026-02-28")
    summary = tally.summary(cause="provider_refused: " + "é\u2028" * 5_000)
    assert len(summary.to_json().encode()) <= MAX_SUMMARY_BYTES
    assert len(summary.codes) == MAX_CODES
    assert all(len(c.files) <= FILES_PER_CODE for c in summary.codes)
    assert sum(c.count for c in summary.codes) == 5_000
    assert summary.codes[-1].code == f"other ({40 - MAX_CODES + 1} codes)"
    assert summary.cause is not None
    assert summary.cause.startswith("provider_refused: ")

"""A key's feed (and a BatchID's date) is read by one function per key kind, each caller
naming what a value that is no such key stands for."""

from __future__ import annotations

import pytest

from dlpipe.domain.model import (
    batch_feed,
    batch_polling_date,
    file_feed,
    make_batch_id,
    make_file_id,
)

UUID = "0b6c3f4e-8a7d-4c1b-9e2f-3a5b6c7d8e9f"
DAY = "2026-02-28"


def test_a_file_ids_feed_is_default_without_a_dot_and_the_name_before_it_with_one() -> None:
    """accounts-2026-02-28 is the default feed's; vendor-b.accounts-2026-02-28 vendor-b's."""
    assert file_feed(make_file_id("accounts", DAY), default=None) == "default"
    assert file_feed(make_file_id("accounts", DAY, "vendor-b"), default=None) == "vendor-b"


def test_a_batch_ids_feed_and_date_are_read_from_it() -> None:
    """batch-{date}-{uuid} is the default feed's, {feed}.batch-... that feed's; both name the date."""
    default, named = make_batch_id(DAY, UUID), make_batch_id(DAY, UUID, "vendor-b")
    assert [batch_feed(k, default=None) for k in (default, named)] == ["default", "vendor-b"]
    assert [batch_polling_date(k, default=None) for k in (default, named)] == [DAY, DAY]


@pytest.mark.parametrize(
    "value",
    [
        "not a key",
        "default.accounts-2026-02-28",  # the default feed is never written with its name
        "Vendor.accounts-2026-02-28",  # no feed name
        f"batch-{DAY}-{UUID}",  # a BatchID is no FileID
        None,
        42,
    ],
)
def test_a_value_that_is_no_file_id_gets_the_callers_fallback(value: object) -> None:
    """The fallback is the caller's: None, the default feed, or the item's own Feed."""
    assert file_feed(value, default=None) is None
    assert file_feed(value, default="default") == "default"


@pytest.mark.parametrize(
    "value", ["batch-2026-02-28", f"default.batch-{DAY}-{UUID}", f"accounts-{DAY}", None]
)
def test_a_value_that_is_no_batch_id_gets_the_callers_fallback(value: object) -> None:
    """Neither its feed nor its date is guessed: the caller's fallback stands in."""
    assert batch_feed(value, default="vendor-c") == "vendor-c"
    assert batch_polling_date(value, default="2026-03-01") == "2026-03-01"

"""Keys of different feeds never collide, and every key parses back to what built it."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import (
    make_batch_id,
    make_file_id,
    parse_batch_key,
    parse_file_id,
    parse_file_key,
    validate_batch_id,
)

feeds = st.one_of(
    st.just(DEFAULT_FEED_NAME), st.from_regex(r"[a-z0-9][a-z0-9-]{0,30}", fullmatch=True)
)
entities = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?", fullmatch=True)
dates = st.dates().map(lambda d: d.isoformat()).filter(lambda d: len(d) == 10)
uuids = st.uuids(version=4).map(str)

# The seed's formats, written out independently of the code under test.
_SEED_FILE_ID = re.compile(r"[A-Za-z0-9_-]+-\d{4}-\d{2}-\d{2}")
_SEED_BATCH_ID = re.compile(r"batch-\d{4}-\d{2}-\d{2}-[0-9a-f-]{36}")


@given(st.tuples(feeds, entities, dates), st.tuples(feeds, entities, dates))
def test_file_ids_of_different_keys_never_collide(
    a: tuple[str, str, str], b: tuple[str, str, str]
) -> None:
    """Two FileIDs are equal only when feed, entity and date are, and each parses back."""
    id_a, id_b = make_file_id(a[1], a[2], a[0]), make_file_id(b[1], b[2], b[0])
    assert parse_file_key(id_a) == a
    assert parse_file_key(id_b) == b
    assert (id_a == id_b) == (a == b)


@given(feeds, entities, dates)
def test_an_entity_ending_like_a_feed_does_not_move_the_feed(
    feed: str, entity: str, day: str
) -> None:
    """vendor-b.accounts vs vendor.b-accounts style confusions: the split is exact."""
    file_id = make_file_id(entity, day, feed)
    assert parse_file_id(file_id) == (entity, day)
    assert ("." in file_id) == (feed != DEFAULT_FEED_NAME)


@given(st.tuples(feeds, dates, uuids), st.tuples(feeds, dates, uuids))
def test_batch_ids_of_different_keys_never_collide(
    a: tuple[str, str, str], b: tuple[str, str, str]
) -> None:
    """Two BatchIDs are equal only when feed, date and uuid are, and each parses back."""
    id_a, id_b = make_batch_id(a[1], a[2], a[0]), make_batch_id(b[1], b[2], b[0])
    assert parse_batch_key(id_a) == (a[0], a[1])
    assert parse_batch_key(id_b) == (b[0], b[1])
    assert (id_a == id_b) == (a == b)


@given(entities, dates, uuids)
def test_the_default_feeds_keys_are_the_seeds_byte_for_byte(
    entity: str, day: str, uid: str
) -> None:
    """The default feed's FileID is {entity}-{date}, its BatchID batch-{date}-{uuid}."""
    assert make_file_id(entity, day) == make_file_id(entity, day, DEFAULT_FEED_NAME)
    assert make_file_id(entity, day) == f"{entity}-{day}"
    assert _SEED_FILE_ID.fullmatch(make_file_id(entity, day))
    assert make_batch_id(day, uid) == f"batch-{day}-{uid}"
    assert _SEED_BATCH_ID.fullmatch(make_batch_id(day, uid))


def test_named_feed_keys_have_the_documented_shape() -> None:
    """vendor-b's keys, as README and ARCHITECTURE.md show them."""
    uid = str(uuid.UUID(int=1, version=4))
    assert make_file_id("accounts", "2026-02-28", "vendor-b") == "vendor-b.accounts-2026-02-28"
    assert parse_file_key("vendor-b.accounts-2026-02-28") == ("vendor-b", "accounts", "2026-02-28")
    assert make_batch_id("2026-02-28", uid, "vendor-b") == f"vendor-b.batch-2026-02-28-{uid}"
    assert parse_batch_key(f"vendor-b.batch-2026-02-28-{uid}") == ("vendor-b", "2026-02-28")


UID = "0b6c3f4e-8a7d-4c1b-9e2f-3a5b6c7d8e9f"


@pytest.mark.parametrize(
    "file_id",
    [
        "default.accounts-2026-02-28",  # the default feed has one spelling: without its name
        ".accounts-2026-02-28",
        "Vendor.accounts-2026-02-28",
        "a.b.accounts-2026-02-28",
        "vendor_b.accounts-2026-02-28",
        f"{'x' * 32}.accounts-2026-02-28",
        "vendor-b.accounts-2026-02-30",
        "vendor-b.",
        "vendor-b.accounts\n-2026-02-28",
    ],
)
def test_garbage_file_ids_are_refused(file_id: str) -> None:
    """A '.' is accepted only after a valid, non-default feed name."""
    with pytest.raises(InvalidIdentifierError):
        parse_file_key(file_id)


@pytest.mark.parametrize(
    "batch_id",
    [
        f"default.batch-2026-02-28-{UID}",
        f".batch-2026-02-28-{UID}",
        f"vendor-b.batch-2026-02-30-{UID}",
        f"a.b.batch-2026-02-28-{UID}",
        f"vendor-b.x-2026-02-28-{UID}",
        "vendor-b.batch-2026-02-28",
    ],
)
def test_garbage_batch_ids_are_refused(batch_id: str) -> None:
    """The same rule for BatchIDs."""
    with pytest.raises(InvalidIdentifierError):
        validate_batch_id(batch_id)


def test_an_invalid_feed_cannot_build_a_key() -> None:
    """make_* refuse a feed name that could not be parsed back."""
    for feed in ("Vendor", "a.b", "", "x" * 32):
        with pytest.raises(InvalidIdentifierError):
            make_file_id("accounts", "2026-02-28", feed)
        with pytest.raises(InvalidIdentifierError):
            make_batch_id("2026-02-28", UID, feed)

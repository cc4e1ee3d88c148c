"""Strict parsing of the provider's JSON: whole-listing faults raise, per-file faults are rejected."""

from __future__ import annotations

import base64

import pytest

from dlpipe.domain.listing import (
    MAX_DECLARED_SIZE_BYTES,
    MAX_FILES_PER_LISTING,
    FileDescriptor,
    RejectedFile,
    parse_descriptor,
    parse_listing,
)
from dlpipe.domain.provider_errors import MalformedResponseError

DAY = "2026-02-28"
SIGNED_URL = "https://bucket.s3.amazonaws.com/2026-02-28/a.bin?X-Amz-Signature=deadbeef"
SHA = "AB" * 32
DROP = object()  # in good(): leave the field out


def _b64(n: int) -> str:
    return base64.b64encode(b"\x01" * n).decode()


def good(entity: str = "accounts", **changes: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "entity": entity, "url": SIGNED_URL, "encrypted_key": _b64(256), "iv": _b64(12),
        "cipher": "AES-256-GCM", "size": 12345, "sha256": SHA, "expires_at": "2026-02-28T01:00:00Z",
    }  # fmt: skip
    entry.update(changes)
    return {k: v for k, v in entry.items() if v is not DROP}


def listing(*files: object, date: object = DAY) -> dict[str, object]:
    return {"date": date, "files": list(files)}


def test_a_good_listing_parses_every_field() -> None:
    """Fields are kept as sent (sha256 lowercased), and the FileID is {entity}-{date}."""
    result = parse_listing(
        listing(good(), good("trades", cipher="AES-256-CBC", iv=_b64(16), size=0)), DAY
    )
    assert result.rejected == []
    first = result.files[0]
    assert first == FileDescriptor(
        "accounts",
        DAY,
        SIGNED_URL,
        _b64(256),
        _b64(12),
        "AES-256-GCM",
        12345,
        SHA.lower(),
        "2026-02-28T01:00:00Z",
    )
    assert [f.file_id for f in result.files] == [f"accounts-{DAY}", f"trades-{DAY}"]


def test_unknown_fields_are_ignored_and_expires_at_is_optional() -> None:
    """A provider may add fields; a missing or null expires_at is None."""
    result = parse_listing(
        listing(good(extra="x", expires_at=DROP), good("b", expires_at=None)), DAY
    )
    assert [f.expires_at for f in result.files] == [None, None]


def test_a_descriptor_never_shows_its_url_or_key_in_repr() -> None:
    """repr() of a descriptor hides the presigned URL and the wrapped key."""
    text = repr(parse_listing(listing(good()), DAY).files[0])
    assert "X-Amz-Signature" not in text
    assert _b64(256) not in text


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "listing: expected a JSON object, got list"),
        ("{}", "listing: expected a JSON object, got str"),
        ({"files": []}, "listing.date: missing"),
        (listing(date="2026-02-27"), "listing.date: expected '2026-02-28', got '2026-02-27'"),
        ({"date": DAY}, "listing.files: missing"),
        ({"date": DAY, "files": {"a": 1}}, "listing.files: expected a list, got dict"),
        ({"date": DAY, "files": None}, "listing.files: expected a list, got null"),
        (
            listing(*[good(f"e{i}") for i in range(MAX_FILES_PER_LISTING + 1)]),
            "more than the 10000 accepted",
        ),
    ],
)
def test_a_structurally_broken_listing_raises(payload: object, message: str) -> None:
    """Only faults of the listing as a whole raise; the message says what is wrong."""
    with pytest.raises(MalformedResponseError) as caught:
        parse_listing(payload, DAY)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"url": DROP}, "files[1].url: missing"),
        ({"url": None}, "files[1].url: missing"),
        ({"url": 5}, "files[1].url: expected a non-empty string, got int"),
        ({"url": "ftp://host/x"}, "files[1].url: expected an absolute http(s) URL"),
        ({"url": "https:///nohost"}, "files[1].url: expected an absolute http(s) URL"),
        ({"encrypted_key": ""}, "files[1].encrypted_key: expected a non-empty string, got str"),
        ({"encrypted_key": "not base64!"}, "files[1].encrypted_key: expected base64"),
        ({"iv": _b64(16)}, "files[1].iv: expected 12 bytes for AES-256-GCM, got 16"),
        ({"iv": ["x"]}, "files[1].iv: expected a non-empty string, got list"),
        (
            {"cipher": "AES-128-ECB"},
            "files[1].cipher: expected one of AES-256-CBC, AES-256-GCM, got 'AES-128-ECB'",
        ),
        ({"cipher": DROP}, "files[1].cipher: missing"),
        ({"size": "abc"}, "files[1].size: expected a non-negative integer, got 'abc'"),
        ({"size": True}, "files[1].size: expected a non-negative integer, got True"),
        ({"size": 1.5}, "files[1].size: expected a non-negative integer, got 1.5"),
        ({"size": -1}, "files[1].size: expected a non-negative integer, got -1"),
        ({"size": DROP}, "files[1].size: missing"),
        ({"size": MAX_DECLARED_SIZE_BYTES + 1}, "files[1].size: huge declared size"),
        ({"sha256": "xyz"}, "files[1].sha256: expected 64 hex digits, got 'xyz'"),
        ({"sha256": "g" * 64}, "files[1].sha256: expected 64 hex digits"),
        ({"sha256": "a" * 64 + "\n"}, "files[1].sha256: expected 64 hex digits"),
        ({"sha256": None}, "files[1].sha256: missing"),
        ({"expires_at": "tomorrow"}, "files[1].expires_at: expected ISO 8601, got 'tomorrow'"),
        ({"expires_at": 1772236800}, "files[1].expires_at: expected ISO 8601, got 1772236800"),
    ],
)
def test_a_bad_field_rejects_that_file_only(changes: dict[str, object], reason: str) -> None:
    """One defective field rejects its file by entity with a reason naming the field; others stay."""
    result = parse_listing(listing(good("first"), good("victim", **changes), good("last")), DAY)
    assert [f.entity for f in result.files] == ["first", "last"]
    [rejected] = result.rejected
    assert (rejected.entity_or_index, rejected.entity) == ("victim", "victim")
    assert rejected.reason.startswith(reason)


def test_a_reason_never_echoes_a_url_or_a_key() -> None:
    """Rejection reasons may end up in DynamoDB and logs: no URL, no key material."""
    leaky_url = "ftp://host/x?X-Amz-Signature=secret"
    result = parse_listing(listing(good(url=leaky_url), good("b", encrypted_key="sec ret")), DAY)
    reasons = " ".join(r.reason for r in result.rejected)
    assert "secret" not in reasons
    assert "sec ret" not in reasons


@pytest.mark.parametrize(
    "entity",
    ["../../etc", "#", "two words", "", "a" * 65, "dot.ted", "slash/ed", "accounts\n", 42, None],
)
def test_an_unsafe_entity_is_rejected_by_index(entity: object) -> None:
    """A missing or unsafe entity cannot key anything: it is reported as files[i] with no entity."""
    result = parse_listing(listing(good("ok"), good(entity=entity)), DAY)  # type: ignore[arg-type]
    assert [f.entity for f in result.files] == ["ok"]
    assert result.rejected == [RejectedFile("files[1]", result.rejected[0].reason, None)]
    assert result.rejected[0].reason.startswith("files[1].entity:")


@pytest.mark.parametrize("item", [None, 7, "accounts", ["accounts"]])
def test_a_file_that_is_not_an_object_is_rejected_by_index(item: object) -> None:
    """A non-object entry is rejected by its index."""
    [rejected] = parse_listing(listing(good(), item), DAY).rejected
    assert rejected.entity_or_index == "files[1]"
    assert rejected.reason.startswith("files[1]: expected a JSON object")


def test_duplicate_entities_reject_every_copy_once() -> None:
    """Two descriptors for one FileID conflict: all copies go, in one rejection naming them."""
    result = parse_listing(
        listing(good("dup"), good("ok"), good("dup", size=1), good("dup", size="x")), DAY
    )
    assert [f.entity for f in result.files] == ["ok"]
    [rejected] = result.rejected
    assert (rejected.entity, rejected.reason) == (
        "dup",
        "duplicate entity 'dup' in the listing (files[0], files[2], files[3]): all copies refused",
    )


def test_an_empty_listing_is_valid() -> None:
    """A day without files parses to nothing."""
    assert parse_listing(listing(), DAY).files == []


def test_parse_descriptor_accepts_the_single_file_object() -> None:
    """The refresh endpoint's object parses; a date, if present, must be the asked one."""
    assert parse_descriptor(good(), DAY, expected_entity="accounts").file_id == f"accounts-{DAY}"
    assert parse_descriptor({**good(), "date": DAY}, DAY).entity == "accounts"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "file: expected a JSON object, got list"),
        ({**good(), "date": "2026-03-01"}, "file.date: expected '2026-02-28'"),
        (good(size=-5), "file.size: expected a non-negative integer"),
        (good("other"), "file.entity: expected 'accounts', got 'other'"),
    ],
)
def test_parse_descriptor_raises_on_any_defect(payload: object, message: str) -> None:
    """There is nothing to keep from a bad single-file answer: it raises, naming the field."""
    with pytest.raises(MalformedResponseError) as caught:
        parse_descriptor(payload, DAY, expected_entity="accounts")
    assert str(caught.value).startswith(message)

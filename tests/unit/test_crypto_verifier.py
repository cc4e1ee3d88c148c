"""Plaintext verification: declared size and SHA-256, and early refusal of oversize streams."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from dlpipe.adapters.crypto import PlaintextVerifier
from dlpipe.domain.download_errors import (
    ChecksumMismatchError,
    InvalidMetadataError,
    SizeMismatchError,
)

DATA = b"entity,date,amount\naccounts,2026-02-28,12.50\n"
DIGEST = hashlib.sha256(DATA).hexdigest()


def test_matching_size_and_checksum_verify() -> None:
    """Plaintext matching its declared size and SHA-256 verifies, split or whole."""
    verifier = PlaintextVerifier(len(DATA), DIGEST)
    verifier.update(DATA[:10])
    verifier.update(b"")
    verifier.update(DATA[10:])
    verifier.verify()
    assert (verifier.byte_count, verifier.sha256_hex) == (len(DATA), DIGEST)


def test_uppercase_declared_checksum_is_accepted() -> None:
    """A declared SHA-256 in upper case hex (with stray whitespace) still matches."""
    verifier = PlaintextVerifier(len(DATA), f" {DIGEST.upper()}\n")
    verifier.update(DATA)
    verifier.verify()


def test_short_plaintext_is_a_size_mismatch_with_both_sizes() -> None:
    """Less plaintext than declared raises SizeMismatchError carrying expected and actual."""
    verifier = PlaintextVerifier(len(DATA), DIGEST)
    verifier.update(DATA[:-1])
    with pytest.raises(SizeMismatchError) as caught:
        verifier.verify()
    assert (caught.value.expected, caught.value.actual) == (len(DATA), len(DATA) - 1)
    assert caught.value.complete


def test_size_is_checked_before_checksum() -> None:
    """A truncated file reports size_mismatch, the more telling cause, not checksum_mismatch."""
    verifier = PlaintextVerifier(len(DATA), DIGEST)
    verifier.update(DATA[:5])
    with pytest.raises(SizeMismatchError):
        verifier.verify()


def test_wrong_content_is_a_checksum_mismatch_with_both_digests() -> None:
    """Same size, different bytes raises ChecksumMismatchError carrying both hex digests."""
    other = DATA.replace(b"12.50", b"99.99")
    verifier = PlaintextVerifier(len(DATA), DIGEST)
    verifier.update(other)
    with pytest.raises(ChecksumMismatchError) as caught:
        verifier.verify()
    assert caught.value.expected == DIGEST
    assert caught.value.actual == hashlib.sha256(other).hexdigest()
    assert DIGEST in str(caught.value)


def test_oversize_stream_is_refused_as_soon_as_it_exceeds_the_size() -> None:
    """update raises at the first byte past the declared size, before the stream is all read."""
    served = 0

    def endless() -> Iterator[bytes]:
        nonlocal served
        while True:
            served += 1
            yield b"x" * 1000

    def feed_all(verifier: PlaintextVerifier) -> None:
        for chunk in endless():
            verifier.update(chunk)

    with pytest.raises(SizeMismatchError) as caught:
        feed_all(PlaintextVerifier(2500, None))
    assert served == 3
    error = caught.value
    assert (error.expected, error.actual, error.complete) == (2500, 3000, False)
    assert "more than 2500 bytes" in str(error)


def test_exactly_the_declared_size_is_not_refused_early() -> None:
    """Reaching the declared size exactly is fine; only exceeding it is refused."""
    verifier = PlaintextVerifier(3, None)
    verifier.update(b"abc")
    verifier.update(b"")
    verifier.verify()
    with pytest.raises(SizeMismatchError):
        verifier.update(b"d")


def test_without_expectations_it_only_measures() -> None:
    """With no declared size or SHA-256, verify passes and the count and digest are reported."""
    verifier = PlaintextVerifier(None, None)
    verifier.update(DATA)
    verifier.verify()
    assert (verifier.byte_count, verifier.sha256_hex) == (len(DATA), DIGEST)


def test_empty_plaintext_has_the_empty_digest() -> None:
    """An empty file verifies against size 0 and the SHA-256 of nothing."""
    verifier = PlaintextVerifier(0, hashlib.sha256(b"").hexdigest())
    verifier.verify()


@pytest.mark.parametrize(
    ("size", "sha256"), [(-1, None), (None, "abc"), (None, "g" * 64), (None, DIGEST + "0")]
)
def test_malformed_declarations_are_refused_up_front(size: int | None, sha256: str | None) -> None:
    """A negative size or a SHA-256 that is not 64 hex digits raises InvalidMetadataError."""
    with pytest.raises(InvalidMetadataError):
        PlaintextVerifier(size, sha256)

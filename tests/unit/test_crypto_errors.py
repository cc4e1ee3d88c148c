"""The downloader's error hierarchy: stable codes, permanent vs transient by type."""

from __future__ import annotations

import pickle
import re

import pytest

from dlpipe.domain import download_errors as errors
from dlpipe.domain.download_errors import (
    ChecksumMismatchError,
    DownloadError,
    PermanentError,
    SizeMismatchError,
    TransientError,
    WrongKeyError,
)

CRYPTO_CODES = {
    "InvalidPrivateKeyError": "invalid_private_key",
    "WrongKeyError": "wrong_key",
    "MalformedKeyMaterial": "malformed_key",
    "InvalidIVError": "invalid_iv",
    "UnknownCipherError": "unknown_cipher",
    "InvalidMetadataError": "invalid_metadata",
    "PaddingError": "bad_padding",
    "AuthenticationError": "tag_mismatch",
    "TruncatedError": "truncated",
    "SizeMismatchError": "size_mismatch",
    "ChecksumMismatchError": "checksum_mismatch",
}


def all_error_classes() -> list[type[DownloadError]]:
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, DownloadError)
    ]


def test_every_error_class_has_its_own_unique_snake_case_code() -> None:
    """No two error classes share a code, and every code is short snake_case."""
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"[a-z][a-z0-9_]{1,39}", code) for code in codes)


def test_crypto_errors_are_permanent_with_their_documented_codes() -> None:
    """Every crypto and verification error is permanent and has the code operators expect."""
    for name, code in CRYPTO_CODES.items():
        cls = getattr(errors, name)
        assert issubclass(cls, PermanentError)
        assert not issubclass(cls, TransientError)
        assert cls.code == code


def test_a_subclass_without_its_own_code_is_rejected() -> None:
    """Adding an error class that forgets its code fails at import time, not in production."""
    with pytest.raises(TypeError, match="own snake_case `code`"):
        type("ForgetfulError", (TransientError,), {})


def test_error_message_leads_with_the_code() -> None:
    """The job's ErrorMessage is `code: human message`."""
    assert WrongKeyError().error_message.startswith("wrong_key: could not unwrap the AES key")
    assert TransientError("S3 throttled").error_message == "transient_error: S3 throttled"


def test_mismatch_errors_survive_pickling_with_their_fields() -> None:
    """Size and checksum errors cross process boundaries with expected and actual intact."""
    size = pickle.loads(pickle.dumps(SizeMismatchError(10, 12, complete=False)))
    checksum = pickle.loads(pickle.dumps(ChecksumMismatchError("a" * 64, "b" * 64)))
    assert (size.expected, size.actual, size.complete) == (10, 12, False)
    assert (checksum.expected, checksum.actual) == ("a" * 64, "b" * 64)
    assert str(size) == str(SizeMismatchError(10, 12, complete=False))

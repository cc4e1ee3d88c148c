"""Tampered, truncated and extended ciphertext is refused, never published as plaintext."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable

import pytest

from dlpipe.adapters.crypto import PlaintextVerifier, new_decryptor
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM, SUPPORTED_CIPHERS
from dlpipe.domain.download_errors import (
    AuthenticationError,
    ChecksumMismatchError,
    PaddingError,
    PermanentError,
    SizeMismatchError,
    TruncatedError,
)
from dlpipe.local.stub.crypto import encrypt_bytes

# Fixed inputs: flipping a ciphertext bit then has one outcome, not a 1-in-256 chance of
# producing valid-looking padding.
KEY = bytes(range(32))
IV = {CIPHER_CBC: bytes(range(100, 116)), CIPHER_GCM: bytes(range(200, 212))}
PLAINTEXT = random.Random(42).randbytes(1000)  # 62.5 blocks: the padding is 8 bytes of 0x08


def ciphertext(cipher: str) -> bytearray:
    return bytearray(encrypt_bytes(PLAINTEXT, cipher, KEY, IV[cipher]))


def decrypt_and_verify(cipher: str, data: bytes, cut: int = 64) -> bytes:
    """What the downloader does: decrypt in chunks, then check size and SHA-256."""
    decryptor = new_decryptor(cipher, KEY, IV[cipher])
    verifier = PlaintextVerifier(len(PLAINTEXT), hashlib.sha256(PLAINTEXT).hexdigest())
    out = []
    for chunk in chunks(data, cut):
        out.append(decryptor.update(chunk))
        verifier.update(out[-1])
    out.append(decryptor.finalize())
    verifier.update(out[-1])
    verifier.verify()
    return b"".join(out)


def chunks(data: bytes, size: int) -> Iterable[bytes]:
    return (bytes(data[i : i + size]) for i in range(0, len(data), size))


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_untampered_fixture_decrypts(cipher: str) -> None:
    """The fixed ciphertext used below is valid before it is damaged."""
    assert decrypt_and_verify(cipher, bytes(ciphertext(cipher))) == PLAINTEXT


def test_tampered_last_cbc_block_fails_the_padding_check() -> None:
    """A flipped byte in the last CBC block garbles the padding: PaddingError."""
    data = ciphertext(CIPHER_CBC)
    data[-5] ^= 0x40
    with pytest.raises(PaddingError):
        decrypt_and_verify(CIPHER_CBC, bytes(data))


def test_tampered_padding_length_byte_fails_the_padding_check() -> None:
    """Flipping the byte that CBC XORs into the pad length (0x08 -> 0x18) raises PaddingError."""
    data = ciphertext(CIPHER_CBC)
    data[-17] ^= 0x10
    with pytest.raises(PaddingError):
        decrypt_and_verify(CIPHER_CBC, bytes(data))


def test_tampered_middle_cbc_block_is_caught_by_the_sha256_check() -> None:
    """A middle CBC block flip keeps valid padding; only the SHA-256 check catches it."""
    data = ciphertext(CIPHER_CBC)
    data[320] ^= 0x01
    decryptor = new_decryptor(CIPHER_CBC, KEY, IV[CIPHER_CBC])
    garbled = decryptor.update(bytes(data)) + decryptor.finalize()
    assert len(garbled) == len(PLAINTEXT)
    assert garbled != PLAINTEXT
    with pytest.raises(ChecksumMismatchError):
        decrypt_and_verify(CIPHER_CBC, bytes(data))


@pytest.mark.parametrize("position", [0, 500, -17])
def test_tampered_gcm_ciphertext_fails_authentication(position: int) -> None:
    """A flipped GCM ciphertext byte (first, middle, last before the tag) fails the tag check."""
    data = ciphertext(CIPHER_GCM)
    data[position] ^= 0x01
    with pytest.raises(AuthenticationError):
        decrypt_and_verify(CIPHER_GCM, bytes(data))


@pytest.mark.parametrize("position", [-16, -1])
def test_tampered_gcm_tag_fails_authentication(position: int) -> None:
    """A flipped byte in the GCM tag itself raises AuthenticationError."""
    data = ciphertext(CIPHER_GCM)
    data[position] ^= 0x80
    with pytest.raises(AuthenticationError):
        decrypt_and_verify(CIPHER_GCM, bytes(data))


@pytest.mark.parametrize("missing", [1, 15])
def test_cbc_not_a_whole_number_of_blocks_is_a_padding_error(missing: int) -> None:
    """A CBC file cut mid-block is refused as PaddingError, whatever the chunking."""
    data = bytes(ciphertext(CIPHER_CBC)[:-missing])
    for cut in (1, 64, len(data)):
        with pytest.raises(PaddingError, match="16-byte blocks"):
            decrypt_and_verify(CIPHER_CBC, data, cut)


def test_cbc_cut_at_a_block_boundary_is_refused() -> None:
    """A CBC file missing its last whole block fails the padding or, failing that, the size."""
    data = bytes(ciphertext(CIPHER_CBC)[:-16])
    with pytest.raises((PaddingError, SizeMismatchError)):
        decrypt_and_verify(CIPHER_CBC, data)


@pytest.mark.parametrize("missing", [1, 16, 17, 500])
def test_truncated_gcm_fails_authentication(missing: int) -> None:
    """A GCM file missing bytes from its end no longer authenticates."""
    with pytest.raises(AuthenticationError):
        decrypt_and_verify(CIPHER_GCM, bytes(ciphertext(CIPHER_GCM)[:-missing]))


@pytest.mark.parametrize(("cipher", "length"), [(CIPHER_GCM, 0), (CIPHER_GCM, 15), (CIPHER_CBC, 0)])
def test_ciphertext_too_short_to_be_valid_is_truncated(cipher: str, length: int) -> None:
    """GCM shorter than its tag, or CBC with no block at all, raises TruncatedError."""
    with pytest.raises(TruncatedError):
        decrypt_and_verify(cipher, bytes(ciphertext(cipher)[:length]))


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
@pytest.mark.parametrize("extra", [b"\x00", b"\x10" * 16, b"x" * 100])
def test_extra_bytes_appended_are_refused(cipher: str, extra: bytes) -> None:
    """Bytes appended after a valid file make it fail, never pass as longer plaintext."""
    with pytest.raises(PermanentError):
        decrypt_and_verify(cipher, bytes(ciphertext(cipher)) + extra)


def test_extra_bytes_appended_to_gcm_fail_authentication() -> None:
    """Appended bytes shift where GCM's tag is read: AuthenticationError."""
    with pytest.raises(AuthenticationError):
        decrypt_and_verify(CIPHER_GCM, bytes(ciphertext(CIPHER_GCM)) + b"\x00" * 16)


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_decrypt_errors_never_reveal_key_iv_or_plaintext(cipher: str) -> None:
    """Messages of decrypt failures contain no key, IV or plaintext bytes in any encoding."""
    data = ciphertext(cipher)
    data[-1] ^= 0x01
    with pytest.raises(PermanentError) as caught:
        decrypt_and_verify(cipher, bytes(data))
    message = caught.value.error_message
    for secret in (KEY, IV[cipher], PLAINTEXT[-16:]):
        for form in (secret.hex(), repr(secret), secret.decode("latin-1")):
            assert form not in message

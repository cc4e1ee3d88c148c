"""The provider's encryption format (docs/ARCHITECTURE.md): ciphers, IV and key sizes, ciphertext length.

A file is AES-256-CBC (PKCS7) or AES-256-GCM (16-byte tag after the ciphertext); its AES key
is wrapped with our RSA public key (OAEP, SHA-256, MGF1-SHA256) and sent base64, as is the IV.
These are the contract's numbers only: the encrypt side (the stub provider) and the decrypt side
(dlpipe.adapters.crypto) each implement the format with code of their own.
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never

from dlpipe.domain.download_errors import UnknownCipherError


class Cipher(StrEnum):
    """The ciphers a file may be encrypted with; the values are the provider's and the stored
    Cipher strings (never change one). A new cipher is a member here, its sizes below, and its
    branch in dlpipe.adapters.crypto (mypy refuses a match that leaves a member out)."""

    CBC = "AES-256-CBC"
    GCM = "AES-256-GCM"


CIPHER_CBC = Cipher.CBC
CIPHER_GCM = Cipher.GCM
SUPPORTED_CIPHERS: tuple[Cipher, ...] = tuple(Cipher)
IV_BYTES: dict[str, int] = {Cipher.CBC: 16, Cipher.GCM: 12}
AES_KEY_BYTES = 32
AES_BLOCK_BYTES = 16
GCM_TAG_BYTES = 16


class UnknownCipher(str):
    """A stored Cipher value that names no Cipher: kept as written ("" on the error job of a
    refused listing entry), so the job stays readable and can end `error`; require_cipher
    refuses it, and nothing decrypts it as another cipher. A str, so views show it as is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"UnknownCipher({str.__repr__(self)})"


NO_CIPHER = UnknownCipher("")  # the error job of a listing entry that was refused


def read_cipher(value: object) -> Cipher | UnknownCipher:
    """A stored Cipher value: its member, or the value kept as unknown (never a default)."""
    if isinstance(value, str) and value in SUPPORTED_CIPHERS:
        return Cipher(value)
    return UnknownCipher(str(value))


def require_cipher(value: Cipher | UnknownCipher | str) -> Cipher:
    """The Cipher `value` names; UnknownCipherError (code unknown_cipher) for anything else."""
    if isinstance(value, Cipher):
        return value
    # An UnknownCipher was refused when it was read, whatever it says.
    if not isinstance(value, UnknownCipher) and value in SUPPORTED_CIPHERS:
        return Cipher(value)
    expected = ", ".join(SUPPORTED_CIPHERS)
    raise UnknownCipherError(f"unsupported cipher {str(value)!r:.40}; expected one of {expected}")


def ciphertext_size(cipher: Cipher | str, plaintext_size: int) -> int:
    """Exact ciphertext size for a plaintext of `plaintext_size` bytes (for Content-Length
    checks); ValueError for a value that names no Cipher."""
    match Cipher(cipher):
        case Cipher.CBC:
            return (plaintext_size // AES_BLOCK_BYTES + 1) * AES_BLOCK_BYTES
        case Cipher.GCM:
            return plaintext_size + GCM_TAG_BYTES
        case unhandled:
            assert_never(unhandled)

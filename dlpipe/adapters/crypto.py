"""Decrypt side of the provider's format: unwrap the AES key, stream-decrypt, verify.

Streaming keeps memory bounded by the chunk size whatever the file size. Plaintext returned
by `StreamDecryptor.update` is NOT verified: the GCM tag is checked only by `finalize`, and
CBC has no integrity check beyond its padding, so only the SHA-256 proves it. Callers must
not publish anything before `finalize` and `PlaintextVerifier.verify` both succeed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections import deque
from typing import Protocol, assert_never

from cryptography.exceptions import InvalidTag, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.padding import MGF1, OAEP
from cryptography.hazmat.primitives.ciphers import Cipher as CipherContext
from cryptography.hazmat.primitives.ciphers import algorithms, modes

from dlpipe.domain.cipher_format import (
    AES_BLOCK_BYTES,
    AES_KEY_BYTES,
    GCM_TAG_BYTES,
    IV_BYTES,
    Cipher,
    UnknownCipher,
    require_cipher,
)
from dlpipe.domain.download_errors import (
    AuthenticationError,
    ChecksumMismatchError,
    InvalidIVError,
    InvalidMetadataError,
    InvalidPrivateKeyError,
    MalformedKeyMaterial,
    PaddingError,
    SizeMismatchError,
    TruncatedError,
    WrongKeyError,
)

# The key wrap (docs/ARCHITECTURE.md): RSA-OAEP with SHA-256 and MGF1-SHA256, no label.
_OAEP_SHA256 = OAEP(mgf=MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)

_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


class StreamDecryptor(Protocol):
    """Incremental decryptor: `update` per ciphertext chunk, then `finalize` once."""

    def update(self, chunk: bytes) -> bytes:
        """Decrypt a chunk; the output is unverified and may lag behind by one chunk."""
        ...

    def finalize(self) -> bytes:
        """Return the rest of the plaintext after checking padding (CBC) or tag (GCM)."""
        ...


def load_private_key(pem: bytes, password: bytes | None = None) -> rsa.RSAPrivateKey:
    """Load our RSA private key from PEM; InvalidPrivateKeyError if it is not one."""
    try:
        key = serialization.load_pem_private_key(pem, password=password)
    except TypeError as exc:
        raise InvalidPrivateKeyError(
            "could not load the RSA private key: a password was given for an unencrypted key,"
            " or is missing for an encrypted one"
        ) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InvalidPrivateKeyError(
            "could not load the RSA private key: not a PEM private key, or wrong password"
        ) from exc
    if not isinstance(key, rsa.RSAPrivateKey):
        raise InvalidPrivateKeyError(f"expected an RSA private key, got {type(key).__name__}")
    return key


def unwrap_aes_key(private_key: rsa.RSAPrivateKey, encrypted_key_b64: str) -> bytes:
    """Unwrap the base64 RSA-OAEP-SHA256 wrapped AES-256 key."""
    try:
        wrapped = base64.b64decode(encrypted_key_b64.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MalformedKeyMaterial("the encrypted AES key is not valid base64") from exc
    if not wrapped:
        raise MalformedKeyMaterial("the encrypted AES key is empty")
    if len(wrapped) != private_key.key_size // 8:
        raise WrongKeyError(
            f"the wrapped AES key is {len(wrapped)} bytes but our RSA key unwraps"
            f" {private_key.key_size // 8}: wrapped for a different key, or corrupted"
        )
    try:
        key = private_key.decrypt(wrapped, _OAEP_SHA256)
    except ValueError as exc:
        raise WrongKeyError() from exc
    if len(key) != AES_KEY_BYTES:
        raise MalformedKeyMaterial(
            f"the unwrapped AES key is {len(key)} bytes, AES-256 needs {AES_KEY_BYTES}"
        )
    return key


# What a job carries: a Cipher, or the stored value of an unknown one (refused here).
CipherValue = Cipher | UnknownCipher


def decode_iv(iv_b64: str, cipher: CipherValue) -> bytes:
    """Decode a base64 IV/nonce and check its length for `cipher` (CBC 16, GCM 12)."""
    expected = IV_BYTES[require_cipher(cipher)]
    try:
        iv = base64.b64decode(iv_b64.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidIVError("the IV is not valid base64") from exc
    if len(iv) != expected:
        raise InvalidIVError(f"{cipher} needs a {expected}-byte IV, got {len(iv)} bytes")
    return iv


def new_decryptor(cipher: CipherValue, key: bytes, iv: bytes) -> StreamDecryptor:
    """A streaming decryptor for `cipher` with a raw 32-byte key and raw IV; any value that
    is not a Cipher member is refused (unknown_cipher), never decrypted as another cipher."""
    known = require_cipher(cipher)
    if len(iv) != IV_BYTES[known]:
        raise InvalidIVError(f"{known} needs a {IV_BYTES[known]}-byte IV, got {len(iv)} bytes")
    if len(key) != AES_KEY_BYTES:
        raise MalformedKeyMaterial(f"AES-256 needs a {AES_KEY_BYTES}-byte key, got {len(key)}")
    match known:
        case Cipher.CBC:
            return CbcDecryptor(key, iv)
        case Cipher.GCM:
            return GcmDecryptor(key, iv)
        case unhandled:  # a new member without its branch: mypy and this line refuse it
            assert_never(unhandled)


def open_decryptor(
    private_key: rsa.RSAPrivateKey, cipher: CipherValue, encrypted_key_b64: str, iv_b64: str
) -> StreamDecryptor:
    """A decryptor straight from a job's fields; checks the cheap inputs before the RSA unwrap."""
    iv = decode_iv(iv_b64, cipher)
    return new_decryptor(cipher, unwrap_aes_key(private_key, encrypted_key_b64), iv)


class CbcDecryptor:
    """AES-256-CBC with PKCS7: the newest plaintext is held back, as it ends with the padding."""

    def __init__(self, key: bytes, iv: bytes) -> None:
        self._ctx = CipherContext(algorithms.AES(key), modes.CBC(iv)).decryptor()
        # Holding the whole last output (not just its final block) means update() returns
        # the library's bytes untouched: no slicing or joining copy per chunk.
        self._held = b""

    def update(self, chunk: bytes) -> bytes:
        """Decrypt a chunk; returns the previous chunk's plaintext (not yet unpadded)."""
        out = self._ctx.update(chunk)
        if not out:
            return b""
        ready, self._held = self._held, out
        return ready

    def finalize(self) -> bytes:
        """Return the held plaintext minus its PKCS7 padding; PaddingError if invalid."""
        held, self._held = self._held, b""
        try:
            self._ctx.finalize()
        except ValueError as exc:
            raise PaddingError(
                "CBC ciphertext is not a whole number of 16-byte blocks: truncated or tampered"
            ) from exc
        if not held:
            raise TruncatedError("CBC ciphertext is empty: at least one padded block is needed")
        unpadder = padding.PKCS7(AES_BLOCK_BYTES * 8).unpadder()
        try:
            last = unpadder.update(held[-AES_BLOCK_BYTES:]) + unpadder.finalize()
        except ValueError as exc:
            raise PaddingError() from exc
        return b"".join((memoryview(held)[:-AES_BLOCK_BYTES], last))


class GcmDecryptor:
    """AES-256-GCM whose last 16 bytes are the tag: the newest ciphertext is held back."""

    def __init__(self, key: bytes, iv: bytes) -> None:
        self._ctx = CipherContext(algorithms.AES(key), modes.GCM(iv)).decryptor()
        # Ciphertext not yet fed to the context: as few whole chunks as keep >= 16 bytes,
        # since those bytes may be the tag. Whole chunks, so update() never copies.
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0

    def update(self, chunk: bytes) -> bytes:
        """Decrypt what is surely not the tag; the output is unauthenticated until finalize."""
        if not chunk:
            return b""
        # A reference is kept until the next call: a caller's reused buffer must not change it.
        piece = chunk if type(chunk) is bytes else bytes(chunk)
        self._pending.append(piece)
        self._pending_bytes += len(piece)
        out: list[bytes] = []
        while self._pending_bytes - len(self._pending[0]) >= GCM_TAG_BYTES:
            ready = self._pending.popleft()
            self._pending_bytes -= len(ready)
            out.append(self._ctx.update(ready))
        return out[0] if len(out) == 1 else b"".join(out)

    def finalize(self) -> bytes:
        """Check the tag and return the remaining plaintext; AuthenticationError if it fails."""
        if self._pending_bytes < GCM_TAG_BYTES:
            raise TruncatedError(
                f"GCM ciphertext is shorter than its {GCM_TAG_BYTES}-byte tag: truncated"
            )
        tail = memoryview(b"".join(self._pending))
        self._pending.clear()
        self._pending_bytes = 0
        plaintext = self._ctx.update(tail[:-GCM_TAG_BYTES])
        try:
            return plaintext + self._ctx.finalize_with_tag(bytes(tail[-GCM_TAG_BYTES:]))
        except InvalidTag as exc:
            raise AuthenticationError() from exc


class PlaintextVerifier:
    """Counts and hashes plaintext; refuses it as soon as it outgrows the declared size."""

    def __init__(self, expected_size: int | None, expected_sha256: str | None) -> None:
        if expected_size is not None and expected_size < 0:
            raise InvalidMetadataError(f"declared size is negative: {expected_size}")
        if expected_sha256 is not None:
            expected_sha256 = expected_sha256.strip().lower()
            if not _SHA256_HEX.match(expected_sha256):
                raise InvalidMetadataError("declared SHA-256 is not 64 hex digits")
        self._expected_size = expected_size
        self._expected_sha256 = expected_sha256
        self._hash = hashlib.sha256()
        self._count = 0

    @property
    def byte_count(self) -> int:
        """Plaintext bytes seen so far."""
        return self._count

    @property
    def sha256_hex(self) -> str:
        """SHA-256 (hex) of the plaintext seen so far."""
        return self._hash.hexdigest()

    def update(self, data: bytes) -> None:
        """Count and hash `data`; SizeMismatchError at once if the total exceeds the size."""
        self._count += len(data)
        if self._expected_size is not None and self._count > self._expected_size:
            raise SizeMismatchError(self._expected_size, self._count, complete=False)
        self._hash.update(data)

    def verify(self) -> None:
        """Check the final size, then the SHA-256, against what was declared."""
        if self._expected_size is not None and self._count != self._expected_size:
            raise SizeMismatchError(self._expected_size, self._count)
        if self._expected_sha256 is not None and self.sha256_hex != self._expected_sha256:
            raise ChecksumMismatchError(self._expected_sha256, self.sha256_hex)

"""What the stub provider publishes: deterministic plaintext, encrypted and streamed to S3.

Plaintext is generated, hashed, encrypted and uploaded chunk by chunk (multipart above 8 MiB),
so memory stays bounded by the transfer's part buffers whatever the file size.
"""

from __future__ import annotations

import hashlib
import io
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from boto3.s3.transfer import TransferConfig

from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM, SUPPORTED_CIPHERS, ciphertext_size
from dlpipe.domain.model import validate_entity
from dlpipe.local.stub.crypto import encrypt_chunks, new_aes_key, new_iv
from dlpipe.local.stub.faults import Faults, damage_ciphertext

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

CHUNK_BYTES = 1024 * 1024
MIB = 1024 * 1024
# Non-seekable uploads buffer whole parts: 2 in flight x 8 MiB bounds memory per upload.
_TRANSFER = TransferConfig(
    multipart_threshold=8 * MIB, multipart_chunksize=8 * MIB, max_concurrency=2
)

_DAY_ENTITIES = (
    "accounts", "positions", "trades", "prices", "fx_rates", "holdings", "orders",
    "settlements", "counterparties", "instruments", "corporate_actions", "benchmarks",
    "ratings", "cash_flows", "collateral", "exposures", "limits", "margins", "valuations",
    "risk_factors",
)  # fmt: skip
# Edge sizes first (empty, one byte, around the 16-byte block), then KiB, MiB, multipart.
_DAY_SIZES = (
    0, 1, 15, 16, 17, 255, 1000, 4096, 16_385, 65_537, 262_144, MIB - 1, MIB, MIB + 1,
    2 * MIB + 3, 3 * MIB + 5, 5 * MIB, 8 * MIB - 1, 8 * MIB + 1, 20 * MIB,
)  # fmt: skip


@dataclass(frozen=True)
class StubFileSpec:
    """One file the stub publishes every day."""

    entity: str
    size: int
    cipher: str

    def __post_init__(self) -> None:
        validate_entity(self.entity)  # it becomes an S3 key segment
        if self.size < 0 or self.cipher not in SUPPORTED_CIPHERS:
            raise ValueError(f"bad stub file spec {self.entity}: {self.size} {self.cipher}")


@dataclass(frozen=True)
class ExpectedFile:
    """What a correct download of a file must yield."""

    sha256: str
    size: int
    cipher: str


@dataclass(frozen=True)
class PublishedFile:
    """A file as stored: its object key, its AES key and IV, and its true plaintext digest."""

    spec: StubFileSpec
    object_key: str
    aes_key: bytes = field(repr=False)
    iv: bytes
    expected: ExpectedFile


def default_day(n_files: int = 20) -> list[StubFileSpec]:
    """A day of mixed CBC/GCM files from 0 bytes to 20 MiB (~45 MiB for the first 20)."""
    return [
        StubFileSpec(
            _DAY_ENTITIES[i] if i < len(_DAY_ENTITIES) else f"entity{i:04d}",
            _DAY_SIZES[i % len(_DAY_SIZES)],
            CIPHER_CBC if i % 2 == 0 else CIPHER_GCM,
        )
        for i in range(n_files)
    ]


def plaintext_chunks(seed: int, date: str, entity: str, size: int) -> Iterator[bytes]:
    """The file's plaintext: the same bytes for the same seed, date and entity."""
    # Not for secrecy: a fast, reproducible byte stream.
    rng = random.Random(f"{seed}/{date}/{entity}")  # noqa: S311
    for start in range(0, size, CHUNK_BYTES):
        yield rng.randbytes(min(CHUNK_BYTES, size - start))


def publish_file(
    s3: S3Client, bucket: str, key: str, spec: StubFileSpec, *, date: str, seed: int, faults: Faults
) -> PublishedFile:
    """Encrypt the file with a fresh AES key and IV and stream it to s3://bucket/key."""
    aes_key, iv = new_aes_key(), new_iv(spec.cipher)
    digest = hashlib.sha256()
    ciphertext = encrypt_chunks(
        _hashed(plaintext_chunks(seed, date, spec.entity, spec.size), digest),
        spec.cipher,
        aes_key,
        iv,
    )
    stored = damage_ciphertext(
        ciphertext, ciphertext_size(spec.cipher, spec.size), spec.entity, faults
    )
    reader = io.BufferedReader(_ChunkReader(stored), buffer_size=CHUNK_BYTES)
    s3.upload_fileobj(reader, bucket, key, Config=_TRANSFER)
    expected = ExpectedFile(digest.hexdigest(), spec.size, spec.cipher)
    return PublishedFile(spec, key, aes_key, iv, expected)


def _hashed(chunks: Iterable[bytes], digest: hashlib._Hash) -> Iterator[bytes]:
    for chunk in chunks:
        digest.update(chunk)
        yield chunk


class _ChunkReader(io.RawIOBase):
    """A readable raw stream over an iterator of byte chunks (for upload_fileobj)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

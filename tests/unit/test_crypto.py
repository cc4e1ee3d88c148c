"""Stream decryption: round trips through the provider's encryptor, whatever the chunking."""

from __future__ import annotations

import base64
import hashlib
import itertools
import random
import tracemalloc
from collections.abc import Iterable, Iterator
from typing import cast

import pytest

from dlpipe.adapters.crypto import (
    PlaintextVerifier,
    load_private_key,
    new_decryptor,
    open_decryptor,
)
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM, SUPPORTED_CIPHERS, ciphertext_size
from dlpipe.local.stub.crypto import (
    encrypt_bytes,
    encrypt_chunks,
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    new_iv,
    wrap_aes_key,
)

MIB = 1024 * 1024
SIZES = [0, 1, 15, 16, 17, MIB + 3]


def decrypt(cipher: str, key: bytes, iv: bytes, chunks: Iterable[bytes]) -> bytes:
    decryptor = new_decryptor(cipher, key, iv)
    out = [decryptor.update(chunk) for chunk in chunks]
    out.append(decryptor.finalize())
    return b"".join(out)


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    edges = [0, *sorted(set(cuts)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def random_split(data: bytes, rng: random.Random, max_chunk: int) -> list[bytes]:
    chunks, pos = [], 0
    while pos < len(data):
        step = rng.randint(1, max_chunk)
        chunks.append(data[pos : pos + step])
        pos += step
    return chunks


@pytest.fixture(scope="module")
def rsa_pems() -> tuple[bytes, bytes]:
    return generate_rsa_keypair(2048)


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
@pytest.mark.parametrize("size", SIZES)
def test_round_trip_in_one_chunk(cipher: str, size: int) -> None:
    """Decrypting the provider's ciphertext in one chunk returns the exact plaintext."""
    plaintext = random.Random(size).randbytes(size)
    key, iv = new_aes_key(), new_iv(cipher)
    ciphertext = encrypt_bytes(plaintext, cipher, key, iv)
    assert len(ciphertext) == ciphertext_size(cipher, size)
    assert decrypt(cipher, key, iv, [ciphertext]) == plaintext


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
@pytest.mark.parametrize("size", SIZES)
def test_round_trip_with_random_chunk_boundaries(cipher: str, size: int) -> None:
    """Random chunk boundaries (1 byte up to 2 blocks, or up to 64 KiB) change nothing."""
    rng = random.Random(1000 + size)
    plaintext = rng.randbytes(size)
    key, iv = new_aes_key(), new_iv(cipher)
    ciphertext = encrypt_bytes(plaintext, cipher, key, iv)
    max_chunk = 33 if size < 4096 else 65536
    for _ in range(3):
        assert decrypt(cipher, key, iv, random_split(ciphertext, rng, max_chunk)) == plaintext


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_round_trip_one_byte_at_a_time(cipher: str) -> None:
    """Feeding one byte per chunk (the tag split 16 ways for GCM) still round trips."""
    plaintext = random.Random(7).randbytes(100)
    key, iv = new_aes_key(), new_iv(cipher)
    ciphertext = encrypt_bytes(plaintext, cipher, key, iv)
    assert decrypt(cipher, key, iv, [bytes([b]) for b in ciphertext]) == plaintext


@pytest.mark.parametrize("tail", [1, 8, 15, 16, 17, 31, 32])
def test_gcm_round_trip_when_a_chunk_boundary_falls_near_the_tag(tail: int) -> None:
    """A GCM boundary inside, at, or just before the tag still authenticates and round trips."""
    plaintext = random.Random(tail).randbytes(1000)
    key, iv = new_aes_key(), new_iv(CIPHER_GCM)
    ciphertext = encrypt_bytes(plaintext, CIPHER_GCM, key, iv)
    cut = len(ciphertext) - tail
    chunks = split_at(ciphertext, [cut, cut + 1, 500])
    assert decrypt(CIPHER_GCM, key, iv, chunks) == plaintext


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_empty_chunks_are_ignored(cipher: str) -> None:
    """Empty chunks anywhere in the stream do not disturb decryption."""
    plaintext = b"accounts,2026-02-28\n" * 10
    key, iv = new_aes_key(), new_iv(cipher)
    ciphertext = encrypt_bytes(plaintext, cipher, key, iv)
    chunks = [b"", *split_at(ciphertext, [5, 64]), b"", b""]
    assert decrypt(cipher, key, iv, chunks) == plaintext


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_a_reused_mutable_input_buffer_does_not_corrupt_the_plaintext(cipher: str) -> None:
    """A caller that refills one bytearray for every chunk still gets the right plaintext."""
    plaintext = random.Random(3).randbytes(5000)
    key, iv = new_aes_key(), new_iv(cipher)
    ciphertext = encrypt_bytes(plaintext, cipher, key, iv)
    decryptor, buffer, out = new_decryptor(cipher, key, iv), bytearray(128), []
    for start in range(0, len(ciphertext), 128):
        piece = ciphertext[start : start + 128]
        buffer[:] = piece
        # Typed as bytes, but a bytearray reaching it at run time must not break it.
        out.append(decryptor.update(cast(bytes, buffer)))
    out.append(decryptor.finalize())
    assert b"".join(out) == plaintext


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_streamed_encryption_matches_one_shot_encryption(cipher: str) -> None:
    """The provider's chunked encryptor emits the same bytes as encrypting all at once."""
    rng = random.Random(11)
    plaintext = rng.randbytes(10_000)
    key, iv = new_aes_key(), new_iv(cipher)
    streamed = b"".join(encrypt_chunks(random_split(plaintext, rng, 700), cipher, key, iv))
    assert streamed == encrypt_bytes(plaintext, cipher, key, iv)


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_job_fields_decrypt_and_verify_end_to_end(
    cipher: str, rsa_pems: tuple[bytes, bytes]
) -> None:
    """Base64 wrapped key and IV, as a job holds them, decrypt and verify the provider's file."""
    private_pem, public_pem = rsa_pems
    plaintext = random.Random(5).randbytes(70_000)
    key, iv = new_aes_key(), new_iv(cipher)
    ciphertext = encrypt_bytes(plaintext, cipher, key, iv)
    decryptor = open_decryptor(
        load_private_key(private_pem),
        cipher,
        wrap_aes_key(load_public_key(public_pem), key),
        base64.b64encode(iv).decode(),
    )
    verifier = PlaintextVerifier(len(plaintext), hashlib.sha256(plaintext).hexdigest())
    for chunk in split_at(ciphertext, range(4096, len(ciphertext), 4096)):
        verifier.update(decryptor.update(chunk))
    verifier.update(decryptor.finalize())
    verifier.verify()
    assert verifier.byte_count == len(plaintext)


@pytest.mark.parametrize("cipher", [CIPHER_CBC, CIPHER_GCM])
def test_memory_stays_bounded_by_the_chunk_size_not_the_file_size(cipher: str) -> None:
    """Decrypting 32 MiB in 1 MiB chunks never holds more than a few chunks at once."""
    key, iv = new_aes_key(), new_iv(cipher)
    block = bytes(MIB)

    def plaintext_chunks() -> Iterator[bytes]:
        for _ in range(32):
            yield block

    tracemalloc.start()
    try:
        decryptor = new_decryptor(cipher, key, iv)
        verifier = PlaintextVerifier(32 * MIB, None)
        for chunk in encrypt_chunks(plaintext_chunks(), cipher, key, iv):
            verifier.update(decryptor.update(chunk))
        verifier.update(decryptor.finalize())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    verifier.verify()
    assert peak < 6 * MIB

"""The encrypt side of the provider's format, used by the stub provider and tests.

A file is AES-256-CBC (PKCS7) or AES-256-GCM (16-byte tag after the ciphertext); its AES key
is wrapped with our RSA public key (OAEP, SHA-256, MGF1-SHA256) and sent base64, as is the IV.
The format's numbers are the contract (dlpipe.domain.cipher_format); this encrypt side shares
no code with the downloader's decrypt side (dlpipe.adapters.crypto).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Iterator

from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.padding import MGF1, OAEP
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from dlpipe.domain.cipher_format import AES_BLOCK_BYTES, AES_KEY_BYTES, CIPHER_CBC, IV_BYTES


def oaep_sha256() -> OAEP:
    """The RSA-OAEP padding of the key wrap: SHA-256 with MGF1-SHA256, no label."""
    return OAEP(mgf=MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def generate_rsa_keypair(bits: int = 2048) -> tuple[bytes, bytes]:
    """New RSA key pair: (private PEM PKCS8 unencrypted, public PEM SubjectPublicKeyInfo)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_pem, public_pem


def load_public_key(pem: bytes) -> rsa.RSAPublicKey:
    """Load an RSA public key from PEM; ValueError if not PEM, TypeError if not RSA."""
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, rsa.RSAPublicKey):
        raise TypeError(f"expected an RSA public key, got {type(key).__name__}")
    return key


def wrap_aes_key(public_key: rsa.RSAPublicKey, key: bytes) -> str:
    """Wrap an AES-256 key with RSA-OAEP-SHA256 and return it base64-encoded."""
    _check_key(key)
    return base64.b64encode(public_key.encrypt(key, oaep_sha256())).decode("ascii")


def new_aes_key() -> bytes:
    """A fresh random AES-256 key."""
    return os.urandom(AES_KEY_BYTES)


def new_iv(cipher: str) -> bytes:
    """A fresh random IV (CBC, 16 bytes) or nonce (GCM, 12 bytes)."""
    return os.urandom(_iv_bytes(cipher))


def encrypt_chunks(chunks: Iterable[bytes], cipher: str, key: bytes, iv: bytes) -> Iterator[bytes]:
    """Encrypt a stream of plaintext chunks; CBC is PKCS7-padded, GCM ends with its tag."""
    _check_key(key)
    if len(iv) != _iv_bytes(cipher):
        raise ValueError(f"{cipher} needs a {_iv_bytes(cipher)}-byte IV, got {len(iv)}")
    if cipher == CIPHER_CBC:
        return _encrypt_cbc(chunks, key, iv)
    return _encrypt_gcm(chunks, key, iv)


def encrypt_bytes(plaintext: bytes, cipher: str, key: bytes, iv: bytes) -> bytes:
    """Encrypt a whole plaintext at once (tests and small files)."""
    return b"".join(encrypt_chunks([plaintext], cipher, key, iv))


def _encrypt_cbc(chunks: Iterable[bytes], key: bytes, iv: bytes) -> Iterator[bytes]:
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    padder = padding.PKCS7(AES_BLOCK_BYTES * 8).padder()
    for chunk in chunks:
        if out := encryptor.update(padder.update(chunk)):
            yield out
    yield encryptor.update(padder.finalize()) + encryptor.finalize()


def _encrypt_gcm(chunks: Iterable[bytes], key: bytes, iv: bytes) -> Iterator[bytes]:
    encryptor = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    for chunk in chunks:
        if out := encryptor.update(chunk):
            yield out
    yield encryptor.finalize() + encryptor.tag


def _iv_bytes(cipher: str) -> int:
    try:
        return IV_BYTES[cipher]
    except KeyError:
        raise ValueError(f"unsupported cipher {cipher!r:.40}") from None


def _check_key(key: bytes) -> None:
    if len(key) != AES_KEY_BYTES:
        raise ValueError(f"AES-256 needs a {AES_KEY_BYTES}-byte key, got {len(key)}")

"""The provider's encryption format (docs/ARCHITECTURE.md): ciphers, IV and key sizes, ciphertext length.

A file is AES-256-CBC (PKCS7) or AES-256-GCM (16-byte tag after the ciphertext); its AES key
is wrapped with our RSA public key (OAEP, SHA-256, MGF1-SHA256) and sent base64, as is the IV.
These are the contract's numbers only: the encrypt side (the stub provider) and the decrypt side
(dlpipe.adapters.crypto) each implement the format with code of their own.
"""

from __future__ import annotations

CIPHER_CBC = "AES-256-CBC"
CIPHER_GCM = "AES-256-GCM"
SUPPORTED_CIPHERS: tuple[str, ...] = (CIPHER_CBC, CIPHER_GCM)
IV_BYTES: dict[str, int] = {CIPHER_CBC: 16, CIPHER_GCM: 12}
AES_KEY_BYTES = 32
AES_BLOCK_BYTES = 16
GCM_TAG_BYTES = 16


def ciphertext_size(cipher: str, plaintext_size: int) -> int:
    """Exact ciphertext size for a plaintext of `plaintext_size` bytes (for Content-Length checks)."""
    if cipher == CIPHER_CBC:
        return (plaintext_size // AES_BLOCK_BYTES + 1) * AES_BLOCK_BYTES
    if cipher == CIPHER_GCM:
        return plaintext_size + GCM_TAG_BYTES
    raise ValueError(f"unsupported cipher {cipher!r:.40}")

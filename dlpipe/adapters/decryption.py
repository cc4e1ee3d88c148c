"""Our RSA private key at work for the download service (its Decryption port): a file's
stream decryptor from the job's wrapped key, IV and cipher, and the plaintext's size and
SHA-256 check. The key stays here; the service never sees a cryptography type."""

from __future__ import annotations

from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.crypto import PlaintextVerifier, StreamDecryptor, open_decryptor
from dlpipe.domain.cipher_format import Cipher, UnknownCipher


@dataclass(frozen=True)
class KeyDecryption:
    """Decrypts with `private_key`; its errors are the domain's download errors."""

    private_key: RSAPrivateKey = field(repr=False)

    def open_decryptor(
        self, cipher: Cipher | UnknownCipher, encrypted_key_b64: str, iv_b64: str
    ) -> StreamDecryptor:
        """A decryptor for one file; the cheap inputs are checked before the RSA unwrap."""
        return open_decryptor(self.private_key, cipher, encrypted_key_b64, iv_b64)

    def verifier(self, expected_size: int | None, expected_sha256: str | None) -> PlaintextVerifier:
        """Counts and hashes the plaintext against what the provider declared."""
        return PlaintextVerifier(expected_size, expected_sha256)

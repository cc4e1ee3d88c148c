"""Our RSA private key at work for the download service (its Decryption port): a file's
stream decryptor from the job's wrapped key, IV and cipher, and the plaintext's size and
SHA-256 check. The key stays here; the service never sees a cryptography type.

A wrapped key that does not unwrap (wrong_key) makes the key's source be read again
(adapters/keys.py, bounded) and the unwrap tried once more with a key read since; the error
that stays names the key that failed by its fingerprint, never the key.

A wrong_key met while the source may not be read again yet (the interval since its last
re-read not spent, and no re-read since this file's first refusal) is KeyRereadDueError: a
wrong_key that says when to try again (`reread_after_s`, the interval's rest), so the service
gives the file back rather than ending it `error` on a read that may predate a fix."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.crypto import PlaintextVerifier, StreamDecryptor, open_decryptor
from dlpipe.adapters.keys import KeySource, key_fingerprint
from dlpipe.adapters.reread import RereadDue
from dlpipe.domain.cipher_format import Cipher, UnknownCipher
from dlpipe.domain.download_errors import WrongKeyError


class KeyRereadDueError(WrongKeyError):
    """A wrong_key not answered yet by a fresh read of the key: try again in `reread_after_s`
    (whole seconds, at least 1), when the key's source is read again. Its code stays
    `wrong_key`: anything that does not know to wait ends the file as before."""

    code = "wrong_key"

    def __init__(self, message: str, reread_after_s: int) -> None:
        super().__init__(message)
        self.reread_after_s = reread_after_s


@dataclass(frozen=True)
class KeyDecryption:
    """Decrypts with `private_key` (a key, or a source read again after a wrong key); its
    errors are the domain's download errors."""

    private_key: RSAPrivateKey | KeySource = field(repr=False)

    def open_decryptor(
        self, cipher: Cipher | UnknownCipher, encrypted_key_b64: str, iv_b64: str
    ) -> StreamDecryptor:
        """A decryptor for one file; the cheap inputs are checked before the RSA unwrap."""
        if isinstance(self.private_key, RSAPrivateKey):
            key, source = self.private_key, None
        else:
            source = self.private_key
            key = source.value
        try:
            return open_decryptor(key, cipher, encrypted_key_b64, iv_b64)
        except WrongKeyError as exc:
            try:
                newer = (
                    source.newer_than(key, refused=encrypted_key_b64)
                    if source is not None
                    else None
                )
            except RereadDue as due:
                reread_after_s = max(1, math.ceil(due.in_s))
                message = f"{_naming(exc, key)}; {due}"
                raise KeyRereadDueError(message, reread_after_s) from exc
            if newer is None:
                raise _naming(exc, key) from exc
        try:
            return open_decryptor(newer, cipher, encrypted_key_b64, iv_b64)
        except WrongKeyError as exc:
            raise _naming(exc, newer) from exc

    def verifier(self, expected_size: int | None, expected_sha256: str | None) -> PlaintextVerifier:
        """Counts and hashes the plaintext against what the provider declared."""
        return PlaintextVerifier(expected_size, expected_sha256)


def _naming(exc: WrongKeyError, key: RSAPrivateKey) -> WrongKeyError:
    return WrongKeyError(f"{exc} (our key {key_fingerprint(key)})")

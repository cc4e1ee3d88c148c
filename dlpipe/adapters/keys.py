"""Our RSA private key, from Secrets Manager (AWS) or a PEM file (local), loaded once per process."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.crypto import load_private_key
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.redaction import register_secret
from dlpipe.secret_files import SecretFileError, read_secret_file

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients

_lock = threading.Lock()
_cache: dict[str, RSAPrivateKey] = {}


def private_key_from_settings(settings: Settings, clients: AwsClients) -> RSAPrivateKey:
    """The key named by the settings (the secret wins over the file), cached by its source.

    The cache key is the source itself (`secret:ID` or `file:PATH`), never a feed or a slot:
    a feed's settings name exactly one source (dlpipe/feed_settings.py clears the other), so
    two feeds share a key object only when they name the same secret or file.
    """
    if settings.private_key_secret_id:
        source = f"secret:{settings.private_key_secret_id}"
    elif settings.private_key_file:
        source = f"file:{settings.private_key_file}"
    else:
        raise ConfigError(
            "no RSA private key configured: set DLPIPE_PRIVATE_KEY_SECRET or DLPIPE_PRIVATE_KEY_FILE"
        )
    with _lock:
        if source not in _cache:
            pem = _read_pem(settings, clients)
            register_secret(pem)  # no error or log line may quote it (domain/redaction.py)
            _cache[source] = load_private_key(pem)
        return _cache[source]


def _read_pem(settings: Settings, clients: AwsClients) -> bytes:
    if settings.private_key_secret_id:
        secret = clients.secretsmanager.get_secret_value(SecretId=settings.private_key_secret_id)
        if "SecretString" in secret:
            return secret["SecretString"].encode("utf-8")
        return bytes(secret["SecretBinary"])
    path = str(settings.private_key_file)
    try:
        return read_secret_file(path)
    except SecretFileError as exc:
        raise ConfigError(f"the RSA private key file {path!a} {exc}") from None


def clear_cache() -> None:
    """Forget loaded keys (tests; a rotated secret is picked up by new processes anyway)."""
    with _lock:
        _cache.clear()

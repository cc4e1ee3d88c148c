"""Our RSA private key, from Secrets Manager (AWS) or a PEM file (local): read once per source
and process, and read again when a file's AES key does not unwrap with it (adapters/reread.py),
so a restored or rotated key reaches a running worker or warm Lambda without a restart.

Secrets Manager unavailable (throttled, 5xx, timing out, not reachable) is a dependency
outage (DependencyUnavailableError): the file that needed the key waits it out, as for
DynamoDB. At a process's start (`defer_outage`) it is one warning line and the key is read
on its first use instead, so a brief outage never stops a worker from starting. Anything
else Secrets Manager refuses (access denied, no such secret) is AwsRequestError, in one line;
a value that is not a key, InvalidPrivateKeyError."""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from dlpipe.adapters.aws_errors import raise_request_error
from dlpipe.adapters.crypto import load_private_key
from dlpipe.adapters.reread import SECRETS_MANAGER, Rereadable, get_secret
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.domain.redaction import register_secret
from dlpipe.log import get_logger
from dlpipe.secret_files import SecretFileError, read_secret_file

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients

log = get_logger()
KeySource = Rereadable[RSAPrivateKey]
_FINGERPRINT_HEX = 12
_lock = threading.Lock()
_cache: dict[str, KeySource] = {}


def key_fingerprint(key: RSAPrivateKey) -> str:
    """The key's public half, named: the first 12 hex digits of the SHA-256 of its DER
    SubjectPublicKeyInfo (`openssl pkey -in KEY.pem -pubout -outform DER | sha256sum`)."""
    der = key.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[:_FINGERPRINT_HEX]


def same_key(a: RSAPrivateKey, b: RSAPrivateKey) -> bool:
    """The same key pair (by its public half), whatever objects hold it."""
    return a is b or key_fingerprint(a) == key_fingerprint(b)


def key_source_from_settings(
    settings: Settings, clients: AwsClients, *, defer_outage: bool = False
) -> KeySource:
    """The key named by the settings (the secret wins over the file), one per source.

    The cache key is the source itself (`secret:ID` or `file:PATH`), never a feed or a slot:
    a feed's settings name exactly one source (dlpipe/feed_settings.py clears the other), so
    two feeds share a key (and its re-reads) only when they name the same secret or file.

    Its first read's errors are the caller's; with `defer_outage` (a process's start) an
    outage is instead logged once (`secret.unavailable`) and the key read on first use.
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
            _cache[source] = _source(settings, clients, source, defer_outage=defer_outage)
        return _cache[source]


def _source(
    settings: Settings, clients: AwsClients, where: str, *, defer_outage: bool
) -> KeySource:
    def read() -> RSAPrivateKey:
        return _load(settings, clients)

    def rereadable(*, deferred: bool) -> KeySource:
        return Rereadable(
            read,
            where=where,
            same=same_key,
            interval_s=settings.secret_reread_seconds,
            deferred=deferred,
        )

    try:
        return rereadable(deferred=False)
    except DependencyUnavailableError as exc:
        if not defer_outage:
            raise
        log.warning(
            "secret.unavailable",
            source=where,
            dependency=exc.dependency,
            error=str(exc),
            then="read again when the first file needs the key",
        )
        return rereadable(deferred=True)


def private_key_from_settings(settings: Settings, clients: AwsClients) -> RSAPrivateKey:
    """The key the settings name, as it was last read."""
    return key_source_from_settings(settings, clients).value


def _load(settings: Settings, clients: AwsClients) -> RSAPrivateKey:
    pem = _read_pem(settings, clients)
    register_secret(pem)  # no error or log line may quote it (domain/redaction.py)
    return load_private_key(pem)


def _read_pem(settings: Settings, clients: AwsClients) -> bytes:
    secret_id = settings.private_key_secret_id
    if secret_id:
        try:
            secret = get_secret(clients.secretsmanager, secret_id)
        except (ClientError, BotoCoreError) as exc:  # not an outage: get_secret raised that
            raise_request_error(exc, SECRETS_MANAGER, "GetSecretValue", secret_id)
        if "SecretString" in secret:
            return secret["SecretString"].encode("utf-8")
        return bytes(secret["SecretBinary"])
    path = str(settings.private_key_file)
    try:
        return read_secret_file(path)
    except SecretFileError as exc:
        raise ConfigError(f"the RSA private key file {path!a} {exc}") from None


def clear_cache() -> None:
    """Forget loaded keys (tests, and the local stack between days with new key files)."""
    with _lock:
        _cache.clear()

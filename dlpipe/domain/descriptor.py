"""One file of the provider's contract: the FileDescriptor and its strict per-field parsing.

Every defect raises MalformedResponseError naming the field, e.g. "files[3].size: expected a
non-negative integer, got 'abc'". Messages never echo URLs or key material.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from dlpipe.domain.cipher_format import IV_BYTES, SUPPORTED_CIPHERS, Cipher
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import make_file_id, validate_entity
from dlpipe.domain.provider_errors import MalformedResponseError
from dlpipe.domain.redaction import carries_secret, redact

MAX_DECLARED_SIZE_BYTES = 50 * 1024**3  # larger is refused as a "huge declared size"
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class FileDescriptor:
    """One file as the provider describes it: where to fetch it and how to decrypt it."""

    entity: str
    date: str
    url: str = field(repr=False)  # presigned: its signature is a credential
    encrypted_key: str = field(repr=False)
    iv: str
    cipher: Cipher
    size: int | None
    sha256: str | None
    expires_at: str | None

    @property
    def file_id(self) -> str:
        """FileID = {entity}-{date}."""
        return make_file_id(self.entity, self.date)


def parse_file(item: object, day: str, where: str) -> FileDescriptor:
    """Parse one file object of date `day`; `where` ("files[3]") prefixes every message."""
    if not isinstance(item, dict):
        raise MalformedResponseError(f"{where}: expected a JSON object, got {kind(item)}")
    entity = _entity(item, where)  # first: a rejected file is best reported by its entity
    cipher = _cipher(item, where)
    return FileDescriptor(
        entity=entity,
        date=day,
        url=_url(item, where),
        encrypted_key=_base64(item, where, "encrypted_key"),
        iv=_iv(item, where, cipher),
        cipher=cipher,
        size=_size(item, where),
        sha256=_sha256(item, where),
        expires_at=_expires_at(item, where),
    )


def _required(item: dict[str, Any], where: str, name: str) -> object:
    if item.get(name) is None:
        raise MalformedResponseError(f"{where}.{name}: missing")
    return item[name]


def _string(item: dict[str, Any], where: str, name: str) -> str:
    value = _required(item, where, name)
    if not isinstance(value, str) or not value:
        raise MalformedResponseError(
            f"{where}.{name}: expected a non-empty string, got {kind(value)}"
        )
    return value


def _entity(item: dict[str, Any], where: str) -> str:
    value = _required(item, where, "entity")
    if isinstance(value, str) and carries_secret(value):
        raise MalformedResponseError(f"{where}.entity: carries a secret of ours, refused")
    if safe_entity(item) is None:
        raise MalformedResponseError(
            f"{where}.entity: expected 1-64 letters, digits, '_' or '-', got {show_value(value)}"
        )
    return str(value)


def safe_entity(item: object) -> str | None:
    """The item's entity if it is an object with a safe entity name, else None. A name that
    carries a registered secret (our token echoed back) is not safe: it would become a
    FileID, an S3 key, a manifest entry and a metric dimension."""
    value = item.get("entity") if isinstance(item, dict) else None
    # validate_entity's `$` lets one trailing newline through; a key segment must not have it.
    if isinstance(value, str) and (value.endswith("\n") or carries_secret(value)):
        return None
    try:
        return validate_entity(value)
    except InvalidIdentifierError:
        return None


def _url(item: dict[str, Any], where: str) -> str:
    value = _string(item, where, "url")
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in {"http", "https"} or not parts.hostname:
        raise MalformedResponseError(f"{where}.url: expected an absolute http(s) URL")
    return value


def _base64(item: dict[str, Any], where: str, name: str) -> str:
    _decode(item, where, name)
    return str(item[name])


def _decode(item: dict[str, Any], where: str, name: str) -> bytes:
    try:
        return base64.b64decode(_string(item, where, name), validate=True)
    except (binascii.Error, ValueError):
        raise MalformedResponseError(f"{where}.{name}: expected base64") from None


def _iv(item: dict[str, Any], where: str, cipher: Cipher) -> str:
    length = len(_decode(item, where, "iv"))
    if length != IV_BYTES[cipher]:
        raise MalformedResponseError(
            f"{where}.iv: expected {IV_BYTES[cipher]} bytes for {cipher}, got {length}"
        )
    return str(item["iv"])


def _cipher(item: dict[str, Any], where: str) -> Cipher:
    # Refused here, by name: an unknown cipher never becomes a job that could be decrypted.
    value = _required(item, where, "cipher")
    if not isinstance(value, str) or value not in SUPPORTED_CIPHERS:
        raise MalformedResponseError(
            f"{where}.cipher: expected one of {', '.join(SUPPORTED_CIPHERS)}, got {show_value(value)}"
        )
    return Cipher(value)


def _size(item: dict[str, Any], where: str) -> int:
    value = _required(item, where, "size")
    # bool is an int subclass: `true` is not a size.
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedResponseError(
            f"{where}.size: expected a non-negative integer, got {show_value(value)}"
        )
    if value > MAX_DECLARED_SIZE_BYTES:
        raise MalformedResponseError(
            f"{where}.size: huge declared size {value} bytes (limit {MAX_DECLARED_SIZE_BYTES})"
        )
    return value


def _sha256(item: dict[str, Any], where: str) -> str:
    value = _required(item, where, "sha256")
    if not isinstance(value, str) or not _SHA256_HEX.fullmatch(value):
        raise MalformedResponseError(
            f"{where}.sha256: expected 64 hex digits, got {show_value(value)}"
        )
    return value.lower()


def _expires_at(item: dict[str, Any], where: str) -> str | None:
    value = item.get("expires_at")
    if value is None:
        return None
    if not isinstance(value, str) or not _is_iso8601(value):
        raise MalformedResponseError(
            f"{where}.expires_at: expected ISO 8601, got {show_value(value)}"
        )
    return value


def _is_iso8601(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def check_date(payload: dict[str, Any], expected: str, where: str) -> None:
    """Refuse a payload whose `date` is missing or is not the date that was asked for."""
    value = payload.get("date")
    if value is None:
        raise MalformedResponseError(f"{where}.date: missing")
    if value != expected:
        raise MalformedResponseError(
            f"{where}.date: expected {expected!r}, got {show_value(value)}"
        )


def kind(value: object) -> str:
    """The JSON-ish type name of `value`, for messages that must not echo it."""
    return "null" if value is None else type(value).__name__


def show_value(value: object) -> str:
    """`value` as a message may quote it: masked whole (a provider may echo our token), then
    cut: a cut first could leave a piece of a secret too short to be recognised."""
    text = redact(repr(value))
    return text if len(text) <= 40 else f"{text[:37]}..."

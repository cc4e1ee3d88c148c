"""The one redaction: text built from an error never carries a secret.

A library's error may quote what it was handed: an HTTP library the `Authorization` header
(`'Bearer <token>'`), a presigned URL its signature, a key loader its PEM. Every message that
becomes data (a job's ErrorMessage, a batch's outcome cause, the hand-off event's
`errors.cause`, a log line, a CLI error line, a web page) passes through `redact`, which masks

- the process's own secrets, registered when they are loaded (`register_secret`: the
  provider tokens, the private keys' PEM), wherever they appear, whole or line by line, raw
  or as Python's escaped `repr`;
- the shapes secrets take: `Bearer ...`, an `Authorization: ...` header, the values of a
  URL's query string (but for the harmless `X-Amz-Expires`, `-Date`, `-Algorithm`,
  `-SignedHeaders`), presigned-URL parameters anywhere, and PEM blocks (a cut one too).

Standard library only: the domain, the services, the adapters and the entry points all call it.
"""

from __future__ import annotations

import re
import threading

REDACTED = "***"

# The shortest piece of a registered secret that is masked on its own (a line of a PEM, a
# token): shorter ones would mask ordinary words.
MIN_SECRET_CHARS = 8

_PEM_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|$)", re.DOTALL)
_BEARER = re.compile(r"(?i)\b(Bearer|Basic)(\s+|\\[nrt]|%20)+[^\s'\",;)}\]]+")
_AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)[^'\"\r\n,}]+")
_SIGNED_PARAMS = re.compile(
    r"(?i)((?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|Signature|AWSAccessKeyId)"
    r"(?:=|%3D))[^&\s\"'<>]+"
)
_QUERY = re.compile(r"(https?://[^\s?#\"'<>]*\?)([^\s#\"'<>]*)", re.IGNORECASE)
_HARMLESS_PARAMS = frozenset(
    {"x-amz-expires", "x-amz-date", "x-amz-algorithm", "x-amz-signedheaders"}
)

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()


def register_secret(value: str | bytes | None) -> None:
    """Remember `value` as a secret of this process: `redact` masks it from now on, whole and
    each of its lines long enough to be told from ordinary text."""
    global _secrets  # noqa: PLW0603 - the process's one registry, swapped whole under a lock
    if value is None:
        return
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    pieces = {text.strip(), repr(text.strip())[1:-1]}
    pieces.update(line.strip() for line in text.splitlines())
    found = {p for p in pieces if len(p) >= MIN_SECRET_CHARS and "-----" not in p}
    if not found:
        return
    with _lock:
        _secrets = tuple(sorted(set(_secrets) | found, key=len, reverse=True))


def forget_secrets() -> None:
    """Forget every registered secret (tests)."""
    global _secrets  # noqa: PLW0603 - see register_secret
    with _lock:
        _secrets = ()


def _mask_query(match: re.Match[str]) -> str:
    params = []
    for param in match.group(2).split("&"):
        name, sep, _value = param.partition("=")
        keep = not sep or name.lower() in _HARMLESS_PARAMS
        params.append(param if keep else f"{name}={REDACTED}")
    return match.group(1) + "&".join(params)


def redact(text: object) -> str:
    """`text` with every registered secret and every secret-shaped part masked (`***`)."""
    out = str(text)
    for secret in _secrets:
        if secret in out:
            out = out.replace(secret, REDACTED)
    out = _PEM_BLOCK.sub("-----REDACTED PEM-----", out)
    out = _BEARER.sub(rf"\g<1> {REDACTED}", out)
    out = _AUTH_HEADER.sub(rf"\g<1>{REDACTED}", out)
    out = _QUERY.sub(_mask_query, out)
    return _SIGNED_PARAMS.sub(rf"\g<1>{REDACTED}", out)

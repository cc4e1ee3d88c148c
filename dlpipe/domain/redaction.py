"""The one redaction: text built from an error never carries a secret.

A library's error may quote what it was handed: an HTTP library the `Authorization` header
(`'Bearer <token>'`), a presigned URL its signature, a key loader its PEM, a provider our own
token echoed back (in a field, an error body, a URL's host). Every message that becomes data
(a job's ErrorMessage, a batch's outcome cause, the hand-off event's `errors.cause`, a log
line, a CLI error line, a web page) passes through `redact`, which masks

- the process's own secrets, registered when they are loaded (`register_secret`: the
  provider tokens, the private keys' PEM lines): any run of RUN_CHARS characters or more of
  one, in any letter case, raw, escaped (Python's `repr`, JSON), URL-encoded, as hex or as
  base64 (standard or URL-safe, padded or not, at any byte offset); a whole piece shorter
  than that (MIN_SECRET_CHARS up) only whole. A value cut short still carries such a run,
  so it is masked too, but callers mask before they cut (a cut may leave less than a run);
- the shapes secrets take: `Bearer ...`, an `Authorization: ...` header, the values of a
  URL's query string (but for the harmless `X-Amz-Expires`, `-Date`, `-Algorithm`,
  `-SignedHeaders`), presigned-URL parameters anywhere, and PEM blocks (a cut one too).

The needles are built once, at registration; a call looks up one short slice every
_GRAM_CHARS characters, and only around a hit the RUN_CHARS windows (bench/redaction_bench.py).
Standard library only: the domain, the services, the adapters and the entry points all call it.
"""

from __future__ import annotations

import base64
import json
import re
import string
import threading
from dataclasses import dataclass
from urllib.parse import quote, quote_plus, urlsplit

REDACTED = "***"

# The shortest piece of a registered secret that is masked on its own (a line of a PEM, a
# token): shorter ones would mask ordinary words.
MIN_SECRET_CHARS = 8
# Any run this long of a secret (or of one of its encodings) is masked wherever it appears:
# long enough never to be an ordinary word, short enough that a value cut to fit a message
# cannot carry most of a token out.
RUN_CHARS = 12
# Any RUN_CHARS run holds a whole _GRAM_CHARS slice starting at a multiple of _GRAM_CHARS:
# a call looks those up first and checks the windows only around a hit.
_GRAM_CHARS = RUN_CHARS // 2

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
# Letter case is ignored by lower-casing ASCII only: the text keeps its length, so a match's
# place in the lowered text is its place in the original.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@dataclass(frozen=True)
class _Needles:
    """What `redact` looks for, lower-cased: every RUN_CHARS window of every form of every
    secret (`runs`), their _GRAM_CHARS slices (`grams`), and the forms too short for a
    window (`whole`, longest first)."""

    runs: frozenset[str] = frozenset()
    grams: frozenset[str] = frozenset()
    whole: tuple[str, ...] = ()


_lock = threading.Lock()
_pieces: frozenset[str] = frozenset()
_needles = _Needles()


def _base64_forms(data: bytes) -> set[str]:
    """`data` base64-encoded (standard and URL-safe) whole, padded and not, and the part of
    its encoding that does not depend on its neighbours at each of the 3 byte offsets it may
    sit at inside a longer encoded value."""
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode()
        forms |= {whole, whole.rstrip("=")}
        for offset in (1, 2):
            encoded = encode(b"\0" * offset + data).decode().rstrip("=")
            # The first 4-char group mixes in the unknown bytes before; a trailing partial
            # group, those after.
            complete = (offset + len(data)) // 3 * 4
            forms.add(encoded[4:complete])
    return forms


def _forms(piece: str) -> set[str]:
    """The ways an echo of `piece` may be written."""
    data = piece.encode("utf-8", "surrogatepass")
    forms = {piece, repr(piece)[1:-1], json.dumps(piece)[1:-1]}
    forms |= {quote(piece, safe=""), quote_plus(piece), data.hex()}
    return forms | _base64_forms(data)


def _with(needles: _Needles, pieces: set[str]) -> _Needles:
    """`needles` and those of `pieces`."""
    runs, grams, whole = set(needles.runs), set(needles.grams), set(needles.whole)
    for piece in pieces:
        for form in _forms(piece):
            low = form.translate(_ASCII_LOWER)
            if len(low) >= RUN_CHARS:
                runs.update(low[i : i + RUN_CHARS] for i in range(len(low) - RUN_CHARS + 1))
                grams.update(low[i : i + _GRAM_CHARS] for i in range(len(low) - _GRAM_CHARS + 1))
            elif len(low) >= MIN_SECRET_CHARS:
                whole.add(low)
    return _Needles(frozenset(runs), frozenset(grams), tuple(sorted(whole, key=len, reverse=True)))


def register_secret(value: str | bytes | None) -> None:
    """Remember `value` as a secret of this process: `redact` masks it from now on (whole,
    each of its lines, any RUN_CHARS run of them, in the forms an echo takes)."""
    global _pieces, _needles  # noqa: PLW0603 - the process's one registry, swapped whole under a lock
    if value is None:
        return
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    pieces = {text.strip(), *(line.strip() for line in text.splitlines())}
    # A PEM's armour lines are the same in every key: only its body is secret.
    found = {p for p in pieces if len(p) >= MIN_SECRET_CHARS and "-----" not in p}
    with _lock:
        if found <= _pieces:
            return
        _needles = _with(_needles, found - _pieces)
        _pieces = _pieces | found


def forget_secrets() -> None:
    """Forget every registered secret (tests)."""
    global _pieces, _needles  # see register_secret
    with _lock:
        _pieces, _needles = frozenset(), _Needles()


def _secret_spans(text: str, needles: _Needles) -> list[tuple[int, int]]:
    """Where `text` carries a registered secret: (start, end) pairs, in order, may overlap."""
    low = text.translate(_ASCII_LOWER)
    spans: list[tuple[int, int]] = []
    if needles.runs:
        runs, grams, last = needles.runs, needles.grams, len(low) - RUN_CHARS
        for at in range(0, len(low) - _GRAM_CHARS + 1, _GRAM_CHARS):
            if low[at : at + _GRAM_CHARS] not in grams:
                continue
            # Every window that holds this slice starts within _GRAM_CHARS before it.
            for start in range(max(0, at - _GRAM_CHARS + 1), min(at, last) + 1):
                if low[start : start + RUN_CHARS] in runs:
                    spans.append((start, start + RUN_CHARS))
    for needle in needles.whole:
        start = low.find(needle)
        while start >= 0:
            spans.append((start, start + len(needle)))
            start = low.find(needle, start + 1)
    return sorted(spans)


def _mask_secrets(text: str) -> str:
    needles = _needles
    if not needles.runs and not needles.whole:
        return text
    spans = _secret_spans(text, needles)
    if not spans:
        return text
    out, kept_to, open_start, open_end = [], 0, spans[0][0], spans[0][1]
    for start, end in [*spans[1:], (len(text) + 1, len(text) + 1)]:
        if start <= open_end:  # overlapping or touching windows: one run
            open_end = max(open_end, end)
            continue
        out += [text[kept_to:open_start], REDACTED]
        kept_to, open_start, open_end = open_end, start, end
    return "".join([*out, text[kept_to:]])


def carries_secret(text: str) -> bool:
    """True if `text` holds a registered secret (any run `redact` would mask)."""
    return bool(_secret_spans(text, _needles))


def _mask_query(match: re.Match[str]) -> str:
    params = []
    for param in match.group(2).split("&"):
        name, sep, _value = param.partition("=")
        keep = not sep or name.lower() in _HARMLESS_PARAMS
        params.append(param if keep else f"{name}={REDACTED}")
    return match.group(1) + "&".join(params)


def redact(text: object) -> str:
    """`text` with every registered secret and every secret-shaped part masked (`***`)."""
    out = _mask_secrets(str(text))
    out = _PEM_BLOCK.sub("-----REDACTED PEM-----", out)
    out = _BEARER.sub(rf"\g<1> {REDACTED}", out)
    out = _AUTH_HEADER.sub(rf"\g<1>{REDACTED}", out)
    out = _QUERY.sub(_mask_query, out)
    return _SIGNED_PARAMS.sub(rf"\g<1>{REDACTED}", out)


def redact_data(value: object) -> object:
    """A JSON-like value (a result, an output) with every string in it redacted; keys, numbers
    and the rest as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(item) for item in value]
    return value


def redact_exception(error: BaseException) -> BaseException:
    """`error` with its arguments and text attributes redacted in place, its causes' too, and
    returned: what it says when printed, logged with its traceback or checkpointed."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.args = tuple(redact(a) if isinstance(a, str) else a for a in current.args)
        for name, attribute in list(vars(current).items()):
            if isinstance(attribute, str):
                try:
                    setattr(current, name, redact(attribute))
                except AttributeError:  # a read-only attribute: its text stays as it is
                    continue
        current = current.__cause__ or current.__context__
    return error


def url_origin(url: str) -> str:
    """What an operator is shown of a stored presigned URL: its scheme and host (and port),
    redacted; never its userinfo, path or query, which may carry a credential."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "?"
    if not parts.scheme or not parts.hostname:
        return "?" if url else ""
    return redact(f"{parts.scheme}://{parts.hostname}{port}")

"""Text bound for a person: a message cut to one line, and characters that must not reach a
terminal or a page as they are.

`escape_invisible` writes as an escape (`\\x1b`, `\\u202e`, `\\U000e0041`) every character
of the Unicode categories Cc (controls: ESC, BEL, 8-bit CSI), Cf (format: bidi marks,
embeddings, overrides and isolates, zero-width characters, soft hyphen, tag characters),
Zl and Zp (line and paragraph separators), Cs (lone surrogates, which no terminal or page
can encode), Co (private use: a font may draw anything there) and Cn (unassigned: what
it becomes is up to a later Unicode), and the fillers that draw as nothing (Hangul fillers,
U+180E). The CLI (dlpipe/cli/safe_text.py) and the web view (dlpipe/ui/present.py) both
call it: one escape set.
"""

from __future__ import annotations

import re
import unicodedata

from dlpipe.domain.redaction import redact

ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
# Letters (Lo) and a format character of old Unicode versions that render as blank space.
ESCAPED_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u180e")
_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")


def must_escape(char: str) -> bool:
    """True if `char` is written as an escape by `escape_invisible`."""
    return char in ESCAPED_FILLERS or unicodedata.category(char) in ESCAPED_CATEGORIES


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_invisible(text: str) -> str:
    """`text` with each control, format, separator, private-use, unassigned or filler
    character written as its escape; everything else as it is."""
    if text.isascii():  # the common case, without a per-character lookup
        return _ASCII_CONTROL.sub(lambda m: _escaped(m.group()), text)
    return "".join(_escaped(c) if must_escape(c) else c for c in text)


def one_line(text: str, limit: int = 300) -> str:
    """The first line of `text`, redacted (`domain/redaction.py`: no secret, no URL's query
    values), cut short."""
    lines = redact(str(text)).strip().splitlines()
    return (lines[0] if lines else "")[:limit] or "no reason given"

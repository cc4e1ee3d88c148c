"""Text from a provider or a job record, made safe to print on an operator's terminal.

Values such as an ErrorMessage, a cipher or an entity come from outside: rich must never read
them as markup (`[/]` would raise, `[link=...]` would become a live link), and a control
character in them (ESC, BEL, an 8-bit CSI, a bidi override) must never reach the terminal,
where it could retitle the window, clear the screen or hide text; nor may an invisible or
line-breaking character (U+2028, zero-width characters, bidi controls, tag characters,
fillers: dlpipe/domain/text.py's set) hide or reorder what follows.
`visible` writes each such character as a Python-style escape (`\\x1b`, `\\u2028`) after the
one redaction (`dlpipe/domain/redaction.py`: no secret reaches the terminal either); `plain`
wraps the result in a rich Text, which rich prints as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlpipe.domain.redaction import redact
from dlpipe.domain.text import escape_invisible

if TYPE_CHECKING:
    from rich.text import Text

ERROR_PREFIX = "dlpipe: "


def visible(value: object) -> str:
    """`value` as text, redacted, its invisible characters written as escapes (`\\x1b`):
    the one escape set, dlpipe/domain/text.py's."""
    return escape_invisible(redact(value))


def error_line(message: str) -> str:
    """The CLI's one error format, `dlpipe: <message>`, on one line with its control
    characters (a newline too) escaped: a message may quote a provider's value."""
    return f"{ERROR_PREFIX}{visible(message)}"


def plain(value: object, style: str = "") -> Text:
    """`value` as rich Text: never read as markup, control characters escaped."""
    from rich.text import Text  # noqa: PLC0415 - error lines need no rich (`dlpipe` starts sooner)

    return Text(visible(value), style=style)

"""A message cut to one line: what an error says in a log line, a batch item or the CLI."""

from __future__ import annotations

import re

_QUERY = re.compile(r"(https?://[^\s?\"'<>]*)\?[^\s\"'<>]*")


def one_line(text: str, limit: int = 300) -> str:
    """The first line of `text`, cut short, with any URL's query string removed (where a
    signature would be)."""
    lines = str(text).strip().splitlines()
    return _QUERY.sub(r"\1", lines[0] if lines else "")[:limit] or "no reason given"

"""A message cut to one line: what an error says in a log line, a batch item or the CLI."""

from __future__ import annotations

from dlpipe.domain.redaction import redact


def one_line(text: str, limit: int = 300) -> str:
    """The first line of `text`, redacted (`domain/redaction.py`: no secret, no URL's query
    values), cut short."""
    lines = redact(str(text)).strip().splitlines()
    return (lines[0] if lines else "")[:limit] or "no reason given"

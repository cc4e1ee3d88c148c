"""The one redaction (dlpipe/domain/redaction.py): registered secrets and secret shapes are
masked in every message built from an error, wherever that message goes."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from dlpipe.cli.safe_text import error_line, visible
from dlpipe.domain.download_errors import ProviderRejectedError
from dlpipe.domain.handoff_events import DayCounts, DayFacts, build_event
from dlpipe.domain.outcome import OutcomeTally
from dlpipe.domain.redaction import (
    REDACTED,
    RUN_CHARS,
    carries_secret,
    forget_secrets,
    redact,
    register_secret,
)
from dlpipe.domain.text import one_line

CANARY = "CANARYc4n4ry7oken"


@pytest.fixture(autouse=True)
def _no_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def test_a_registered_secret_is_masked_raw_escaped_and_line_by_line() -> None:
    """A token the HTTP library quotes as its repr (`\\n` escaped) or a key's body line on its
    own: none survives once the secret is registered."""
    secret = f"{CANARY}-part-one\n{CANARY}-part-two"
    register_secret(secret)
    for text in (
        secret,
        repr(secret),
        f"ValueError: bad header {secret!r}",
        f"x {CANARY}-part-two y",
    ):
        assert CANARY not in redact(text), text


def test_a_short_piece_of_a_secret_is_not_masked_as_a_word() -> None:
    register_secret("ab\nlonger-secret-line")
    assert redact("ab cd") == "ab cd"
    assert redact("the longer-secret-line") == "the ***"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"Invalid header value b'Bearer {CANARY}\\nmore'", "Invalid header value b'Bearer ***"),
        (f"headers={{'Authorization': 'Bearer {CANARY}'}}", "'Authorization': '***'"),
        (f"Authorization: token {CANARY}", "Authorization: ***"),
        (f"GET https://p.example/v1/files?apikey={CANARY}&page=2 failed", "?apikey=***&page=***"),
        (f"s3 https://b.s3/k?X-Amz-Signature={CANARY}&X-Amz-Expires=60", "X-Amz-Expires=60"),
        (f"X-Amz-Credential={CANARY}; X-Amz-Security-Token={CANARY}", "X-Amz-Credential=***"),
        (f"-----BEGIN PRIVATE KEY-----\n{CANARY}\n(cut)", "-----REDACTED PEM-----"),
    ],
)
def test_secret_shapes_are_masked_without_registering_anything(text: str, kept: str) -> None:
    masked = redact(text)
    assert CANARY not in masked
    assert kept in masked


def test_every_message_built_from_an_error_goes_through_it() -> None:
    """A job's ErrorMessage, one line of a log or an item, a batch's outcome cause, the
    hand-off event's errors.cause and a CLI line: one redaction, the same result."""
    register_secret(CANARY)
    quoted = f"Invalid header value 'x{CANARY}x'"
    assert CANARY not in ProviderRejectedError(quoted).error_message
    assert CANARY not in one_line(quoted)
    summary = OutcomeTally().summary(cause=quoted)
    assert summary.cause
    assert CANARY not in summary.cause
    facts = DayFacts(
        "vendor-b", "2026-02-28", "vendor-b.batch-2026-02-28-x", "failed",
        DayCounts(1, 0, 0, 1), outcome={"cause": quoted, "codes": []},
    )  # fmt: skip
    assert CANARY not in str(build_event("Day Failed", facts).detail)
    assert CANARY not in error_line(quoted)
    assert CANARY not in visible(quoted)


@pytest.mark.parametrize(
    "char", ["\u2028", "\u2029", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a",
             "\u202e", "\u2066", "\u2069", "\ufeff", "\x1b", "\x9b"],
)  # fmt: skip
def test_the_cli_escapes_invisible_and_line_breaking_characters(char: str) -> None:
    """One rule: U+2028/U+2029, zero-width characters, direction marks, overrides, isolates and
    the byte-order mark are written as escapes, as control characters are."""
    shown = visible(f"a{char}b")
    assert char not in shown
    assert f"\\u{ord(char):04x}" in shown or f"\\x{ord(char):02x}" in shown


TOKEN = "Tk9zQ8wL+P2vR7xY/N4cJ6hD1fG3s"  # 29 characters, like a provider token


def _echoes(token: str) -> dict[str, str]:
    """The ways a provider or a library has been seen to echo a token back."""
    raw = token.encode()
    return {
        "whole": token,
        "upper-cased": token.upper(),
        "lower-cased (a URL's host)": f"https://{token.lower()}.example/x",
        "26 of 29, cut": token[:26] + "...",
        "from the middle": token[5:19],
        "base64": base64.b64encode(raw).decode(),
        "base64, unpadded": base64.b64encode(raw).decode().rstrip("="),
        "base64 url-safe": base64.urlsafe_b64encode(raw).decode(),
        "base64 inside a longer value": base64.b64encode(b"user:" + raw + b"!").decode(),
        "URL-encoded": quote(token, safe=""),
        "URL-encoded, lower-case escapes": quote(token, safe="").lower(),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "JSON-escaped": json.dumps(token),
    }


@pytest.mark.parametrize("how", list(_echoes(TOKEN)))
def test_a_registered_token_is_masked_in_every_form_an_echo_takes(how: str) -> None:
    register_secret(TOKEN)
    echoed = _echoes(TOKEN)[how]
    masked = redact(f"provider_refused: listing.date: got {echoed!r} (page 1)")
    assert "provider_refused: listing.date: got" in masked
    assert REDACTED in masked
    for form in _echoes(TOKEN).values():
        for start in range(0, max(1, len(form) - RUN_CHARS + 1)):
            assert form[start : start + RUN_CHARS] not in masked, (how, masked)


def test_a_run_shorter_than_the_window_is_left_alone() -> None:
    """Ordinary text that shares a few characters with a token is not masked."""
    register_secret(TOKEN)
    text = f"files[0].entity {TOKEN[: RUN_CHARS - 1]} and {TOKEN[10:21]}"
    assert redact(text) == text


def test_a_pem_is_masked_line_by_line_and_in_its_encodings() -> None:
    lines = [base64.b64encode(bytes([n]) * 48).decode() for n in range(1, 6)]
    pem = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"
    register_secret(pem)
    for text in (lines[2], lines[3][:20], base64.b64encode(lines[1].encode()).decode()):
        assert redact(f"x {text} y") == f"x {REDACTED} y", text
    assert redact("a PRIVATE KEY-----") == "a PRIVATE KEY-----"  # the armour is no secret


def test_carries_secret_tells_a_name_made_of_a_secret() -> None:
    register_secret(TOKEN)
    assert carries_secret(TOKEN[3:20])
    assert carries_secret(f"entity_{TOKEN.lower()}")
    assert not carries_secret("positions")

"""`dlpipe run --local`'s final table prints a job's ErrorMessage as plain text: markup in it is
shown as written and control characters as escapes."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from dlpipe.cli.run_local import render_report
from dlpipe.local.day import DayReport, FileReport


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ("url_refused: [/] (host x)", "url_refused: [/] (host x)"),
        ("[link=https://evil.example/]click[/link]", "[link=https://evil.example/]click[/link]"),
        ("tag_mismatch: \x1b]0;pwned\x07", "tag_mismatch: \\x1b]0;pwned\\x07"),
    ],
)
def test_the_report_prints_an_error_message_as_written(error: str, shown: str) -> None:
    """A terminal console (links and colours on) gets the value escaped, never as markup."""
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=300, color_system=None)
    failed = FileReport("accounts-2026-02-28", "error", None, False, error)
    render_report(console, DayReport("batch-2026-02-28-x", "failed", [failed]))
    assert shown in sink.getvalue()
    assert "\x1b]" not in sink.getvalue()

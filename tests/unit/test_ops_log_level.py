"""The operator commands log warnings and errors only, unless DLPIPE_LOG_LEVEL asks for more:
their tables say what they did, and an INFO JSON line above a table (requeue's
`ops.requeued`) was noise."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dlpipe.cli.ops.context import context_from_env
from dlpipe.log import configure_logging, get_logger


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Settings enough to build the context (no AWS call is made); logging reset after."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DLPIPE_LOG_LEVEL", raising=False)
    yield monkeypatch
    configure_logging()


def test_an_operator_command_logs_no_info_line_by_default(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """INFO is quiet, a warning still reaches stderr."""
    context_from_env()
    get_logger(component="ops").info("ops.requeued", file_id="a-2026-02-27")
    get_logger(component="ops").warning("record.unreadable", file_id="b-2026-02-27")
    captured = capsys.readouterr()
    assert ("ops.requeued" in captured.err, "record.unreadable" in captured.err) == (False, True)
    assert captured.out == ""


def test_dlpipe_log_level_brings_the_info_lines_back(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """DLPIPE_LOG_LEVEL=INFO: the INFO line is logged, on stderr."""
    env.setenv("DLPIPE_LOG_LEVEL", "INFO")
    context_from_env()
    get_logger(component="ops").info("ops.requeued", file_id="a-2026-02-27")
    assert "ops.requeued" in capsys.readouterr().err

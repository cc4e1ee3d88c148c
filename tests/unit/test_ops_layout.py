"""FitTable: IDs and times whole at any width, columns dropped in their documented order."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dlpipe.cli.ops.layout import Column, FitTable
from dlpipe.cli.ops.render import emit

BATCH = "batch-2026-02-28-0b4a1a61-12a7-4b94-914a-fa3e0dc3e9b3"
COLUMNS = (
    Column("batch", "id"),
    Column("status"),
    Column("error", drop=1),
    Column("start", "time", drop=2),
)
ROW = (BATCH, "failed", "provider_unavailable: 503 after 7 attempts", "2026-02-28T04:00:00Z")


@pytest.fixture
def render(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[[int], str]:
    """What the ops commands print (render.emit) for the table at a terminal width."""

    def at(width: int) -> str:
        monkeypatch.setenv("COLUMNS", str(width))
        emit({}, [FitTable("batches", COLUMNS, [ROW])], as_json=False)
        return capsys.readouterr().out

    return at


@pytest.mark.parametrize("width", [30, 40, 60])
def test_a_terminal_narrower_than_an_id_still_prints_it_whole(
    render: Callable[[int], str], width: int
) -> None:
    """Below the never-dropped columns' width the lines run long; the BatchID is not cut."""
    assert BATCH in render(width).replace("\n", " ").split()


@pytest.mark.parametrize(
    ("width", "left_out"),
    [(200, None), (100, "start"), (80, "error, start")],
)
def test_columns_go_highest_drop_first_and_are_named(
    render: Callable[[int], str], width: int, left_out: str | None
) -> None:
    """`start` (drop 2) goes before `error` (drop 1); the line under the table names them."""
    out = render(width)
    if left_out is None:
        assert "left out" not in out
    else:
        assert f"columns: {left_out};" in out
    assert all(len(line) <= width for line in out.splitlines())

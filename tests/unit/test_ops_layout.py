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


def test_a_column_dropped_before_a_wider_one_is_put_back_when_it_fits(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batch audit` of a named feed at 80 columns: the 62-character BatchID goes, and the
    counts fit in the room it leaves (before: expected, completed and entries went first,
    then the BatchID, and none came back)."""
    from dlpipe.cli.ops.audit import _AUDIT_COLUMNS

    named = "vendor-b." + BATCH
    row = ("2026-02-28", "vendor-b", named, "completed", 12, 12, 12, 0)
    monkeypatch.setenv("COLUMNS", "80")
    emit({}, [FitTable("audit", _AUDIT_COLUMNS, [row])], as_json=False)
    out = capsys.readouterr().out
    heading = out.splitlines()[1].split()
    assert heading == ["date", "feed", "status", "expected", "completed", "entries", "problems"]
    assert "(left out at 80 columns: batch; see --json)" in out


def test_put_back_keeps_the_drop_order_when_only_some_fit() -> None:
    """Columns dropped on the way to a wide one come back lowest `drop` first, in their
    places, and only while they fit."""
    columns = (
        Column("id", "id"),
        Column("a", drop=1),
        Column("b", drop=2),
        Column("wide", "id", drop=3),
        Column("c", drop=4),
    )
    table = FitTable("t", columns, [("x" * 10, "a" * 12, "b" * 12, "w" * 40, "c" * 12)])
    # Everything: 10+12+12+40+12 + 8 = 94. Without `wide`: 52; 40 fits id, a and b (38).
    assert table._fitting(94) == [0, 1, 2, 3, 4]
    assert table._fitting(52) == [0, 1, 2, 4]
    assert table._fitting(40) == [0, 1, 2]
    assert table._fitting(30) == [0, 1]

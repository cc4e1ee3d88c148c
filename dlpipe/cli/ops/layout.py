"""Tables that fit the terminal and never break an identifier.

Each column has a kind and a drop priority:

- `id` and `time` columns (BatchIDs, FileIDs, timestamps) never wrap and are never cut: each
  value is one unbroken word on one line, whole for copying;
- `text` columns (error messages, counts, leases) wrap inside their column, which keeps at
  least 12 characters (less if no value is longer);
- when the columns do not fit the terminal's width, they are dropped one at a time, the
  highest `drop` number first (the least useful, e.g. owner or timeout), until the rest fit;
  a column with `drop` 0 (what names the row, and its status) is never dropped. A line under
  the table names the columns left out: a wider terminal or `--json` shows every field.

A table with no rows prints one line, `<title>: none`, instead of an empty frame. Every cell
is printed as plain text (dlpipe.cli.safe_text): never rich markup, control characters escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table

from dlpipe.cli.safe_text import plain, visible

TEXT_MIN_WIDTH = 12
_GAP = 2  # a column's right padding and the (blank) divider


@dataclass(frozen=True)
class Column:
    """A table column: its heading, kind (`id`, `time`, `text`) and drop priority."""

    name: str
    kind: Literal["id", "time", "text"] = "text"
    drop: int = 0  # 0: never dropped; otherwise the highest goes first


class FitTable:
    """A titled table laid out at render time for the console's width (see the module)."""

    def __init__(
        self, title: str, columns: Sequence[Column], rows: Iterable[Sequence[object]]
    ) -> None:
        self.title = title
        self.columns = list(columns)
        self.rows = [["-" if cell is None else visible(cell) for cell in row] for row in rows]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The title, the table of the columns that fit, and a line naming those left out."""
        if not self.rows:
            yield plain(f"{self.title}: none")
            return
        kept = self._fitting(options.max_width)
        yield plain(self.title, style="bold")
        view = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
        for index in kept:
            column = self.columns[index]
            if column.kind == "text":
                view.add_column(visible(column.name), overflow="fold")
            else:
                width = self._width(index)
                view.add_column(visible(column.name), no_wrap=True, min_width=width)
        for row in self.rows:
            view.add_row(*(plain(row[i]) for i in kept))
        yield view
        left_out = [self.columns[i].name for i in range(len(self.columns)) if i not in kept]
        if left_out:
            yield plain(
                f"(left out at {options.max_width} columns: {', '.join(left_out)}; see --json)",
                style="dim",
            )

    def _width(self, index: int) -> int:
        """The width column `index` needs: its longest value (and heading)."""
        heading = cell_len(self.columns[index].name)
        return max([heading, *(cell_len(row[index]) for row in self.rows)])

    def _min_width(self, index: int) -> int:
        full = self._width(index)
        return full if self.columns[index].kind != "text" else min(full, TEXT_MIN_WIDTH)

    def _fitting(self, max_width: int) -> list[int]:
        """The indexes of the columns kept: droppable ones go, highest `drop` first, until
        the minimum widths (and the gaps between columns) fit in `max_width`."""
        kept = list(range(len(self.columns)))
        order = sorted(
            (i for i in kept if self.columns[i].drop), key=lambda i: (-self.columns[i].drop, -i)
        )
        for index in order:
            needed = sum(self._min_width(i) for i in kept) + _GAP * (len(kept) - 1)
            if needed <= max_width:
                break
            kept.remove(index)
        return kept

"""Tables that fit the terminal and never break an identifier.

Each column has a kind (`id` and `time` values never wrap and are never cut; `text` wraps in
its column) and a drop priority: columns that do not fit are dropped, the highest `drop`
first (then any dropped one that fits in the room a wider one left is put back), and a line
under the table names them; `drop` 0 is never dropped. A record's fields (FieldList) are a
row each, name then value; an `id` or `time` value too long to sit beside the names goes
whole on a line of its own. An empty table prints `<title>: none`; cells are plain text
(dlpipe.cli.safe_text). The rules in full: docs/ARCHITECTURE.md, "Why operator tables never
cut an identifier".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from dlpipe.cli.safe_text import plain, visible

TEXT_MIN_WIDTH = 12
TEXT_WORD_WIDTH = 24  # a text column keeps a word up to this long whole when it can
_GAP = 2  # a column's right padding and the (blank) divider
ALONE_INDENT = "  "  # a FieldList value on a line of its own, under its field's name

Kind = Literal["id", "time", "text"]


@dataclass(frozen=True)
class Column:
    """A table column: its heading, kind (`id`, `time`, `text`) and drop priority."""

    name: str
    kind: Kind = "text"
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
        widths = self._widths(kept, options.max_width)
        for index in kept:
            name, text = visible(self.columns[index].name), self.columns[index].kind == "text"
            # Fixed widths: rich's own shrinking would cut IDs and split short words.
            view.add_column(name, width=widths[index], no_wrap=not text, overflow="fold")
        for row in self.rows:
            view.add_row(*(plain(row[i]) for i in kept))
        total = sum(widths.values()) + _GAP * (len(kept) - 1)
        # Narrower than the columns that are never dropped: lines longer than the terminal
        # (which shows them wrapped, and copies them whole) rather than a cut ID.
        yield from console.render(view, options.update_width(max(total, options.max_width)))
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
        """An ID's or time's whole width; for text, its longest word (up to a code such as
        `provider_unavailable:`), at least TEXT_MIN_WIDTH, never more than the text needs."""
        full = self._width(index)
        if self.columns[index].kind != "text":
            return full
        longest = max(cell_len(word) for row in self.rows for word in [*row[index].split(), ""])
        return min(full, max(TEXT_MIN_WIDTH, min(longest, TEXT_WORD_WIDTH)))

    def _widths(self, kept: list[int], max_width: int) -> dict[int, int]:
        """Each kept column's width: its minimum, then what is left of the line shared out
        to the text columns, left to right, up to their longest value."""
        widths = {i: self._min_width(i) for i in kept}
        spare = max_width - sum(widths.values()) - _GAP * (len(kept) - 1)
        for index in kept:
            extra = max(0, min(spare, self._width(index) - widths[index]))
            widths[index] += extra
            spare -= extra
        return widths

    def _needed(self, kept: Iterable[int]) -> int:
        """The minimum widths of the columns `kept`, and the gaps between them."""
        widths = [self._min_width(i) for i in kept]
        return sum(widths) + _GAP * (len(widths) - 1)

    def _fitting(self, max_width: int) -> list[int]:
        """The indexes of the columns kept: droppable ones go, highest `drop` first, until
        the minimum widths (and the gaps between columns) fit in `max_width`; then each one
        dropped that fits in the room a wider one left is put back, lowest `drop` first."""
        kept = list(range(len(self.columns)))
        order = sorted(
            (i for i in kept if self.columns[i].drop), key=lambda i: (-self.columns[i].drop, -i)
        )
        dropped: list[int] = []
        for index in order:
            if self._needed(kept) <= max_width:
                break
            kept.remove(index)
            dropped.append(index)
        for index in reversed(dropped):
            if self._needed([*kept, index]) <= max_width:
                kept = sorted([*kept, index])
        return kept


class FieldList:
    """One record, a field a row, laid out at render time for the console's width: the
    field's name, then its value beside it, in the column after the longest name. A `text`
    value wraps in that column; an `id` or `time` value is never wrapped or cut: one longer
    than that column goes alone on the next line, under its name, indented by ALONE_INDENT
    (a named feed's 62-65-character BatchID at 80 columns), and one longer than the terminal
    runs past its edge."""

    def __init__(
        self,
        title: str,
        fields: Iterable[tuple[str, object, Kind]],
        headings: tuple[str, str] = ("field", "value"),
    ) -> None:
        self.title = title
        self.headings = headings
        self.fields = [
            (visible(name), "-" if value is None else visible(value), kind)
            for name, value, kind in fields
        ]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The title, the headings and their rule, then each field's line(s)."""
        if not self.fields:
            yield plain(f"{self.title}: none")
            return
        yield plain(self.title, style="bold")
        names = cell_len(max([self.headings[0], *(n for n, _, _ in self.fields)], key=cell_len))
        indent = " " * (names + _GAP)
        room = max(TEXT_MIN_WIDTH, options.max_width - len(indent))
        widest = max(cell_len(v) for v in [self.headings[1], *(v for _, v, _ in self.fields)])
        yield _line(_padded(self.headings[0], len(indent)) + self.headings[1], "bold")
        yield _line("─" * (len(indent) + min(widest, room)))
        for name, value, kind in self.fields:
            if kind != "text" and cell_len(value) > room:
                yield _line(name)
                yield _line(ALONE_INDENT + value)
                continue
            pieces = [value] if kind != "text" else _wrapped(console, value, room)
            for n, piece in enumerate(pieces):
                yield _line((_padded(name, len(indent)) if n == 0 else indent) + piece)


def _padded(name: str, width: int) -> str:
    return name + " " * max(0, width - cell_len(name))


def _wrapped(console: Console, value: str, width: int) -> list[str]:
    """`value` wrapped at `width` as rich wraps a table's text column (a longer word folded)."""
    return [line.plain for line in Text(value).wrap(console, width, overflow="fold")] or [""]


def _line(text: str, style: str = "") -> Text:
    """One line as written: never wrapped or cut by rich (a line longer than the terminal
    runs past its edge, as FitTable's do), never read as markup."""
    return Text(text, style=style, no_wrap=True, overflow="ignore", end="\n")

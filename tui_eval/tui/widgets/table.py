"""`Table`: a `DataTable` whose footer shows what `enter` does; columns that fit the width."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable


class Table(DataTable[Any]):
    """A row-cursor table; `enter` selects the row (and says so in the footer).

    Given its columns with priorities (`show`), it keeps the ones that fit its width,
    laying itself out again when a resize changes which fit.
    """

    BINDINGS = [Binding("enter", "select_cursor", "Open", show=True)]

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", True)
        super().__init__(**kwargs)
        self._all_columns: Sequence[Column] = ()
        self._rows: list[tuple[str, dict[str, Text]]] = []
        self.shown_columns: list[Column] = []
        """The columns on screen now."""

    def show(self, columns: Sequence[Column], rows: Sequence[tuple[str, dict[str, Text]]]) -> None:
        """Show `rows` (each: its key and its cells by column key) under the columns that fit."""
        self._all_columns = columns
        self._rows = list(rows)
        self._lay_out()

    def set_cell(self, row: str, column: str, value: Text) -> None:
        """Change one cell (kept for the next layout even when its column is hidden now)."""
        for key, cells in self._rows:
            if key == row:
                cells[column] = value
        if any(c.key == column for c in self.shown_columns):
            self.update_cell(row, column, value)

    def on_resize(self) -> None:
        fitting = fit_columns(self._all_columns, self.size.width)
        if [c.key for c in fitting] != [c.key for c in self.shown_columns]:
            self._lay_out()

    def _lay_out(self) -> None:
        self.shown_columns = fit_columns(self._all_columns, self.size.width)
        fill(self, self.shown_columns, self._rows)


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its key, label, width, and how important it is (0 first)."""

    key: str
    label: str
    width: int
    priority: int


def fit_columns(columns: Sequence[Column], width: int) -> list[Column]:
    """The columns that fit `width` cells, in their own order: when the terminal is narrow,
    the least important go first, instead of every column being cut."""
    room = max(width, 40) - 4
    keep: set[str] = set()
    used = 0
    for column in sorted(columns, key=lambda c: c.priority):
        if used + column.width + 2 > room and keep:
            continue
        keep.add(column.key)
        used += column.width + 2
    return [c for c in columns if c.key in keep]


def fill(
    table: DataTable[Any], columns: Sequence[Column], rows: Sequence[tuple[str, dict[str, Text]]]
) -> None:
    """Replace `table`'s columns and rows (each row: its key and its cells by column key),
    keeping the cursor on the same row."""
    cursor = table.cursor_row
    table.clear(columns=True)
    for column in columns:
        table.add_column(column.label, width=column.width, key=column.key)
    for key, cells in rows:
        table.add_row(*[cells.get(c.key, Text("")) for c in columns], key=key)
    if rows and 0 <= cursor < len(rows):
        table.move_cursor(row=cursor)

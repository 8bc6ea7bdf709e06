"""`Table`: a `DataTable` whose footer shows what `enter` does; columns that fit the width."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable


class Table(DataTable[Any]):
    """A row-cursor table; `enter` selects the row (and says so in the footer).

    Given its columns with priorities (`show`), it keeps the ones that fit its width,
    laying itself out again when a resize changes which fit. `home`/`end` move the cursor
    to the first/last row, as on the Run screen (not sideways).
    """

    BINDINGS = [
        Binding("enter", "select_cursor", "Open", show=True),
        Binding("home", "cursor_to(0)", "First row", show=False),
        Binding("end", "cursor_to(-1)", "Last row", show=False),
    ]

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

    def action_cursor_to(self, row: int) -> None:
        """Put the cursor on row `row` (-1: the last), scrolling it into view."""
        if self.row_count:
            self.move_cursor(row=row % self.row_count, column=0, animate=False)

    def on_resize(self) -> None:
        fitting = fit_columns(self._all_columns, self.size.width)
        if [(c.key, c.width) for c in fitting] != [(c.key, c.width) for c in self.shown_columns]:
            self._lay_out()

    def _lay_out(self) -> None:
        self.shown_columns = fit_columns(self._all_columns, self.size.width)
        fill(self, self.shown_columns, self._rows)


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its key, label, width, and how important it is (0 first).

    A column with `grow` is `width` wide at least and takes up to `grow` more cells of
    the room the kept columns leave (a case name, say).
    """

    key: str
    label: str
    width: int
    priority: int
    grow: int = 0


def fit_columns(columns: Sequence[Column], width: int) -> list[Column]:
    """The columns that fit `width` cells, in their own order: when the terminal is narrow,
    the least important go first, instead of every column being cut.

    Columns are kept strictly by priority: once one does not fit, no less important one is
    shown in its place (a narrow column of little use never pushes out a useful one).
    """
    room = max(width, 40) - 4
    keep: list[Column] = []
    used = 0
    for column in sorted(columns, key=lambda c: c.priority):
        if used + column.width + 2 > room and keep:
            break
        keep.append(column)
        used += column.width + 2
    spare = room - used
    grown: dict[str, Column] = {}
    for column in keep:
        if column.grow and spare > 0:
            extra = min(column.grow, spare)
            spare -= extra
            column = replace(column, width=column.width + extra)
        grown[column.key] = column
    return [grown[c.key] for c in columns if c.key in grown]


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

"""`Table`: a `DataTable` whose footer shows what `enter` does; columns that fit the width."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable


class Table(DataTable[Any]):
    """A row-cursor table whose `enter` runs its screen's `open` action; `show` keeps the columns
    that fit the width; `home`/`end` go to the first/last row, as on the Run screen."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Open", id="open"),
        Binding("home", "cursor_to(0)", "First row", show=False, id="first"),
        Binding("end", "cursor_to(-1)", "Last row", show=False, id="last"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", True)
        super().__init__(**kwargs)
        self._all_columns: Sequence[Column] = ()
        self._rows: list[tuple[str, dict[str, Text]]] = []
        self._need: dict[str, int] = {}
        """The width each column's longest text (or label) needs."""
        self.shown_columns: list[Column] = []
        """The columns on screen now."""

    def show(self, columns: Sequence[Column], rows: Sequence[tuple[str, dict[str, Text]]]) -> None:
        """Show `rows` (each: its key and its cells by column key) under the columns that fit."""
        self._all_columns = columns
        self._rows = [(key, {k: _cut(v) for k, v in cells.items()}) for key, cells in rows]
        self._need = {c.key: cell_len(c.label) for c in columns}
        for _, cells in self._rows:
            for key, text in cells.items():
                self._need[key] = max(self._need.get(key, 0), cell_len(text.plain))
        self._lay_out()

    def set_cell(self, row: str, column: str, value: Text) -> None:
        """Change one cell (kept while its column is hidden), laying out again if it outgrows it."""
        value = _cut(value)
        for key, cells in self._rows:
            if key == row:
                cells[column] = value
        size = cell_len(value.plain)
        if size > self._need.get(column, 0):
            self._need[column] = size
            if self._fitting() != self.shown_columns:
                self._lay_out()
                return
        if any(c.key == column for c in self.shown_columns):
            self.update_cell(row, column, value)

    def selected(self) -> int | None:
        """The row under the cursor (None: no rows)."""
        return self.cursor_row if 0 <= self.cursor_row < self.row_count else None

    async def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        await self.run_action("screen.open")

    def action_cursor_to(self, row: int) -> None:
        """Put the cursor on row `row` (-1: the last), scrolling it into view."""
        if self.row_count:
            self.move_cursor(row=row % self.row_count, column=0, animate=False)

    def on_resize(self) -> None:
        if self._fitting() != self.shown_columns:
            self._lay_out()

    def _fitting(self) -> list[Column]:
        return fit_columns(self._all_columns, self.size.width, self._need)

    def _lay_out(self) -> None:
        """Replace the columns and rows, keeping the cursor on the same row."""
        self.shown_columns = columns = self._fitting()
        cursor = self.cursor_row
        self.clear(columns=True)
        for column in columns:
            self.add_column(column.label, width=column.width, key=column.key)
        for key, cells in self._rows:
            self.add_row(*[cells.get(c.key, Text("")) for c in columns], key=key)
        if self._rows and 0 <= cursor < len(self._rows):
            self.move_cursor(row=cursor)


def _cut(text: Text) -> Text:
    """`text` on one line, ending with "…" where its column cuts it."""
    if text.overflow == "ellipsis" and text.no_wrap:
        return text
    cut = text.copy()
    cut.overflow, cut.no_wrap = "ellipsis", True
    return cut


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: key, label, width, priority (0 first) and `grow`, the cells it may take
    beyond `width` from the room the kept columns leave (a case name, say)."""

    key: str
    label: str
    width: int
    priority: int
    grow: int = 0


def fit_columns(columns: Sequence[Column], width: int, need: Mapping[str, int]) -> list[Column]:
    """The columns that fit `width` cells, in order: the least important go first, never one in
    favour of a less important. Spare room widens growing columns (up to `need` and `grow`),
    then any column still cut, which may also take what wider columns do not need."""
    room = max(width, 40) - 4
    keep: list[Column] = []
    used = 0
    for column in sorted(columns, key=lambda c: c.priority):
        if used + column.width + 2 > room and keep:
            break
        keep.append(column)
        used += column.width + 2
    spare = room - used
    widths = {column.key: column.width for column in keep}

    def short(column: Column) -> int:
        return max(0, need.get(column.key, 0) - widths[column.key])

    for column in keep:  # growing columns, as far as their text needs
        extra = min(column.grow, short(column), spare)
        widths[column.key] += extra
        spare -= extra
    for column in keep:  # then any column still cut, with the room nobody needs
        extra = min(short(column), spare)
        widths[column.key] += extra
        spare -= extra
    for column in sorted(keep, key=lambda c: c.priority):  # then room others do not use
        for other in keep:
            spare_here = widths[other.key] - max(need.get(other.key, 0), 1)
            extra = min(short(column), max(0, spare_here))
            widths[other.key] -= extra
            widths[column.key] += extra
    return [replace(c, width=widths[c.key]) for c in columns if c.key in widths]

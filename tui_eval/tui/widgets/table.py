"""`Table`: a `DataTable` whose footer shows what `enter` does."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.widgets import DataTable


class Table(DataTable[Any]):
    """A row-cursor table; `enter` selects the row (and says so in the footer)."""

    BINDINGS = [Binding("enter", "select_cursor", "Open", show=True)]

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", True)
        super().__init__(**kwargs)

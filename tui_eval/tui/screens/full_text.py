"""A read-only view of a whole (possibly huge) text, for outputs cut short elsewhere."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static, TextArea

from tui_eval.text import sanitize
from tui_eval.tui.widgets.text import cell


class FullTextScreen(Screen[None]):
    """The complete text in a read-only, virtualised text area (only visible lines render)."""

    BINDINGS = [Binding("q,escape", "back", "Back")]

    def __init__(self, text: str, *, title: str = "Full text") -> None:
        super().__init__()
        self.text = text
        self.title_text = title

    def compose(self) -> ComposeResult:
        yield Static(
            cell(f"{self.title_text} · {len(self.text):,} characters", 200), id="screen-title"
        )
        yield TextArea(
            sanitize(self.text),
            read_only=True,
            soft_wrap=False,
            show_line_numbers=True,
            id="full-text",
        )
        yield Footer()

    def action_back(self) -> None:
        self.app.pop_screen()

"""A read-only view of a whole (possibly huge) text, for outputs cut short elsewhere."""

from __future__ import annotations

from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static

from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.long_text import LongText
from tui_eval.tui.widgets.text import cell


class FullTextScreen(Screen[None]):
    """The complete text, virtualised (only visible rows render); `/` searches it."""

    TITLE = "Full output"
    BINDINGS = [
        Binding("q,escape", "back", "Back", id="back"),
        # A priority binding runs as the app takes the key from the terminal, before the
        # keys typed after it: they go to the search box it focuses, in order.
        Binding("slash", "search", "Search", priority=True, id="search"),
        Binding("n", "next_match", "Next match", id="next"),
    ]

    def __init__(self, text: str, *, title: str = "Full text") -> None:
        super().__init__()
        self.text = text
        self.title_text = title

    def compose(self) -> ComposeResult:
        yield Static(
            cell(f"{self.title_text} · {len(self.text):,} characters", 200), id="screen-title"
        )
        yield LongText(self.text, id="full-text")
        yield Input(placeholder="search (enter finds the next match, escape closes)", id="search")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#search", Input).display = False
        self.query_one(LongText).focus()

    def action_search(self) -> None:
        """Open the search box now, so it gets the keys typed next (`focus()` waits a repaint)."""
        box = self.query_one("#search", Input)
        if self.focused is box:
            raise SkipAction()  # a "/" typed into the search
        box.display = True
        self.set_focus(box)

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        self._find(event.value)

    def action_next_match(self) -> None:
        self._find(self.query_one("#search", Input).value)

    def _find(self, query: str) -> None:
        if not query:
            return
        view = self.query_one(LongText)
        if not view.find(query):
            self.notify(f"not found: {query[:60]}", timeout=2)

    def action_back(self) -> None:
        box = self.query_one("#search", Input)
        if box.has_focus:
            box.display = False
            self.query_one(LongText).focus()
            return
        self.app.pop_screen()

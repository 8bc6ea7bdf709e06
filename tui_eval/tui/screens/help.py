"""`?`: every key of the screen underneath, with what it does."""

from __future__ import annotations

from rich.table import Table as RichTable
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

SPECIAL_KEYS = {
    "slash": "/",
    "question_mark": "?",
    "asterisk": "*",
    "pageup": "page up",
    "pagedown": "page down",
}


def key_label(keys: str) -> str:
    """`q,escape` → `q / escape`; `slash` → `/`."""
    return " / ".join(SPECIAL_KEYS.get(k, k) for k in keys.split(","))


def screen_keys(screen: Screen[object]) -> list[tuple[str, str, str]]:
    """(keys, what they do, binding id) of tui-eval's keys that apply to `screen` now (its own,
    its focused widget's, the app's), each action once; Textual's own (no id) left out."""
    found: dict[tuple[int, str], tuple[list[str], Binding]] = {}
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if binding.id and active.enabled and binding.description:
            found.setdefault((id(active.node), binding.action), ([], binding))[0].append(key)
    return [
        (key_label(",".join(keys)), binding.tooltip or binding.description, binding.id or "")
        for keys, binding in found.values()
    ]


class HelpScreen(ModalScreen[None]):
    """The keys of the screen it was opened over; `escape` or `q` closes it."""

    BINDINGS = [Binding("q,escape", "dismiss", "Close", id="back")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 95%; height: auto; max-height: 90%;
        border: round $accent; padding: 0 1; background: $surface; }
    """

    def __init__(self, title: str, keys: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.keys = keys

    def compose(self) -> ComposeResult:
        table = RichTable.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        table.add_column(style="dim")
        for keys, what, binding_id in self.keys:
            table.add_row(Text(keys), Text(what), Text(binding_id))
        with VerticalScroll():
            yield Static(Text(f"Keys · {self.title_text}", style="bold"))
            yield Static(table, id="help-keys")
            yield Static(
                Text(
                    "escape or q closes this · the last column: the key's id, for a keymap",
                    style="dim",
                )
            )

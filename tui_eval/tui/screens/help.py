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
    "enter": "enter",
    "escape": "escape",
    "slash": "/",
    "question_mark": "?",
    "space": "space",
    "pageup": "page up",
    "pagedown": "page down",
    "ctrl+c": "ctrl+c",
}


def key_label(keys: str) -> str:
    """`q,escape` → `q / escape`; `slash` → `/`."""
    return " / ".join(SPECIAL_KEYS.get(k, k) for k in keys.split(","))


def screen_keys(screen: Screen[object]) -> list[tuple[str, str]]:
    """(keys, what they do) for the keys tui-eval gives `screen` — its own, its focused
    table's and `?` — each action once; keys that do not apply right now are left out."""
    seen: set[tuple[int, str]] = set()
    rows: list[tuple[str, str]] = []
    ours = [
        (key, active)
        for key, active in screen.active_bindings.items()
        if active.node is not screen.app
        and active.binding.action in _declared_actions(type(active.node))
    ]
    for key, active in ours:
        binding: Binding = active.binding
        identity = (id(active.node), binding.action)
        if not active.enabled or not binding.description or identity in seen:
            continue
        seen.add(identity)
        keys = [k for k, a in ours if (id(a.node), a.binding.action) == identity]
        what = "this list of the screen's keys" if binding.action == "app.help" else None
        rows.append(
            (key_label(",".join(keys) or key), what or binding.tooltip or binding.description)
        )
    return rows


class HelpScreen(ModalScreen[None]):
    """The keys of the screen it was opened over; `escape`, `q` or `?` closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 72; max-width: 95%; height: auto; max-height: 90%;
        border: round $accent; padding: 0 1; background: $surface; }
    """

    def __init__(self, title: str, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.keys = keys

    def compose(self) -> ComposeResult:
        table = RichTable.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for keys, what in self.keys:
            table.add_row(Text(keys), Text(what))
        with VerticalScroll():
            yield Static(Text(f"Keys · {self.title_text}", style="bold"))
            yield Static(table, id="help-keys")
            yield Static(Text("escape, q or ? closes this", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)


def _declared_actions(kind: type) -> set[str]:
    """The actions tui-eval's own classes bind (not Textual's focus or copy keys)."""
    actions: set[str] = set()
    for klass in kind.__mro__:
        if klass.__module__.startswith("tui_eval"):
            for binding in klass.__dict__.get("BINDINGS", []):
                if isinstance(binding, Binding):
                    actions.add(binding.action)
    return actions

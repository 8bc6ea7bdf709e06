"""A small modal that asks for a number."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class NumberPrompt(ModalScreen[int | None]):
    """Ask for a positive integer; dismisses with it, or None on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    NumberPrompt { align: center middle; }
    NumberPrompt > Vertical { width: 60; height: auto; border: round $accent; padding: 1 2; background: $surface; }
    """

    def __init__(self, question: str, default: int) -> None:
        super().__init__()
        self.question = question
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(str(self.default), type="integer", id="number")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            value = int(event.value)
        except ValueError:
            value = 0
        if value < 1:
            self.notify("enter a whole number of at least 1", severity="warning")
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)

"""Small modals: ask for a line of text or a number, or for a yes/no confirmation."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from tui_eval.util.text import sanitize


class Prompt(ModalScreen[str | int | None]):
    """Ask for a line of text, or with a `default` for a positive integer; None on escape."""

    BINDINGS = [Binding("escape", "dismiss", "Cancel", id="cancel")]
    DEFAULT_CSS = """
    Prompt { align: center middle; }
    Prompt > Vertical { width: 70; max-width: 95%; height: auto; border: round $accent; padding: 1 2; background: $surface; }
    Prompt Label { width: 1fr; }
    """

    def __init__(self, question: str, placeholder: str = "", *, default: int | None = None) -> None:
        super().__init__()
        self.question = question
        self.placeholder = placeholder
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(sanitize(self.question)))  # names in it: literal
            if self.default is None:
                yield Input(placeholder=self.placeholder, id="text")
            else:
                yield Input(str(self.default), type="integer", id="number")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if self.default is None:
            if value:
                self.dismiss(value)
            else:
                self.notify("type something, or escape to cancel", severity="warning")
        elif value.isdigit() and int(value) >= 1:
            self.dismiss(int(value))
        else:
            self.notify("enter a whole number of at least 1", severity="warning")


class ConfirmScreen(ModalScreen[bool]):
    """Ask a yes/no question: `y` or `enter` (on Yes) confirms, `n` or `escape` refuses."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="yes"),
        Binding("n,escape", "answer(False)", "No", id="no"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 76; max-width: 95%; height: auto; border: round $warning; padding: 1 2; background: $surface; }
    ConfirmScreen Label { width: 1fr; }
    ConfirmScreen Horizontal { height: auto; margin-top: 1; }
    ConfirmScreen Button { margin-right: 2; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(sanitize(self.question)))  # names in it: literal
            with Horizontal():
                yield Button("Yes (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def quit_asking(app: App[object]) -> None:
    """Quit the app, asking first while runs are still going (they would be cancelled)."""
    running = [
        w.name.removeprefix("run ") for w in app.workers if w.group == "runs" and not w.is_finished
    ]
    if not running:
        app.exit()
        return
    names = ", ".join(running[:3]) + (f" and {len(running) - 3} more" if len(running) > 3 else "")

    def answered(confirmed: bool | None) -> None:
        if confirmed:
            app.exit()

    app.push_screen(
        ConfirmScreen(
            f"{names} still running. Quit and cancel? (finished samples are kept; "
            "`tui-eval resume` finishes the runs)"
        ),
        answered,
    )

"""`KeyFooter`: the screen's keys, never cut mid-word; `? +N more` counts and opens the rest."""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING, NamedTuple

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import ActiveBinding
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.screen import Screen

HELP_ACTION = "help"
"""The app's `?`: the footer shows it last, as `? +N more` when keys are left out."""


class FooterKey(NamedTuple):
    """One key as the footer shows it, and the columns it takes in the footer."""

    key: str
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str
    start: int = 0
    end: int = 0


class KeyFooter(Widget):
    """The keys that fit, in the screen's order, then `?` (as `? +N more` when some do not); a
    click presses a key. One line of text, not a widget per key: mounting key widgets as the
    keys changed laid the screen out again (a third of the app's CPU during a run)."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer-key--key", "footer-key--description", "footer-key--hover"}
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        text-wrap: nowrap;
        color: $footer-foreground;
        background: $footer-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .footer-key--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
    }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.shown: list[FooterKey] = []
        """The keys shown at the current width, with their columns."""
        self.hidden: list[str] = []
        """The descriptions of the keys left out."""
        self._width = 0
        self._hover: FooterKey | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_after_refresh(self._update)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        # As Textual's footer: while the terminal is not focused, focus (and with it the
        # keys that apply) comes and goes; the keys shown stay as they were.
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self._update)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self._update()

    def _update(self) -> None:
        """Show the keys that apply now; repaint only when they changed."""
        if not self.is_attached:
            return
        shown = self._plan()
        if shown != self.shown:
            self.shown = shown
            self._hover = None
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        hover_style = self.get_component_rich_style("footer-key--hover")
        text = Text(no_wrap=True, end="")
        for key in self.shown:
            text.append(f" {key.display} ", key_style)
            text.append(f"{key.description} ", description_style)
            if not key.enabled:
                text.stylize("dim", key.start, key.end)
            if key == self._hover:
                text.stylize(hover_style, key.start, key.end)
        return text

    def _plan(self) -> list[FooterKey]:
        """The leading keys that fit the width, then `?` (as `? +N more` if some do not)."""
        offered: dict[str, ActiveBinding] = {}
        for active in self.screen.active_bindings.values():
            if active.binding.show:
                offered.setdefault(active.binding.action, active)
        help_key = offered.pop(HELP_ACTION, None)
        keys = [(active, active.binding.description) for active in offered.values()]
        self._width = width = self.size.width or self.screen.size.width or self.app.size.width
        ends = list(accumulate(self._width_of(*key) for key in keys))
        help_width = self._width_of(help_key, help_key.binding.description) if help_key else 0
        self.hidden = []
        if ends and ends[-1] + help_width > width:
            reserve = self._width_of(help_key, "+99 more") if help_key else 0
            fitting = sum(end + reserve <= width for end in ends)
            self.hidden = [active.binding.description for active, _ in keys[fitting:]]
            keys = keys[:fitting]
        if help_key is not None:
            more = f"+{len(self.hidden)} more" if self.hidden else help_key.binding.description
            keys.append((help_key, more))
        placed, column = [], 0
        for active, text in keys:
            b, end = active.binding, column + self._width_of(active, text)
            shown = self.app.get_key_display(b)
            placed.append(
                FooterKey(b.key, shown, text, b.action, active.enabled, active.tooltip, column, end)
            )
            column = end
        return placed

    def _width_of(self, active: ActiveBinding, description: str) -> int:
        # ` key ` then `description ` (the padding of Textual's non-compact footer).
        return cell_len(self.app.get_key_display(active.binding)) + 2 + cell_len(description) + 1

    def _key_at(self, x: int) -> FooterKey | None:
        return next((key for key in self.shown if key.start <= x < key.end), None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self._key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        key = self._key_at(event.x)
        if key != self._hover:
            self._hover = key
            self.tooltip = key.tooltip if key and key.tooltip else None
            self.refresh()

    def on_leave(self) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()

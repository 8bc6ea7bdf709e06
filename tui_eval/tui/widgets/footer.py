"""`KeyFooter`: the screen's keys, never cut mid-word: what does not fit is counted in a
last `? +N more` key, which opens the full list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

HELP_ACTION = "app.help"


class _Key(NamedTuple):
    """One key as the footer shows it."""

    key: str
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str


class KeyFooter(Footer):
    """A footer that shows the keys that fit, then `? +N more` (the help key) when some do
    not. Keys appear in the order the screen declares them; `?` always comes last.

    Attributes:
        hidden: the descriptions of the keys left out at the current width (for tests).
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(show_command_palette=False, **kwargs)  # type: ignore[arg-type]
        self.hidden: list[str] = []
        self._width = 0
        self._shown: list[_Key] = []

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        self._shown = self._plan()
        for key in self._shown:
            yield self._key(key)

    async def recompose(self) -> None:
        """Rebuild the keys only when what they show changed.

        Bindings are refreshed on every focus change and state change of a screen; most
        of those leave the keys as they were, and rebuilding them restyles the footer.
        """
        if self._bindings_ready and self.is_attached and self._plan() == self._shown:
            return
        await super().recompose()

    def _plan(self) -> list[_Key]:
        """The keys to show at the current width, in order, `?` (help) last."""
        shown: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in shown:
                shown[binding.action] = (binding, enabled, tooltip)
        help_key = shown.pop(HELP_ACTION, None)
        room = self._room()
        keys = list(shown.values())
        fitting = self._fit(keys, room, help_key)
        self.hidden = [b.description for b, _, _ in keys[len(fitting) :]]
        plan = [
            self._describe(binding, binding.description, enabled, tooltip)
            for binding, enabled, tooltip in fitting
        ]
        if help_key is not None:
            binding, enabled, tooltip = help_key
            more = f"+{len(self.hidden)} more" if self.hidden else binding.description
            plan.append(
                self._describe(binding, more, enabled, tooltip or "every key of this screen")
            )
        return plan

    def _room(self) -> int:
        width = self.size.width or self.screen.size.width or self.app.size.width
        self._width = width
        return width

    def _fit(
        self,
        keys: list[tuple[Binding, bool, str]],
        room: int,
        help_key: tuple[Binding, bool, str] | None,
    ) -> list[tuple[Binding, bool, str]]:
        """The leading keys that fit `room`, leaving space for the help key (`? +N more`)."""
        total = sum(self._width_of(b, b.description) for b, _, _ in keys)
        help_width = self._width_of(help_key[0], help_key[0].description) if help_key else 0
        if total + help_width <= room:
            return keys
        reserve = self._width_of(help_key[0], "+99 more") if help_key else 0
        used = 0
        fitting = []
        for entry in keys:
            width = self._width_of(entry[0], entry[0].description)
            if used + width + reserve > room:
                break
            fitting.append(entry)
            used += width
        return fitting

    def _width_of(self, binding: Binding, description: str) -> int:
        # A FooterKey is ` key ` then `description ` (Footer's non-compact padding).
        return cell_len(self.app.get_key_display(binding)) + 2 + cell_len(description) + 1

    def _describe(self, binding: Binding, description: str, enabled: bool, tooltip: str) -> _Key:
        return _Key(
            binding.key,
            self.app.get_key_display(binding),
            description,
            binding.action,
            enabled,
            tooltip,
        )

    def _key(self, key: _Key) -> FooterKey:
        widget = FooterKey(
            key.key,
            key.display,
            key.description,
            key.action,
            disabled=not key.enabled,
            tooltip=key.tooltip,
        )
        # This footer is never compact. Set before mounting, so that the key is not
        # restyled twice on mount (FooterKey defaults to compact; binding it to
        # `Footer.compact` sets it back).
        widget.set_reactive(FooterKey.compact, False)
        return widget

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self._width and self._bindings_ready:
            self.call_after_refresh(self.recompose)


def footer_descriptions(footer: KeyFooter) -> Iterable[str]:
    """What the footer shows, key by key: `q Back`, `? +3 more` (for tests)."""
    for key in footer.query(FooterKey):
        yield f"{key.key_display} {key.description}".strip()

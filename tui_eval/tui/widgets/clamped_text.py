"""`ClampedText`: text cut after a few lines with "…" (a `max-height` cuts it without a sign)."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from tui_eval.util.text import ELLIPSIS


class ClampedText(Widget):
    """At most `max_lines` lines of `text` (never markup), the last ending with "…" if cut."""

    DEFAULT_CSS = """
    ClampedText { height: auto; text-wrap: nowrap; }
    """

    def __init__(self, text: Text | None = None, *, max_lines: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text if text is not None else Text()
        """The whole text (what is shown is its first `max_lines` lines)."""
        self.max_lines = max_lines

    def update(self, text: Text) -> None:
        """Show `text` instead."""
        self.text = text
        self.refresh(layout=True)

    def clamped(self, width: int) -> Text:
        """The lines shown at `width` cells, joined: the last ends with "…" when cut."""
        width = max(width, 2)
        lines = list(self.text.wrap(self.app.console, width))
        for line in lines:
            line.rstrip()  # the space a line was broken at
        if len(lines) > self.max_lines:
            lines = lines[: self.max_lines]
            last = lines[-1]
            if cell_len(last.plain) > width - 1:
                last.truncate(width - 1)
            last.append(ELLIPSIS)
        joined = Text("\n", no_wrap=True, end="").join(lines)
        joined.no_wrap = True
        return joined

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.clamped(width).plain.split("\n")) if self.text.plain else 0

    def render(self) -> Text:
        return self.clamped(self.content_size.width)

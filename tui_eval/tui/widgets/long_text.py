"""`LongText`: a read-only view of a text of any size (10 MB opens at once); `str.find` searches."""

from __future__ import annotations

import bisect
from array import array
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui_eval.util.text import sanitize

MATCH = Style(reverse=True, bold=True)


class LongText(ScrollView, can_focus=True):
    """A whole text, wrapped to the view's width, scrolled without ever laying it all out."""

    BINDINGS = [
        Binding("up", "scroll_rows(-1)", "Up", show=False, id="scroll-up"),
        Binding("down", "scroll_rows(1)", "Down", show=False, id="scroll-down"),
        Binding("pageup", "scroll_page(-1)", "Page up", show=False, id="scroll-page-up"),
        Binding("pagedown,space", "scroll_page(1)", "Page down", show=False, id="scroll-page-down"),
        Binding("home", "scroll_edge(0)", "Top", show=False, id="scroll-top"),
        Binding("end", "scroll_edge(1)", "Bottom", show=False, id="scroll-bottom"),
    ]
    DEFAULT_CSS = "LongText { height: 1fr; }"

    def __init__(self, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text
        self._starts = array("q")
        self._ends = array("q")
        self._width = 0
        self.match: tuple[int, int] | None = None
        """The (start, end) of the current search match in the text."""

    @property
    def row_count(self) -> int:
        """Rows of the wrapped text."""
        return len(self._starts)

    def on_resize(self) -> None:
        width = max(self.size.width - 1, 10)
        if width != self._width:
            self._width = width
            self._wrap(width)

    def _wrap(self, width: int) -> None:
        starts, ends = array("q"), array("q")
        text = self.text
        position = 0
        length = len(text)
        while position <= length:
            newline = text.find("\n", position)
            end = length if newline < 0 else newline
            if end == position:
                starts.append(position)
                ends.append(position)
            else:
                row_starts = range(position, end, width)
                starts.extend(row_starts)
                ends.extend(min(start + width, end) for start in row_starts)
            if newline < 0:
                break
            position = newline + 1
        self._starts, self._ends = starts, ends
        self.virtual_size = Size(width, len(starts))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        row = int(self.scroll_offset.y) + y
        if row >= len(self._starts):
            return Strip.blank(self.size.width, self.rich_style)
        start, end = self._starts[row], self._ends[row]
        line = sanitize(self.text[start:end].replace("\t", " "))
        segments = [Segment(line, self.rich_style)]
        if self.match is not None and self.match[0] < end and self.match[1] > start:
            left = max(self.match[0], start) - start
            right = min(self.match[1], end) - start
            segments = [
                Segment(line[:left], self.rich_style),
                Segment(line[left:right], self.rich_style + MATCH),
                Segment(line[right:], self.rich_style),
            ]
        return Strip(segments).crop_extend(0, self.size.width, self.rich_style)

    def row_of(self, offset: int) -> int:
        """The wrapped row showing the character at `offset`."""
        return max(0, bisect.bisect_right(self._starts, offset) - 1)

    def find(self, query: str, *, after: int | None = None) -> bool:
        """Highlight and scroll to the next match of `query` (wrapping around); False if none."""
        if not query:
            return False
        origin = (self.match[0] + 1) if after is None and self.match else (after or 0)
        found = self.text.find(query, origin)
        if found < 0 and origin:
            found = self.text.find(query)
        if found < 0:
            return False
        self.match = (found, found + len(query))
        row = self.row_of(found)
        self.scroll_to(y=max(0, row - self.size.height // 3), animate=False)
        self.refresh()
        return True

    def action_scroll_rows(self, delta: int) -> None:
        self.scroll_to(y=self.scroll_offset.y + delta, animate=False)

    def action_scroll_page(self, direction: int) -> None:
        self.scroll_to(
            y=self.scroll_offset.y + direction * max(1, self.size.height - 1), animate=False
        )

    def action_scroll_edge(self, end: int) -> None:
        self.scroll_to(y=self.max_scroll_y if end else 0, animate=False)

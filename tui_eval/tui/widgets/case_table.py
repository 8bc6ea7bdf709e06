"""The live table of cases, virtualised: only rows on screen are rendered, from the `RunState`
(a `DataTable` measures every cell: seconds at 10,000 cases); fixed widths keep rows still."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from tui_eval.core.results import CaseResult
from tui_eval.run.state import RunState
from tui_eval.tui.widgets.text import cell, format_ms

STATUS_STYLE = {
    "passed": ("✓ passed", "green"),
    "failed": ("✗ failed", "red"),
    "undecided": ("⊘ undecided", "yellow"),
    "running": ("● running", "cyan"),
    "judging": ("◆ judging", "blue"),
    "retrying": ("↻ retry", "yellow"),
    "queued": ("· queued", "dim"),
    "incomplete": ("◌ partial", "yellow"),
    "not run": ("· not run", "dim"),
}

# (key, label, width, right-aligned); the name and failure columns share what is left.
COLUMNS = (
    ("status", "status", 11, False),  # "⊘ undecided", the longest status
    ("name", "case", 28, False),
    ("samples", "k/n", 6, True),
    ("rate", "pass", 5, True),
    ("score", "score", 5, True),
    ("p50", "p50", 6, True),
    ("tokens", "tokens", 7, True),
    ("failure", "first failure", 60, False),
)
FLEXIBLE = ("name", "failure")
FAILURE_MIN = 16
"""Cells the first failure keeps however long the case names: its start says which check."""
SECONDARY = ("score", "tokens", "p50")
"""Dropped (in this order) before the case name and first failure get narrow."""
GAP = 2
SORT_ORDER: tuple[str | None, ...] = ("status", "name", "rate", "score", "p50", "tokens", None)
SORT_ARROW = {"status": "▲", "name": "▲", "rate": "▲", "score": "▲", "p50": "▼", "tokens": "▼"}
"""Shown beside the sorted column's label: ▲ lowest (or failing, or A) first, ▼ highest."""


def row_cells(state: RunState, index: int) -> list[Text]:
    """The cells of case `index`, as plain (never markup-parsed) text."""
    case: CaseResult = state.cases[index]
    label, style = STATUS_STYLE.get(state.case_status(index), ("?", ""))
    n = len(case.samples)
    score = case.mean_score
    # Passed of the samples counted; ⊘ how many the user simulator's faults left out.
    left_out = f" ⊘{case.left_out}" if case.left_out else ""
    samples = (
        Text(f"{case.samples_passed}/{case.counted}{left_out}")
        if n >= case.planned
        else Text(f"{n}/{case.planned}…", style="dim")
    )
    return [
        Text(label, style=style),
        cell(case.name, 200),
        samples,
        Text(f"{case.pass_rate:.0%}" if case.counted else "–"),
        Text(f"{score:.2f}" if score is not None else "–"),
        Text(format_ms(case.latency_p50_ms) if n else "–"),
        Text(f"{case.usage.total_tokens:,}" if n else "–"),
        cell(case.first_failure, 300, style="red"),
    ]


def _sort_value(state: RunState, index: int, key: str) -> Any:
    case = state.cases[index]
    values: dict[str, Any] = {
        "name": case.name.casefold(),
        "rate": case.pass_rate,
        "tokens": -case.usage.total_tokens,
        "p50": -case.latency_p50_ms,
        "status": (case.passed, case.pass_rate),
        "score": case.mean_score if case.mean_score is not None else -1.0,
    }
    return values.get(key, index)


@dataclass(slots=True)
class _Layout:
    widths: list[int]

    def segments(self, cells: list[Text]) -> list[Segment]:
        """One row, each cell cut or padded to its column, as segments (the per-frame path)."""
        out = [Segment(" ")]
        gap = Segment(" " * GAP)
        for (_, _, _, right), width, value in zip(COLUMNS, self.widths, cells, strict=True):
            if width == 0:
                continue  # a secondary column with no room at this width
            plain = value.plain
            size = cell_len(plain)
            if size > width:
                plain = set_cell_size(plain, width - 1) + "…"
                size = width
            pad = " " * (width - size)
            piece = Segment(plain, _style(value.style))
            if right:
                out += [Segment(pad), piece, gap]
            else:
                out += [piece, Segment(pad), gap]
        return out


def _style(style: str | Style) -> Style | None:
    # Rich caches what `Style.parse` parsed.
    return Style.parse(style) if isinstance(style, str) and style else style or None


class CaseHeader(Widget):
    """The column labels above a `CaseTable` (repainted without a layout pass)."""

    DEFAULT_CSS = """
    CaseHeader { height: 1; text-style: bold; color: $text-accent; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._text = Text("")

    def show(self, text: Text) -> None:
        """Display `text` (the table's aligned labels)."""
        self._text = text
        self.refresh()

    def render(self) -> Text:
        return self._text

    class SortRequested(Message):
        """The user clicked the label at column `x`: the screen sorts the table by it."""

        def __init__(self, x: int) -> None:
            super().__init__()
            self.x = x

    def on_click(self, event: events.Click) -> None:
        """Ask for a sort by the clicked column (the screen owns the table)."""
        self.post_message(self.SortRequested(event.x))


class CaseTable(ScrollView, can_focus=True):
    """One line per case, rendered from the `RunState` on demand."""

    DEFAULT_CSS = """
    CaseTable { height: 1fr; }
    CaseTable > .case-table--cursor { background: $foreground 8%; }
    CaseTable:focus > .case-table--cursor { background: $foreground 14%; text-style: bold; }
    CaseTable > .case-table--header { text-style: bold; color: $text-accent; }
    """
    COMPONENT_CLASSES = {"case-table--cursor", "case-table--header"}
    BINDINGS = [
        Binding("enter", "select", "Open", id="open"),
        Binding("up", "cursor(-1)", "Up", show=False, id="up"),
        Binding("down", "cursor(1)", "Down", show=False, id="down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="page-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="page-down"),
        Binding("home", "jump(0)", "First", show=False, id="first"),
        Binding("end", "jump(-1)", "Last", show=False, id="last"),
    ]

    class Selected(Message):
        """The user chose a case (enter or double click)."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, state: RunState, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.state = state
        self.failing_only = False
        self.name_filter = ""
        self.mode_cases: frozenset[str] | None = None
        """Only these cases (a failure mode's, from the Failures screen's `f`)."""
        self.sort_key: str | None = None
        self.order: list[int] = []
        self._position: dict[int, int] = {}
        self.cursor = 0
        self._layout = _Layout([w for _, _, w, _ in COLUMNS])
        self._lines: dict[int, tuple[tuple[int, int, Style, Style | None], Strip]] = {}

    # -- structure ------------------------------------------------------------------------
    def shows(self, index: int) -> bool:
        """Whether the filters show case `index`; failing only: below its threshold so far, not
        passing with a failing sample, not undecided (the agent was not tested)."""
        case = self.state.cases[index]
        if self.failing_only and (not case.samples or case.passed or case.undecided):
            return False
        if self.mode_cases is not None and case.name not in self.mode_cases:
            return False
        return not (self.name_filter and self.name_filter.casefold() not in case.name.casefold())

    def rebuild(self) -> None:
        """Recompute the shown cases (after a filter, a sort or a new run); the cursor keeps its case."""
        current = self.current_case()
        order = [i for i in range(len(self.state.cases)) if self.shows(i)]
        if self.sort_key is not None:
            key = self.sort_key
            order.sort(key=lambda i: _sort_value(self.state, i, key))
        self.order = order
        self._position = {case: position for position, case in enumerate(order)}
        self.cursor = self._position.get(current, 0) if current is not None else 0
        self._relayout()

    def sync(self, dirty: set[int]) -> None:
        """Repaint if a changed case is on screen; failing-only shows or hides changed cases."""
        if not dirty:
            return
        if self.failing_only and any((i in self._position) != self.shows(i) for i in dirty):
            self.rebuild()
            return
        top = int(self.scroll_offset.y)
        bottom = top + self.size.height
        if any(top <= self._position.get(i, -1) < bottom for i in dirty):
            self.refresh()

    def column_at(self, x: int) -> str | None:
        """The key of the column drawn at cell `x` (None between or past the columns)."""
        left = 1
        for (key, _, _, _), width in zip(COLUMNS, self._layout.widths, strict=True):
            if not width:
                continue
            if left <= x < left + width:
                return key
            left += width + GAP
        return None

    def show_case(self, index: int) -> None:
        """Put the cursor on case `index` when it is shown."""
        position = self._position.get(index)
        if position is not None:
            self._move_to(position)

    def current_case(self) -> int | None:
        """The case index under the cursor."""
        return self.order[self.cursor] if 0 <= self.cursor < len(self.order) else None

    def rows(self) -> list[list[Text]]:
        """The cells of every shown row, in order (for tests and exports)."""
        return [row_cells(self.state, i) for i in self.order]

    # -- rendering -------------------------------------------------------------------------
    def header_text(self) -> Text:
        """The column labels, aligned with the rows; the sorted column has an arrow."""
        text = Text(" ")
        for (key, label, _, right), width in zip(COLUMNS, self._layout.widths, strict=True):
            if not width:
                continue
            arrow = SORT_ARROW.get(key, "") if key == self.sort_key else ""
            shown = (label + arrow)[:width] if arrow else label
            shown = (shown.rjust(width) if right else shown.ljust(width))[:width]
            text.append(shown, style="reverse" if arrow else "")
            text.append(" " * GAP)
        return text

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def _relayout(self) -> None:
        """Size the name column to the longest name; the first failure keeps a third of the room."""
        width = self.size.width
        hidden: set[str] = set()
        longest = max((cell_len(self.state.cases[i].name) for i in self.order[:2000]), default=12)
        for drop in (None, *SECONDARY):
            if drop is not None:
                hidden.add(drop)
            fixed = sum(
                w + GAP for key, _, w, _ in COLUMNS if key not in FLEXIBLE and key not in hidden
            )
            available = max(24, width - fixed - 2 * GAP - 2)
            if available >= 48:
                break
        failure_share = max(FAILURE_MIN, available // 3)
        name_width = max(12, min(longest, available - failure_share))
        widths = {"name": name_width, "failure": max(12, available - name_width)}
        widths.update(dict.fromkeys(hidden, 0))
        self._layout = _Layout([widths.get(key, w) for key, _, w, _ in COLUMNS])
        self._lines.clear()
        self.virtual_size = Size(width, len(self.order))
        for header in self.screen.query(CaseHeader):
            header.show(self.header_text())
        self.refresh()

    def render_line(self, y: int) -> Strip:
        position = int(self.scroll_offset.y) + y
        width = self.size.width
        if position >= len(self.order):
            return Strip.blank(width, self.rich_style)
        index = self.order[position]
        version = self.state.versions[index] if index < len(self.state.versions) else -1
        base = self.rich_style
        # The cursor's style changes with focus (brighter when the table has it). It sets
        # the background (and bold) only: the cells keep their colours (red, green...).
        cursor = self._cursor_style() if position == self.cursor else None
        drawn = (version, width, base, cursor)
        cached = self._lines.get(index)
        if cached is not None and cached[0] == drawn:
            return cached[1]  # the case and its look have not changed since it was drawn
        segments = self._layout.segments(row_cells(self.state, index))
        if cursor is not None:
            segments = list(Segment.apply_style(segments, base, cursor))
            strip = Strip(segments).crop_extend(0, width, base + cursor)
        else:
            strip = Strip(list(Segment.apply_style(segments, base))).crop_extend(0, width, base)
        self._lines[index] = (drawn, strip)
        return strip

    def _cursor_style(self) -> Style:
        full = self.get_component_rich_style("case-table--cursor")
        return Style(bgcolor=full.bgcolor, bold=full.bold)

    # -- moving ----------------------------------------------------------------------------
    def _move_to(self, position: int) -> None:
        if not self.order:
            return
        self.cursor = max(0, min(position, len(self.order) - 1))
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False, immediate=True)
        self.refresh()

    def move_cursor(self, row: int) -> None:
        """Put the cursor on the row at `row`."""
        self._move_to(row)

    def action_cursor(self, delta: int) -> None:
        self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor + direction * max(1, self.size.height - 1))

    def action_jump(self, where: int) -> None:
        self._move_to(len(self.order) - 1 if where < 0 else 0)

    def action_select(self) -> None:
        case = self.current_case()
        if case is not None:
            self.post_message(self.Selected(case))

    def on_click(self, event: events.Click) -> None:
        position = int(self.scroll_offset.y) + event.y
        if 0 <= position < len(self.order):
            self._move_to(position)
            if event.chain >= 2:
                self.action_select()

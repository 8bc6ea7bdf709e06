"""The Failures screen: a run's failed samples grouped into failure modes, and flaky cases."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.report.failure_modes import FailureMode, failure_modes
from tui_eval.report.report import Report
from tui_eval.service.flaky import CaseHistory
from tui_eval.service.session import RunSession
from tui_eval.tui.messages import RunEnded
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.table import Column, Table
from tui_eval.tui.widgets.text import cell

CHANGE_STYLE = {
    "new": "bold red",
    "grown": "red",
    "same": "",
    "shrunk": "green",
    "gone": "dim green",
}


class FailuresScreen(Screen[None]):
    """Failure modes of one run. `enter` opens a mode's samples; `f` filters the Run table."""

    TITLE = "Failures"
    BINDINGS = [
        Binding("q,escape", "app.back", "Back", id="back"),
        Binding("enter", "open", "Samples", show=False, id="open"),
        # `f` as on the Run screen: the run's table, showing failing cases.
        Binding(
            "f", "filter_run", "Run table", tooltip="This mode's cases in the run", id="failing"
        ),
    ]
    REFRESH_EVERY_S = 0.5
    FLAKY_SHOWN = 5
    """Flaky cases listed under the modes (the Case screen shows any case's history)."""

    COLUMNS = (
        Column("change", "change", 7, 1),
        Column("samples", "samples", 9, 0),
        Column("cases", "cases", 6, 2),
        Column("failure", "failure (numbers, quotes, ids masked)", 40, 0, grow=80),
        Column("example", "e.g.", 30, 3, grow=40),
    )

    def __init__(
        self,
        session: RunSession,
        *,
        baseline: Report | None = None,
        flaky: Callable[[], list[CaseHistory]] | None = None,
        show_cases: Callable[[frozenset[str], str], None] | None = None,
        shown: str = "",
    ) -> None:
        super().__init__()
        self.session = session
        self.baseline = baseline
        self.read_flaky = flaky
        """Reads the suite's flaky cases from the history (again as runs of it end)."""
        self.flaky: list[CaseHistory] = []
        """The run's flaky cases (`tui_eval.service.flaky`), with their recorded runs."""
        self.show_cases = show_cases
        """Shows only a mode's cases in the run's table (`f`; the Run screen gives it)."""
        self.shown = shown
        """The signature of the mode the Run table shows: the cursor starts on it (`f`: all)."""
        self.modes: list[FailureMode] = []
        self._drawn: tuple[int, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="screen-title")
        yield Table(id="modes")
        yield Static(id="flaky")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._read_flaky()
        self.refresh_modes()
        self._ticks = self.set_interval(self.REFRESH_EVERY_S, self._tick)
        self.query_one(Table).focus()

    def _tick(self) -> None:
        """Group again while samples arrive; once the run has ended and is drawn, stop."""
        self.refresh_modes()
        if not self.session.state.running:
            self._ticks.stop()

    def _current(self) -> Report:
        state = self.session.state
        return state.report if state.report is not None else Report(state.name, list(state.cases))

    def refresh_modes(self) -> None:
        """Group the run's failures again (when samples have finished since the last time)."""
        state = self.session.state
        drawn = (state.samples_done, state.report is not None)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        self.modes = failure_modes(self._current(), self.baseline)
        compared = self.baseline is not None
        rows = []
        for position, mode in enumerate(self.modes):
            change = Text(mode.change if compared else "", style=CHANGE_STYLE[mode.change])
            count = f"{mode.count}" + (f" ({mode.baseline_samples})" if compared else "")
            cases = mode.cases or mode.baseline_cases
            rows.append(
                (
                    str(position),
                    {
                        "change": change,
                        "samples": Text(count, justify="right"),
                        "cases": Text(str(len(cases)), justify="right"),
                        "failure": cell(str(mode.signature), 300),
                        "example": cell(mode.example, 300),
                    },
                )
            )
        table = self.query_one(Table)
        cursor = table.cursor_row
        if self.shown and not table.row_count:  # the first time: on the mode shown
            signatures = [str(mode.signature) for mode in self.modes]
            cursor = signatures.index(self.shown) if self.shown in signatures else 0
        table.show(self.COLUMNS if compared else self.COLUMNS[1:], rows)
        if rows:
            table.action_cursor_to(min(max(cursor, 0), len(rows) - 1))
        failed = sum(m.count for m in self.modes)
        title = Text(f"Failures · {self.session.title} · ")
        if state.running:  # before the counts: a narrow terminal cuts the end of the line
            title.append("live", style="cyan")
            title.append(" · ")
        title.append(
            f"{failed:,} failed sample(s) in {sum(1 for m in self.modes if m.count)} mode(s)"
        )
        if compared:
            new = sum(1 for m in self.modes if m.change == "new")
            title.append(f" · {new} new since the baseline", style="bold red" if new else "")
        self.query_one("#screen-title", Static).update(title)
        self._show_flaky()
        if not self.modes:
            self.notify("no failed samples", timeout=2)

    def _read_flaky(self) -> None:
        self.flaky = self.read_flaky() if self.read_flaky is not None else []

    @on(RunEnded)
    def _run_ended(self, message: RunEnded) -> None:
        """A run of this suite is in the history now: its flaky cases may have changed."""
        if message.suite == self.session.state.name and self.read_flaky is not None:
            self._read_flaky()
            self._show_flaky()

    def _show_flaky(self) -> None:
        flaky = self.query_one("#flaky", Static)
        flaky.update(self._flaky_text())
        flaky.display = bool(self.flaky)

    def _flaky_text(self) -> Text:
        """The flaky cases, each with its pass rate run by run (the first few)."""
        text = Text("flaky (runs disagree beyond noise):", no_wrap=True, overflow="ellipsis")
        for past in self.flaky[: self.FLAKY_SHOWN]:
            text.append("\n  ")
            text.append_text(cell(past.case, 60))
            text.append(f" — {past.describe()}", style="dim")
        if len(self.flaky) > self.FLAKY_SHOWN:
            text.append(f"\n  …and {len(self.flaky) - self.FLAKY_SHOWN} more")
        return text

    def current_mode(self) -> FailureMode | None:
        """The mode under the cursor."""
        row = self.query_one(Table).selected()
        return self.modes[row] if row is not None and row < len(self.modes) else None

    def positions(self, mode: FailureMode) -> list[tuple[int, int]]:
        """Where the mode's samples are in the run's state: (case index, sample position)."""
        state = self.session.state
        found = []
        for name, index in mode.samples:
            case_index = state.index_of(name)
            if case_index is None:
                continue
            samples = state.cases[case_index].samples
            position = next((i for i, s in enumerate(samples) if s.index == index), None)
            if position is not None:
                found.append((case_index, position))
        return found

    def action_open(self) -> None:
        mode = self.current_mode()
        if mode is None or not mode.count:
            self.notify("this mode has no sample in this run", timeout=2)
            return
        walk = self.positions(mode)
        case_index, position = walk[0]
        self.app.push_screen(SampleScreen(self.session, case_index, position, walk=walk))

    def action_filter_run(self) -> None:
        mode = self.current_mode()
        if mode is None:
            return
        if self.show_cases is None:
            self.notify("open Failures from the Run screen (F) to filter its table", timeout=3)
            return
        self.show_cases(frozenset(mode.cases), str(mode.signature))
        self.app.pop_screen()

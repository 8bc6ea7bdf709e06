"""The Suites screen: every suite found, its last result and baseline; load errors inline."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from tui_eval.suite_run import BaselineStatus, EmptySelection, read_baseline
from tui_eval.suites import Suite
from tui_eval.tui.messages import StartSession
from tui_eval.tui.widgets.table import Table
from tui_eval.tui.widgets.text import cell
from tui_eval.tui.workspace import Workspace

_BASELINE_SHOWN = {
    BaselineStatus.MISSING: ("none", "dim"),
    BaselineStatus.CORRUPT: ("corrupt", "bold red"),
    BaselineStatus.COMPARED: ("saved", "green"),
}
_baseline_seen: dict[Path, tuple[tuple[int, int], tuple[str, str]]] = {}


def baseline_status(path: Path) -> tuple[str, str]:
    """`saved`, `none` or `corrupt`, with its style. A file is read once per change
    (keyed by its size and modification time), so repaints never re-parse it."""
    try:
        stat = path.stat()
    except OSError:
        return _BASELINE_SHOWN[BaselineStatus.MISSING]
    key = (stat.st_size, stat.st_mtime_ns)
    seen = _baseline_seen.get(path)
    if seen is not None and seen[0] == key:
        return seen[1]
    shown = _BASELINE_SHOWN[read_baseline(path).status]
    _baseline_seen[path] = (key, shown)
    return shown


class SuitesScreen(Screen[None]):
    """`enter` runs (or opens the running) suite under the cursor; `a` runs them all."""

    BINDINGS = [
        Binding("enter", "open", "Open", show=False),
        Binding("r", "new_run", "New run"),
        Binding("a", "run_all", "Run all"),
        Binding("h", "history", "History"),
        Binding("q,escape", "quit", "Quit"),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.loaded = workspace.loaded
        self._last: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static("tui-eval · suites", id="screen-title")
        yield Table(id="suites")
        yield Static(id="load-errors")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label, width in (
            ("name", "suite", 18),
            ("cases", "cases", 6),
            ("samples", "samples", 7),
            ("status", "now", 22),
            ("last", "last run", 14),
            ("baseline", "baseline", 9),
            ("path", "file", 28),
        ):
            table.add_column(label, width=width, key=key)
        self._last = self._last_results()
        for suite in self.loaded.suites:
            table.add_row(*self._cells(suite), key=suite.name)
        errors = Text()
        for error in self.loaded.errors:
            errors.append("⚠ ", style="bold red")
            errors.append_text(cell(error.message, 300, style="red"))
            errors.append("\n")
        widget = self.query_one("#load-errors", Static)
        widget.update(errors)
        widget.display = bool(self.loaded.errors)
        self.set_interval(0.25, self.refresh_status)
        table.focus()

    def _last_results(self) -> dict[str, str]:
        history = self.workspace.history
        if history is None:
            return {}
        last: dict[str, str] = {}
        for record in history.runs()[:100]:
            if record.suite in last or not record.finished:
                continue
            try:
                summary = record.summary()
            except Exception:
                continue
            last[record.suite] = f"{summary.cases_passed}/{summary.cases_total} passed"
        return last

    def _cells(self, suite: Suite) -> list[Text]:
        baseline, style = baseline_status(suite.baseline_path)
        return [
            cell(suite.name, 40, style="bold"),
            Text(f"{len(suite.cases):,}", justify="right"),
            Text(f"{suite.total_samples:,}", justify="right"),
            self._status(suite),
            Text(self._last.get(suite.name, "–")),
            Text(baseline, style=style),
            cell(str(suite.path or ""), 200, style="dim"),
        ]

    def _status(self, suite: Suite) -> Text:
        if suite.skip:
            return cell(suite.skip, 60, style="yellow")
        session = self.workspace.sessions.get(suite.name)
        if session is None:
            return Text("ready", style="dim")
        state = session.state
        if state.running:
            return Text(f"running {state.samples_done}/{state.samples_total}", style="cyan")
        report = state.report
        if report is None:
            return Text("starting", style="dim")
        if report.cancelled:
            return Text("cancelled", style="yellow")
        return Text(
            f"{report.cases_passed}/{len(report.cases)} passed",
            style="green" if report.passed else "red",
        )

    def refresh_status(self) -> None:
        """Show live progress of suites that are running, and baselines saved meanwhile."""
        table = self.query_one(DataTable)
        for suite in self.loaded.suites:
            if suite.name in self.workspace.sessions:
                table.update_cell(suite.name, "status", self._status(suite))
                shown = table.get_cell(suite.name, "baseline").plain
                if shown == "none" and suite.baseline_path.exists():
                    table.update_cell(suite.name, "baseline", Text("saved", style="green"))

    def _current(self) -> Suite | None:
        table = self.query_one(DataTable)
        suites = self.loaded.suites
        return suites[table.cursor_row] if suites and 0 <= table.cursor_row < len(suites) else None

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        """Open the suite's run of this session (live or finished); start one if it has none."""
        suite = self._runnable()
        if suite is None:
            return
        session = self.workspace.sessions.get(suite.name)
        if session is not None:
            from tui_eval.tui.screens.run import RunScreen

            self.app.push_screen(RunScreen(session, self.workspace))
            return
        self._start(suite, show=True)

    def action_new_run(self) -> None:
        """Start a new run of the suite under the cursor, and show it."""
        suite = self._runnable()
        if suite is None:
            return
        current = self.workspace.sessions.get(suite.name)
        if current is not None and current.state.running:
            self.notify("this suite is running: enter opens the run", severity="warning")
            return
        self._start(suite, show=True)

    def _runnable(self) -> Suite | None:
        suite = self._current()
        if suite is not None and suite.skip:
            self.notify(suite.skip, severity="warning")
            return None
        return suite

    def _start(self, suite: Suite, *, show: bool) -> None:
        try:
            session = self.workspace.new_session(suite)
        except EmptySelection as exc:
            self.notify(str(exc), severity="warning")
            return
        self.post_message(StartSession(session, show=show))

    def action_run_all(self) -> None:
        runnable = [s for s in self.loaded.suites if not s.skip]
        if not runnable:
            self.notify("no suite to run", severity="warning")
            return
        for position, suite in enumerate(runnable):
            self._start(suite, show=position == 0)

    def action_history(self) -> None:
        from tui_eval.tui.screens.history import HistoryScreen

        self.app.push_screen(HistoryScreen(self.workspace))

    async def action_quit(self) -> None:
        self.app.exit()

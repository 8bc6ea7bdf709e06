"""The Suites screen: every suite found, its last result and baseline; load errors inline."""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from tui_eval.report.baselines import BaselineStatus, BaselineStore
from tui_eval.service.store import RunSummary
from tui_eval.suites import LoadResult, Suite
from tui_eval.tui.messages import ResumeRun, SuitesReloaded, WatchRerun, start_run
from tui_eval.tui.screens.history import HistoryScreen
from tui_eval.tui.screens.prompt import quit_asking
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.table import Column, Table
from tui_eval.tui.widgets.text import cell
from tui_eval.tui.workspace import Workspace

_BASELINE_SHOWN = {
    BaselineStatus.MISSING: ("none", "dim"),
    BaselineStatus.CORRUPT: ("corrupt", "bold red"),
    BaselineStatus.COMPARED: ("saved", "green"),
}
INTERRUPTED = "interrupted · R resumes"
"""The status of a suite whose run can be finished (it fits the column at 80 and 120)."""
BaselinesSeen = dict[Path, tuple[tuple[int, int], tuple[str, str]]]
"""Each baseline file's look, by the size and modification time it was read at."""


def baseline_status(path: Path, seen: BaselinesSeen) -> tuple[str, str]:
    """`saved`, `none` or `corrupt` and its style; a repaint re-reads only a changed file."""
    try:
        stat = path.stat()
    except OSError:
        return _BASELINE_SHOWN[BaselineStatus.MISSING]
    key = (stat.st_size, stat.st_mtime_ns)
    if path in seen and seen[path][0] == key:
        return seen[path][1]
    shown = _BASELINE_SHOWN[BaselineStore(path).read().status]
    seen[path] = (key, shown)
    return shown


class SuitesScreen(Screen[None]):
    """`enter` runs (or opens the running) suite under the cursor; `*` runs them all."""

    TITLE = "Suites"
    BINDINGS = [
        Binding("q,escape", "quit", "Quit", id="back"),
        # One of the two shows, saying what enter does for the suite under the cursor
        # (priority: before the table's own enter, which only says "Open").
        Binding(
            "enter", "open_run", "Open", priority=True, tooltip="Open the suite's run", id="open"
        ),
        Binding("enter", "first_run", "Run", priority=True, tooltip="Run the suite", id="open"),
        Binding("r", "new_run", "New run", id="rerun"),
        Binding("R", "resume", "Resume", id="resume"),
        Binding("asterisk", "run_all", "Run all", id="run-all"),
        Binding("h", "history", "History", id="history"),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self._last: dict[str, Text] = {}
        self._baselines: BaselinesSeen = {}
        self._enter_opens: bool | None = None
        """Whether enter opens a run (else starts one), as the footer says now."""

    # (key, label, width, priority): at a narrow width the lowest priorities go first.
    COLUMNS = (
        Column("name", "suite", 14, 0, grow=8),
        Column("cases", "cases", 6, 4),
        Column("samples", "samples", 7, 5),
        Column("status", "now", 26, 1, grow=14),
        Column("last", "last run", 20, 3, grow=8),
        Column("baseline", "baseline", 8, 2),
        Column("path", "file", 28, 6, grow=20),
    )

    def compose(self) -> ComposeResult:
        yield Static("tui-eval · suites", id="screen-title")
        yield Table(id="suites")
        yield Static(id="load-errors")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._seen_finished: set[int] = set()
        self._last = self._last_results()
        self.rebuild_table()
        self._ticks = self.set_interval(0.25, self.refresh_status)
        self.query_one(DataTable).focus()

    def on_screen_resume(self) -> None:
        self.wake()
        self._sync_enter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """enter is "Open" on a suite with a run, else "Run" (greyed where it cannot run)."""
        if action in ("open_run", "first_run"):
            suite = self._current()
            opens = self._has_run(suite)
            if action == "open_run":
                return opens if suite is not None else None
            return None if suite is not None and suite.skip and not opens else not opens
        return True

    def _sync_enter(self) -> None:
        """Relabel enter when the suite under the cursor gets (or loses) a run."""
        opens = self._has_run(self._current())
        if opens != self._enter_opens:
            self._enter_opens = opens
            self.refresh_bindings()

    def _has_run(self, suite: Suite | None) -> bool:
        return suite is not None and suite.name in self.workspace.sessions

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._sync_enter()

    def on_screen_suspend(self) -> None:
        self._ticks.pause()

    def wake(self) -> None:
        """Follow the runs again (one started, or this screen is shown again)."""
        self._ticks.resume()

    def rebuild_table(self) -> None:
        """Fill the table again (on mount, and after a reload)."""
        rows = [(suite.name, self._cells(suite)) for suite in self.loaded.suites]
        self.query_one(Table).show(self.COLUMNS, rows)
        self._show_errors()
        self._sync_enter()

    def _show_errors(self) -> None:
        errors = Text()
        for error in [*self.loaded.errors, *self.workspace.edit_errors.values()]:
            errors.append("⚠ ", style="bold red")
            errors.append_text(cell(error.message, 300, style="red"))
            if error.path in self.workspace.edit_errors:
                errors.append("  (the previous version stays in use)", style="dim")
            errors.append("\n")
        widget = self.query_one("#load-errors", Static)
        widget.update(errors)
        widget.display = bool(errors.plain)

    def _last_results(self) -> dict[str, Text]:
        """Each suite's newest recorded run: its result, marked as a rerun or interrupted."""
        history = self.workspace.history
        if history is None:
            return {}
        last: dict[str, Text] = {}
        for record in history.runs()[:200]:
            if record.suite in last:
                continue
            rerun = " · rerun" if record.request.is_partial else ""
            if record.resumable:
                last[record.suite] = Text(f"interrupted{rerun}", style="yellow")
                continue
            try:
                summary = record.summary()
            except Exception:
                continue
            when = time.strftime("%H:%M", time.localtime(record.started_at))
            last[record.suite] = Text(
                f"{summary.cases_text()} passed{rerun} · {when}",
                style="green" if summary.cases_passed == summary.cases_decided else "red",
            )
        return last

    def _cells(self, suite: Suite) -> dict[str, Text]:
        baseline, style = baseline_status(BaselineStore.for_suite(suite).source, self._baselines)
        return {
            "name": cell(suite.name, 40, style="bold"),
            "cases": Text(f"{len(suite.cases):,}", justify="right"),
            "samples": Text(f"{suite.total_samples:,}", justify="right"),
            "status": self._status(suite),
            "last": self._last.get(suite.name, Text("–", style="dim")),
            "baseline": Text(baseline, style=style),
            "path": cell(str(suite.path or ""), 200, style="dim"),
        }

    def _status(self, suite: Suite) -> Text:
        if suite.skip:
            return cell(suite.skip, 60, style="yellow")
        if suite.path is not None and suite.path in self.workspace.edit_errors:
            return Text("⚠ edit does not load", style="bold red")
        session = self.workspace.sessions.get(suite.name)
        reloaded = " · reloaded" if suite.name in self.workspace.reloaded else ""
        if session is None:
            last = self._last.get(suite.name)
            if last is not None and last.plain.startswith("interrupted"):
                return Text(INTERRUPTED, style="yellow")
            return Text(f"ready{reloaded}", style="cyan" if reloaded else "dim")
        state = session.state
        if state.running:
            return Text(f"running {state.samples_done}/{state.samples_total}", style="cyan")
        report = state.report
        if report is None:
            return Text("starting", style="dim")
        if report.cancelled:
            return Text(INTERRUPTED, style="yellow")
        return Text(  # passed of the decided cases, as the Run header and last run count
            f"{RunSummary.of(report).cases_text()} passed{reloaded}",
            style="green" if report.passed else "red",
        )

    def refresh_status(self) -> None:
        """Live progress, and last results as runs end; idle, the timer pauses until `wake()`."""
        sessions = self.workspace.sessions.values()
        if not any(session.state.running for session in sessions):
            self._ticks.pause()
        finished = {id(s) for s in sessions if s.state.report is not None}
        if finished - self._seen_finished:
            self._seen_finished = finished
            self._last = self._last_results()  # a run of this session ended: it is the last run
        self._sync_enter()  # a run started (`r`, `*`) makes enter open it
        table = self.query_one(Table)
        for suite in self.loaded.suites:
            if suite.name not in self.workspace.sessions:
                continue
            cells = self._cells(suite)
            for key in ("status", "last", "baseline"):
                table.set_cell(suite.name, key, cells[key])

    @on(SuitesReloaded)
    def _suites_reloaded(self, message: SuitesReloaded) -> None:
        self.rebuild_table()

    @on(WatchRerun)
    def _watch_rerun(self, message: WatchRerun) -> None:
        self.wake()

    def action_resume(self) -> None:
        """Finish the suite's interrupted run (the newest one in the history)."""
        suite = self._current()
        history = self.workspace.history
        if suite is None or history is None:
            return
        record = next((r for r in history.runs() if r.suite == suite.name), None)
        if record is None or not record.resumable:
            self.notify("this suite has no interrupted run to resume", timeout=3)
            return
        self.post_message(ResumeRun(record))

    @property
    def loaded(self) -> LoadResult:
        """The suites found (the workspace's: reloads replace them)."""
        return self.workspace.loaded

    def _current(self) -> Suite | None:
        row, suites = self.query_one(Table).selected(), self.loaded.suites
        return suites[row] if row is not None and row < len(suites) else None

    def action_open_run(self) -> None:
        self.action_open()

    def action_first_run(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        """Open the suite's run of this session (live or finished); start one if it has none."""
        suite = self._runnable()
        if suite is None:
            return
        session = self.workspace.sessions.get(suite.name)
        if session is not None:
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
        if start_run(self, self.workspace, suite, show=show):
            self.wake()

    def action_run_all(self) -> None:
        runnable = [s for s in self.loaded.suites if not s.skip]
        if not runnable:
            self.notify("no suite to run", severity="warning")
            return
        for suite in runnable:
            self._start(suite, show=False)
        self.notify(
            f"started {len(runnable)} suite(s): each row shows its progress; enter opens one",
            timeout=4,
        )

    def action_history(self) -> None:
        self.app.push_screen(HistoryScreen(self.workspace))

    def action_quit(self) -> None:
        quit_asking(self.app)

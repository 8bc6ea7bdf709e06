"""The History screen: past runs of this project; open one read-only, or compare two."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.report.baselines import covered
from tui_eval.report.report import Report
from tui_eval.service.store import RunRecord, RunSummary
from tui_eval.tui.messages import ResumeRun, ShowReport
from tui_eval.tui.screens.diff import DiffScreen
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.table import Column, Table
from tui_eval.tui.widgets.text import cell
from tui_eval.tui.workspace import Workspace

HISTORY_LIMIT = 200


class HistoryScreen(Screen[None]):
    """Runs newest first. `space` marks a run; `c` compares the marked run with the one under the cursor."""

    TITLE = "History"
    BINDINGS = [
        Binding("q,escape", "app.back", "Back", id="back"),
        Binding("enter", "open", "Open", show=False, id="open"),
        Binding("space", "mark", "Mark", id="mark"),
        Binding(
            "c", "compare", "Compare", tooltip="The marked run with the cursor's", id="compare"
        ),
        Binding("R", "resume", "Resume", tooltip="Resume an interrupted run", id="resume"),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.records: list[RunRecord] = []
        self.marked: int | None = None
        self._reports: dict[str, Report] = {}

    def compose(self) -> ComposeResult:
        yield Static("History · past runs of this project (newest first)", id="screen-title")
        yield Table(id="runs")
        yield KeyFooter()

    COLUMNS = (
        # At 80 columns the pass count stays and samples, tokens and the run id go.
        Column("mark", "", 1, 0),
        Column("when", "started", 14, 1),
        Column("suite", "suite", 14, 3, grow=14),
        Column("status", "status", 20, 2, grow=8),
        Column("cases", "cases passed", 12, 4),
        Column("samples", "samples", 8, 6),
        Column("tokens", "tokens", 9, 7),
        Column("id", "run", 40, 8),
    )

    def on_mount(self) -> None:
        history = self.workspace.history
        self.records = history.runs()[:HISTORY_LIMIT] if history is not None else []
        rows = [(record.run_id, self._cells(record)) for record in self.records]
        self.query_one(Table).show(self.COLUMNS, rows)
        if not self.records:
            self.notify("no runs recorded yet", timeout=3)
        self.query_one(Table).focus()

    @staticmethod
    def _cells(record: RunRecord) -> dict[str, Text]:
        try:
            summary: RunSummary | None = record.summary()
        except Exception:
            summary = None
        cases = summary.cases_text() if summary else "?"
        status = record.status
        if record.request.is_partial:
            status += " · rerun"
        if summary is not None and summary.resumed:
            status += " · resumed"
        return {
            "mark": Text(""),
            "when": Text(_when(record)),
            "suite": cell(record.suite, 40),
            "status": Text(
                status,
                style={"finished": "green", "cancelled": "yellow"}.get(record.status, "red"),
            ),
            "cases": Text(cases, justify="right"),
            "samples": Text(f"{summary.samples:,}" if summary else "?", justify="right"),
            "tokens": Text(f"{summary.tokens:,}" if summary else "?", justify="right"),
            "id": Text(record.run_id, style="dim"),
        }

    def _report(self, record: RunRecord) -> Report | None:
        if record.run_id not in self._reports:
            try:
                self._reports[record.run_id] = record.load_report()
            except Exception:
                return None
        return self._reports[record.run_id]

    def action_open(self) -> None:
        index = self.query_one(Table).selected()
        if index is None:
            return
        report = self._report(self.records[index])
        if report is None:
            self.notify("this run's report cannot be read", severity="error")
            return
        self.post_message(ShowReport(report, f"{report.name} · {self.records[index].run_id}"))

    def action_resume(self) -> None:
        index = self.query_one(Table).selected()
        if index is None:
            return
        record = self.records[index]
        if not record.resumable:
            self.notify("this run has finished: only an interrupted or cancelled run resumes")
            return
        self.post_message(ResumeRun(record))

    def action_mark(self) -> None:
        index = self.query_one(Table).selected()
        if index is None:
            return
        table = self.query_one(Table)
        if self.marked is not None:
            table.set_cell(self.records[self.marked].run_id, "mark", Text(""))
        self.marked = None if self.marked == index else index
        if self.marked is not None:
            table.set_cell(self.records[index].run_id, "mark", Text("●", style="bold yellow"))

    def action_compare(self) -> None:
        index = self.query_one(Table).selected()
        if index is None or self.marked is None or index == self.marked:
            self.notify("mark a run with space, move to another, then press c", timeout=3)
            return
        older, newer = sorted((index, self.marked), reverse=True)  # newest first in the list
        current, baseline = self._report(self.records[newer]), self._report(self.records[older])
        if current is None or baseline is None:
            self.notify("one of these runs cannot be read", severity="error")
            return
        if self.records[newer].request.is_partial:  # a rerun of some cases: the rest not run
            baseline = covered(baseline, only=[case.name for case in current.cases])
        try:
            diff = current.compare(baseline)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        suite = self.records[newer].suite
        title = f"{suite} · {_when(self.records[newer])} vs {_when(self.records[older])}"
        self.app.push_screen(DiffScreen(diff, current, baseline, title=title))


def _when(record: RunRecord) -> str:
    """When a run started, as the list shows it (`05-28 20:26:40`)."""
    return time.strftime("%m-%d %H:%M:%S", time.localtime(record.started_at))

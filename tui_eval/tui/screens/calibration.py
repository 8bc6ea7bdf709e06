"""The Calibration screen: κ, agreement, TPR/TNR, disagreements, as `tui-eval calibrate` finds."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.calibration.calibrate import CalibrationError, calibrate
from tui_eval.calibration.results import Calibration, JudgedLabel, ReviewedLabel
from tui_eval.suites import Suite
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.sample_text import verdict_text
from tui_eval.tui.widgets.table import Column, Table
from tui_eval.tui.widgets.text import cell, plain
from tui_eval.util.text import value_text


class CalibrationScreen(Screen[None]):
    """Judge–human agreement on a suite's labels, and the outputs they disagree on."""

    BINDINGS = [
        Binding("q,escape", "app.back", "Back", id="back"),
        Binding("r", "recalibrate", "Recalibrate", id="rerun"),
    ]

    def __init__(self, suite: Suite, *, title: str = "") -> None:
        super().__init__()
        self.suite = suite
        self.title_text = title or suite.name
        self.calibration: Calibration | None = None
        """The result, once judged (None while the judges work, or on an error)."""
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(cell(f"Calibration · {self.title_text}", 200), id="screen-title")
        yield Static(Text("judging the labelled outputs…", style="dim"), id="calibration-summary")
        yield Table(id="disagreements")
        yield KeyFooter()

    COLUMNS = (
        # The reason takes what the others leave, cut with an ellipsis (enter shows it whole).
        Column("case", "case", 16, 0, grow=24),
        Column("check", "check", 12, 2, grow=8),
        Column("human", "human", 12, 1),
        Column("judge", "verdict", 24, 1),  # the judge's, or the fault reviewer's
        Column("reason", "reason", 20, 0, grow=400),
    )

    def on_mount(self) -> None:
        self.query_one(Table).show(self.COLUMNS, [])
        self.run_calibration()

    @work(exclusive=True, group="calibrate")
    async def run_calibration(self) -> None:
        """Judge every labelled output (cached answers are reused) and show the result."""
        try:
            calibration = await calibrate(self.suite)
        except CalibrationError as exc:
            self.error = str(exc)
            self.query_one("#calibration-summary", Static).update(
                plain(self.error, style="bold red")
            )
            return
        self.calibration = calibration
        self.show_calibration(calibration)

    def show_calibration(self, calibration: Calibration) -> None:
        """Fill the summary and the table of disagreements."""
        summary = Text(calibration.summary())
        for error in calibration.errors:
            summary.append("\njudge error: ", style="bold red")
            summary.append_text(cell(f"{error.record.case} · {error.record.check}", 60))
            summary.append(": ")
            summary.append_text(cell(error.error, 160))
        for reason in calibration.skipped:
            summary.append("\nskipped: ", style="yellow")
            summary.append_text(plain(reason))
        if calibration.stopped:
            summary.append(f"\nstopped: {calibration.stopped}", style="yellow")
        faults = self.fault_disagreements
        count = len(calibration.disagreements) + len(faults)
        summary.append(
            f"\n{count} disagreement{'s' if count != 1 else ''}"
            + (" · enter opens one with both verdicts" if count else ""),
            style="bold",
        )
        self.query_one("#calibration-summary", Static).update(summary)
        table = self.query_one(Table)
        rows = [
            (
                f"judge:{position}",
                {
                    "case": cell(item.record.case, 200),
                    "check": cell(item.record.check, 100),
                    "human": Text(_human(item), style="cyan"),
                    "judge": Text(_judge(item), style="green" if item.judge.passed else "red"),
                    "reason": cell(item.judge.reason, 1000),
                },
            )
            for position, item in enumerate(calibration.disagreements)
        ]
        rows += [
            (
                f"fault:{position}",
                {
                    "case": cell(item.record.case, 200),
                    "check": cell(item.record.check, 100),
                    "human": cell(str(item.record.label), 40, style="cyan"),
                    "judge": cell(_reviewer(item), 60, style="yellow"),
                    "reason": cell(item.fault.reason, 1000),
                },
            )
            for position, item in enumerate(faults)
        ]
        table.show(self.COLUMNS, rows)
        if count:
            table.focus()

    @property
    def fault_disagreements(self) -> list[ReviewedLabel]:
        """The labelled conversations whose fault the reviewer and the human disagree on."""
        reviewer = self.calibration.reviewer if self.calibration is not None else None
        return reviewer.reviewer_disagreements if reviewer is not None else []

    def action_open(self) -> None:
        """Open the disagreement under the cursor with both verdicts."""
        row = self.query_one(Table).selected()
        if self.calibration is None or row is None:
            return
        judged = self.calibration.disagreements
        if row < len(judged):
            shown = judge_verdicts(judged[row])
        else:
            shown = fault_verdicts(self.fault_disagreements[row - len(judged)])
        self.app.push_screen(VerdictsScreen(shown))

    def action_recalibrate(self) -> None:
        self.query_one("#calibration-summary", Static).update(
            Text("judging the labelled outputs…", style="dim")
        )
        self.run_calibration()


def _human(item: JudgedLabel) -> str:
    label = item.record.label
    shown = label if isinstance(label, str) else f"{label:.1f}"
    return (
        f"{'pass' if item.human_passed else 'fail'} ({shown})"
        if shown not in ("pass", "fail")
        else shown
    )


def _judge(item: JudgedLabel) -> str:
    verdict = "pass" if item.judge.passed else "fail"
    if item.judge.score_text:
        return f"{verdict} ({item.judge.score_text})"
    return verdict


def _reviewer(item: ReviewedLabel) -> str:
    fault = item.fault
    return f"{fault.party} at turn {fault.turn}" if fault.turn is not None else fault.party


def _by_human(body: Text, label: str, labeler: str | None, note: str | None) -> None:
    body.append("Human: ", style="bold")
    body.append_text(plain(label, style="cyan"))
    if labeler:
        body.append_text(plain(f" (by {labeler})", style="dim"))
    if note:
        body.append("\nNote: ", style="bold")
        body.append_text(plain(note))


def fault_verdicts(item: ReviewedLabel) -> tuple[str, Text]:
    """A labelled conversation: the human's and the reviewer's blame, and the transcript."""
    record, body = item.record, Text()
    _by_human(body, str(record.label), record.labeler, record.note)
    body.append("\nReviewer: ", style="bold")
    body.append_text(plain(f"{_reviewer(item)} (by {item.fault.by})", style="yellow"))
    body.append("\n")
    body.append_text(plain(item.fault.reason, limit=4000))
    conversation = record.run.conversation if record.run is not None else None
    body.append("\n\nTranscript\n" if conversation else "\n\nOutput\n", style="bold")
    shown = conversation.transcript() if conversation else value_text(record.output, pretty=True)
    body.append_text(plain(shown))
    return f"{record.case} · fault", body


def judge_verdicts(item: JudgedLabel) -> tuple[str, Text]:
    """An output with both verdicts: the human's label (and note) and the judge's."""
    record, body = item.record, Text()
    _by_human(body, _human(item), record.labeler, record.note)
    body.append("\n")
    body.append_text(verdict_text(item.judge))
    body.append("\n\nOutput\n", style="bold")
    body.append_text(plain(value_text(record.output, pretty=True)))
    return f"{record.case} · {record.check}", body


class VerdictsScreen(Screen[None]):
    """A labelled item with both verdicts, as `judge_verdicts` or `fault_verdicts` show them."""

    BINDINGS = [Binding("q,escape", "app.back", "Back", id="back")]

    def __init__(self, shown: tuple[str, Text]) -> None:
        super().__init__()
        self.subject, self.body = shown

    def compose(self) -> ComposeResult:
        yield Static(cell(f"Both verdicts · {self.subject}", 200), id="screen-title")
        with VerticalScroll():
            yield Static(self.body, classes="tab-body")
        yield KeyFooter()

"""The Label screen: judged outputs, then failed conversations, each labelled blind with one
key (the verdict stays hidden until labelled); labels go at once to the suite's `LabelStore`."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Input, Static

from tui_eval.calibration.label_queue import (
    FaultItem,
    LabelItem,
    QueueItem,
    fault_items,
    judged_items,
    label_progress,
    label_queue,
)
from tui_eval.calibration.labels import Label, LabelRecord, LabelsFileError, LabelStore
from tui_eval.checks.faults import FAULT_CHECK, Party
from tui_eval.service.session import RunSession
from tui_eval.suites import Suite
from tui_eval.tui.screens.calibration import CalibrationScreen
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.sample_text import verdict_text
from tui_eval.tui.widgets.text import cell, plain
from tui_eval.util.text import value_text


@dataclass(frozen=True, slots=True)
class _Undo:
    """What one label changed, to take it back."""

    position: int
    key: tuple[str, str, str]
    previous: LabelRecord | None


class LabelScreen(Screen[None]):
    """Label judged outputs and failed conversations' faults, the most useful first."""

    BINDINGS = [
        Binding("q,escape", "back", "Back", id="back"),
        Binding("y", "label('pass')", "Pass", id="label-pass"),
        Binding("x", "label('fail')", "Fail", id="label-fail"),
        Binding("0", "score(0.0)", "Score", key_display="0–5", tooltip="Score 0", id="score-0"),
        Binding("1", "score(0.2)", "Score 0.2", show=False, id="score-1"),
        Binding("2", "score(0.4)", "Score 0.4", show=False, id="score-2"),
        Binding("3", "score(0.6)", "Score 0.6", show=False, id="score-3"),
        Binding("4", "score(0.8)", "Score 0.8", show=False, id="score-4"),
        Binding("5", "score(1.0)", "Score 1", show=False, id="score-5"),
        # Who failed a conversation: `u` is undo, so the user simulator's is `h` (the human
        # side of the conversation), and `a` accepts a baseline, so the agent's is `g`.
        # Shown only on a conversation, as pass/fail only on an output.
        Binding("h", "fault('user')", "User", tooltip="The user's fault", id="fault-user"),
        Binding("g", "fault('agent')", "Agent", tooltip="The agent's fault", id="fault-agent"),
        Binding(
            "e",
            "fault('environment')",
            "Environment",
            tooltip="The environment's fault (a tool or the infrastructure)",
            id="fault-environment",
        ),
        Binding("s", "skip", "Skip", id="skip"),
        Binding("u", "undo", "Undo", id="undo"),
        Binding("n", "note", "Note", id="note"),
        Binding("b", "reveal", "Show judge", tooltip="The judge's verdict on it", id="reveal"),
        Binding("c", "calibrate", "Calibrate", id="calibrate"),
    ]

    def __init__(
        self,
        session: RunSession,
        suite: Suite,
        *,
        items: list[QueueItem] | None = None,
        store: LabelStore | None = None,
        blind: bool = True,
    ) -> None:
        super().__init__()
        self.session = session
        self.suite = suite
        self.store = store if store is not None else LabelStore.of(suite)
        self.all_items = label_queue(session.state.cases, self.store)
        self.items = items if items is not None else self.all_items
        """The outputs and conversations to label, in order."""
        self.position = 0
        """The item shown now."""
        self.blind = blind
        """Hide the judge's (or fault reviewer's) verdict until the item is labelled."""
        self.revealed: int | None = None
        """The position whose verdict `b` showed."""
        self.note: str | None = None
        self._undo: list[_Undo] = []
        self._last: tuple[QueueItem, LabelRecord] | None = None

    @property
    def item(self) -> QueueItem | None:
        """The output or conversation shown now (None: the queue is done)."""
        return self.items[self.position] if self.position < len(self.items) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Party keys on a conversation, pass/fail and scores on an output (the footer follows)."""
        on_fault = isinstance(self.item, FaultItem)
        if action == "fault":
            return on_fault
        if action in ("label", "score"):
            return not on_fault
        return True

    def compose(self) -> ComposeResult:
        yield Static(id="screen-title")
        yield Static(id="label-progress")
        with VerticalScroll(id="label-body"):
            yield Static(id="label-output", classes="tab-body")
            yield Static(id="label-verdict", classes="tab-body")
        yield Static(id="label-last")
        yield Input(placeholder="a note for the next label (enter keeps it)", id="label-note")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#label-note", Input).display = False
        self.show_item()

    # -- showing -----------------------------------------------------------------------
    def show_item(self) -> None:
        """Show the current item, and the verdict on it unless blind and unlabelled."""
        self.refresh_bindings()  # the keys that apply depend on the item
        progress = label_progress(self.all_items, self.store)
        self.query_one("#label-progress", Static).update(
            Text(f"{progress} · labels in {self.store.path}", style="bold")
        )
        item = self.item
        title = Text(f"Label · {self.session.title}")
        output = self.query_one("#label-output", Static)
        verdict = self.query_one("#label-verdict", Static)
        self.query_one("#label-last", Static).update(self._last_verdict())
        if item is None:
            self.query_one("#screen-title", Static).update(title)
            output.update(Text("Every output here has been seen. c calibrates the judge.", "dim"))
            verdict.update(Text())
            return
        title.append(f" · {self.position + 1}/{len(self.items)} · ")
        title.append_text(cell(item.case, 80))
        check = FAULT_CHECK if isinstance(item, FaultItem) else item.check.name
        title.append(f" · sample {item.sample_index + 1} · {check}")
        self.query_one("#screen-title", Static).update(title)
        body = Text()
        existing = self.store.find(item.key)
        if isinstance(item, FaultItem):  # its transcript and failed checks
            body.append("Conversation\n", style="bold")
            body.append_text(plain(item.conversation.transcript()))
            failed = [result for result in item.sample.checks if not result.passed]
            if failed:
                body.append("\n\nFailed checks\n", style="bold")
            for result in failed:
                body.append_text(cell(result.name, 60))
                body.append(": ")
                body.append_text(plain(result.reason, limit=600))
                body.append("\n")
            labelled = f": the {existing.label}'s fault" if existing else ""
            hint = (
                "the verdict on whose fault it is stays hidden until you label (blind) · "
                "h user · g agent · e environment · s skip · b show"
            )
            shown = fault_text(item)
        else:
            task = _task(item)
            if task:
                body.append("Task\n", style="bold")
                body.append_text(plain(task, limit=4000))
                body.append("\n\n")
            body.append("Output\n", style="bold")
            body.append_text(plain(value_text(item.output, pretty=True)))
            labelled = f" {_label_text(existing.label)}" if existing else ""
            hint = (
                "judge's verdict hidden until you label (blind) · y pass · x fail · "
                "0–5 score · s skip · b show"
            )
            shown = verdict_text(item.check)
        if existing is not None:
            body.append(f"\n\nlabelled{labelled}", style="bold cyan")
        output.update(body)
        blind = self.blind and existing is None and self.revealed != self.position
        verdict.update(Text(hint, style="dim") if blind else shown)

    def _last_verdict(self) -> Text:
        if self._last is None:
            return Text()
        item, record = self._last
        text = Text(f"last: {item.case} — you: {_label_text(record.label)} · ", style="dim")
        if isinstance(item, FaultItem):
            agrees = record.label == item.fault.party
            text.append_text(fault_text(item, short=True))
        else:
            agrees = record.passed(item.check.threshold or 0.5) == item.check.passed
            text.append_text(verdict_text(item.check, short=True))
        text.append("  (agree)" if agrees else "  (DISAGREE)", "green" if agrees else "bold red")
        return text

    # -- labelling ---------------------------------------------------------------------
    def action_label(self, value: str) -> None:
        item = self.item
        if isinstance(item, LabelItem):
            self._give(item, item.label("pass" if value == "pass" else "fail", note=self.note))

    def action_score(self, value: float) -> None:
        """A score label (`0`..`5`: 0.0, 0.2, … 1.0), for checks that give a score."""
        item = self.item
        if not isinstance(item, LabelItem):
            return
        if item.check.score is None:
            self.notify("this check gives no score: y pass, x fail", timeout=2)
            return
        self._give(item, item.label(float(value), note=self.note))

    def action_fault(self, party: Party) -> None:
        """Label the conversation on screen as `party`'s fault."""
        item = self.item
        if isinstance(item, FaultItem):
            self._give(item, item.label(party, note=self.note))

    def _give(self, item: QueueItem, record: LabelRecord) -> None:
        try:
            previous = self.store.put(record)
        except LabelsFileError as exc:  # someone broke the file since it was opened
            self.notify(str(exc), severity="error")
            return
        self._undo.append(_Undo(self.position, record.key, previous))
        self._last = (item, record)
        self.note = None
        self.position += 1
        self.show_item()

    def action_skip(self) -> None:
        if self.item is not None:
            self.position += 1
            self.show_item()

    def action_undo(self) -> None:
        """Take back the last label and show its output again."""
        if not self._undo:
            self.notify("nothing to undo", timeout=2)
            return
        undo = self._undo[-1]
        try:
            self.store.restore(undo.key, undo.previous)
        except LabelsFileError as exc:
            self.notify(str(exc), severity="error")
            return
        self._undo.pop()
        self.position = undo.position
        self._last = None
        self.notify("label undone", timeout=1.5)
        self.show_item()

    def action_note(self) -> None:
        field = self.query_one("#label-note", Input)
        field.display = True
        field.value = self.note or ""
        field.focus()

    @on(Input.Submitted, "#label-note")
    def _note_given(self, event: Input.Submitted) -> None:
        self.note = event.value.strip() or None
        event.input.display = False
        self.focus()
        if self.note:
            self.notify(f"note kept for the next label: {self.note}", timeout=2)

    def action_reveal(self) -> None:
        """Show (or hide) the verdict on the item on screen; the next item is blind again."""
        self.revealed = None if self.revealed == self.position else self.position
        self.show_item()

    def action_calibrate(self) -> None:
        self.app.push_screen(CalibrationScreen(self.suite, title=self.session.title))

    def action_back(self) -> None:
        if self.query_one("#label-note", Input).has_focus:
            self.query_one("#label-note", Input).display = False
            self.focus()
            return
        self.app.pop_screen()


def fault_text(item: FaultItem, *, short: bool = False) -> Text:
    """Who the run blamed for a conversation — the reviewer, or the rules — and why."""
    fault = item.fault
    text = Text()
    text.append(f"{_DECIDERS.get(fault.by, fault.by)}: ")
    text.append(fault.party, "bold")
    if fault.turn is not None:
        text.append(f" at turn {fault.turn}")
    text.append(f" (by {fault.by})", "dim")
    if not short and fault.reason:
        text.append("\n")
        text.append_text(plain(fault.reason, limit=2000))
    return text


_DECIDERS = {"reviewer": "reviewer", "rule": "rules", "default": "no reviewer"}
"""Who decided a fault, by its `by`, as the Label screen names it."""


def _task(item: LabelItem) -> str | None:
    run = item.sample.run
    if run is None:
        return None
    return next((m.content for m in run.messages if m.role == "user" and m.content), None)


def _label_text(label: Label) -> str:
    return label if isinstance(label, str) else f"score {label:.1f}"


def open_label_screen(
    screen: Screen[None],
    session: RunSession,
    suite: Suite | None,
    *,
    only: tuple[int, int] | None = None,
) -> None:
    """Open the Label screen on a run (or a sample: `only` = case, sample) with a suite file."""
    suite = suite or session.suite
    if suite is None or suite.path is None:
        screen.notify("labels live beside a suite file: open the run from its suite", timeout=3)
        return
    try:
        store = LabelStore.of(suite)
    except LabelsFileError as exc:
        screen.notify(str(exc), severity="error")
        return
    cases = session.state.cases
    every: list[QueueItem] = [*judged_items(cases), *fault_items(cases)]
    items = None
    if only is not None:
        items = [item for item in every if (item.case_index, item.sample_index) == only]
        if not items:
            screen.notify(
                "no judged check or failed conversation on this sample to label", timeout=3
            )
            return
    elif not every:
        screen.notify("no judged samples or failed conversations in this run to label", timeout=3)
        return
    screen.app.push_screen(LabelScreen(session, suite, items=items, store=store))

"""A failing sample beside the closest passing sample of its case, aligned, with the first
place they part ways highlighted on both sides: two conversations turn beside turn."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.core.results import SampleResult
from tui_eval.report.divergence import Divergence, first_divergence, output_lines, trajectory_lines
from tui_eval.tui.widgets.conversation import fault_text, turn_rows
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.sample_text import render_checks
from tui_eval.tui.widgets.text import cell, plain

HIGHLIGHT = "bold reverse"


class SamplePairScreen(Screen[None]):
    """Two samples of one case side by side: trajectories and outputs line by line."""

    TITLE = "Failing beside passing"
    BINDINGS = [
        Binding("q,escape", "app.back", "Back", id="back"),
    ]

    def __init__(self, case_name: str, failing: SampleResult, passing: SampleResult) -> None:
        super().__init__()
        self.case_name = case_name
        self.failing = failing
        self.passing = passing
        self.divergence: Divergence = first_divergence(failing, passing)

    def compose(self) -> ComposeResult:
        title = Text("Failing beside passing · ")
        title.append_text(cell(self.case_name, 80))
        yield Static(title, id="screen-title")
        first = Text("first divergence: ", style="bold")
        first.append_text(cell(self.divergence.description, 200, style="yellow"))
        yield Static(first, id="divergence")
        if self._conversations():
            with VerticalScroll(id="turn-pairs"):
                yield from self._turns()
            yield KeyFooter()
            return
        with Horizontal(id="sides"):
            for label, sample in (("failing", self.failing), ("closest passing", self.passing)):
                with VerticalScroll(classes="side"):
                    yield Static(self._side(label, sample))
        yield KeyFooter()

    def _side(self, label: str, sample: SampleResult) -> Text:
        text = Text()
        text.append(
            f"{label} · sample {sample.index + 1}: {sample.status}\n\n", style="bold underline"
        )
        text.append("trajectory\n", style="bold")
        calls = trajectory_lines(sample)
        if not calls:
            text.append("(no tool calls)\n", style="dim")
        for index, line in enumerate(calls):
            self._line(
                text, line, self.divergence.where == "trajectory" and index == self.divergence.line
            )
        text.append("\noutput\n", style="bold")
        for index, line in enumerate(output_lines(sample)[:400]):
            self._line(
                text, line, self.divergence.where == "output" and index == self.divergence.line
            )
        text.append("\nchecks\n", style="bold")
        text.append_text(render_checks(sample))
        return text

    def on_mount(self) -> None:
        if self.query("#parting"):
            # Once laid out: where the two conversations part ways, in view.
            scroll = self.query_one("#turn-pairs", VerticalScroll)
            parting = self.query_one("#parting")
            self.call_after_refresh(scroll.scroll_to_widget, parting, animate=False)

    def _conversations(self) -> bool:
        return all(s.run is not None and s.run.conversation is not None for s in self.sides)

    @property
    def sides(self) -> tuple[SampleResult, SampleResult]:
        """The failing sample, then the passing one."""
        return self.failing, self.passing

    def _turns(self) -> ComposeResult:
        """Both conversations row by row: turn N starts on the same line on both sides."""
        heads = []
        for label, sample in (("failing", self.failing), ("closest passing", self.passing)):
            head = Text(f"{label} · sample {sample.index + 1}: {sample.status}", style="bold")
            if sample.fault is not None:
                head.append("\n")
                head.append_text(fault_text(sample.fault, excluded=sample.excluded, reason=False))
            heads.append(head)
        yield self._row(*heads)
        divergence = self.divergence
        mark = divergence.line + 1 if divergence.where == "conversation" else None
        left = self.failing.run.conversation if self.failing.run is not None else None
        right = self.passing.run.conversation if self.passing.run is not None else None
        rows = turn_rows(left, right, mark=mark)
        for number, (before, after) in enumerate(rows, 1):
            yield self._row(before, after, parting=number == mark)
        yield self._row(*(render_checks(sample) for sample in self.sides))

    @staticmethod
    def _row(left: Text, right: Text, *, parting: bool = False) -> Horizontal:
        return Horizontal(
            Static(left, classes="pair-cell"),
            Static(right, classes="pair-cell"),
            classes="pair-row",
            id="parting" if parting else None,
        )

    @staticmethod
    def _line(text: Text, line: str, highlighted: bool) -> None:
        text.append_text(plain(line, limit=500, style=HIGHLIGHT if highlighted else ""))
        text.append("\n")

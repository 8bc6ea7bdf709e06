"""The Sample screen: one sample's output, trajectory or conversation, checks, error, usage."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Markdown, Static, TabbedContent, TabPane

from tui_eval.core.results import SampleResult
from tui_eval.report.divergence import closest_passing
from tui_eval.service.session import RunSession
from tui_eval.tui.screens.full_text import FullTextScreen
from tui_eval.tui.screens.labels import open_label_screen
from tui_eval.tui.screens.side_by_side import SideBySideScreen
from tui_eval.tui.widgets.clamped_text import ClampedText
from tui_eval.tui.widgets.conversation import LEFT_OUT, TurnList, fault_text
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.sample_text import render_checks, render_trajectory, render_usage
from tui_eval.tui.widgets.text import DISPLAY_LIMIT, cell, format_ms, plain
from tui_eval.util.text import sanitize, value_text

TABS = (
    ("output", "1 Output"),
    ("trajectory", "2 Trajectory"),
    ("checks", "3 Checks"),
    ("error", "4 Error"),
    ("usage", "5 Usage"),
)
FAULT_LINES = 4
"""Lines of the fault above the tabs, at most (a longer one ends with "…")."""


class SampleScreen(Screen[None]):
    """One sample in tabs; its opener reads `case_index` on close (`n`/`p` may have moved it)."""

    TITLE = "Sample"
    BINDINGS = [
        Binding("q,escape", "dismiss", "Back", id="back"),
        # n/p walk the run's failing samples, or a failure mode's (opened from Failures):
        # one of each pair shows, saying which.
        Binding("n", "step(1)", "Next fail", tooltip="The run's next failing sample", id="next"),
        Binding("n", "step_mode(1)", "Next in mode", tooltip="The mode's next sample", id="next"),
        Binding("p", "step(-1)", "Prev fail", tooltip="The previous failing sample", id="prev"),
        Binding("p", "step_mode(-1)", "Prev in mode", tooltip="The mode's previous", id="prev"),
        Binding("d", "beside_passing", "Beside pass", tooltip="Beside a passing one", id="beside"),
        Binding("v", "view_full", "Full", tooltip="The full output (/ searches)", id="full"),
        Binding("t", "toggle_markdown", "Markdown", tooltip="Markdown or plain", id="markdown"),
        Binding("l", "label", "Label", tooltip="Label its judged check (blind)", id="label"),
        Binding("1", "tab('output')", "Output", show=False, id="tab-1"),
        Binding("2", "tab('trajectory')", "Trajectory / conversation", show=False, id="tab-2"),
        Binding("3", "tab('checks')", "Checks", show=False, id="tab-3"),
        Binding("4", "tab('error')", "Error", show=False, id="tab-4"),
        Binding("5", "tab('usage')", "Usage", show=False, id="tab-5"),
    ]

    def __init__(
        self,
        session: RunSession,
        case_index: int,
        sample_index: int,
        *,
        walk: list[tuple[int, int]] | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.case_index = case_index
        self.sample_index = sample_index
        self.walk = walk
        """The (case, sample) positions `n`/`p` walk (a failure mode's); None: the run's failing."""

    @property
    def sample(self) -> SampleResult:
        return self.session.state.cases[self.case_index].samples[self.sample_index]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`d` only for a failing sample whose case has a passing one; one `n`/`p` pair per walk."""
        if action == "beside_passing":
            return self._has_passing_beside()
        if action == "step":
            return self.walk is None
        if action == "step_mode":
            return self.walk is not None
        return True

    def _has_passing_beside(self) -> bool:
        sample = self.sample
        case = self.session.state.cases[self.case_index]
        return not sample.passed and any(s.passed for s in case.samples if s is not sample)

    def compose(self) -> ComposeResult:
        yield Static(id="screen-title")
        yield ClampedText(id="fault", max_lines=FAULT_LINES)
        sample = self.sample
        initial = "checks" if not sample.passed and sample.checks else "output"
        if sample.run is not None and sample.run.conversation is not None:
            initial = "trajectory"
        with TabbedContent(initial=initial):
            for tab_id, label in TABS:
                with TabPane(label, id=tab_id), VerticalScroll(id=f"{tab_id}-scroll"):
                    yield Static(id=f"{tab_id}-body", classes="tab-body")
                    if tab_id == "output":
                        yield Markdown(id="output-markdown", classes="tab-body")
                    if tab_id == "trajectory":
                        yield TurnList(id="turns")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.markdown = False
        self.query_one("#output-markdown", Markdown).display = False
        self.show_sample()
        self._beside = self._has_passing_beside()
        if self.session.state.running:  # a passing sample of the case may still come
            self._ticks = self.set_interval(0.25, self._follow_run)

    def _follow_run(self) -> None:
        """Show `d` once a sample of the case passes; stop when the run has ended."""
        if self._has_passing_beside() != self._beside:
            self._beside = not self._beside
            self.refresh_bindings()
        if not self.session.state.running:
            self._ticks.stop()

    def show_sample(self) -> None:
        """Fill every tab from the current sample."""
        sample = self.sample
        case = self.session.state.cases[self.case_index]
        style = "green" if sample.passed else "red"
        title = Text()
        title.append(f"Sample {sample.index + 1}/{len(case.samples)} · ")
        title.append(sample.status, style=f"bold {style}")
        if sample.excluded:
            title.append(f" {LEFT_OUT} left out", style="yellow")
        title.append(f" · {format_ms(sample.latency_ms)} · ")
        title.append_text(cell(case.name, 80))
        self.query_one("#screen-title", Static).update(title)
        output = (
            plain(value_text(sample.output, pretty=True))
            if sample.run is not None
            else Text("no output", style="dim")
        )
        self.query_one("#output-body", Static).update(output)
        self._show_output()
        self._show_conversation()
        self.query_one("#checks-body", Static).update(render_checks(sample))
        error = Text()
        if sample.error:
            error.append_text(plain(sample.error, style="bold red"))
            error.append("\n\n")
        if sample.traceback:
            error.append_text(plain(sample.traceback, limit=20_000))
            error.append("\n\n")
        failed_calls = (
            [c for c in sample.run.tool_calls if c.error is not None] if sample.run else []
        )
        if failed_calls:
            # The run went on (the error went back to the model), but a tool raised.
            error.append(f"{len(failed_calls)} tool call(s) raised:\n", style="bold red")
            for call in failed_calls:
                error.append_text(plain(f"  {call.name}: {call.error}", limit=2000, style="red"))
                error.append("\n")
        self.query_one("#error-body", Static).update(error or Text("no error", style="dim"))
        self.query_one("#usage-body", Static).update(render_usage(self.session, sample))

    def _show_conversation(self) -> None:
        """The fault above the tabs; a conversation's turns, or a run's trajectory."""
        sample = self.sample
        fault = self.query_one("#fault", ClampedText)
        fault.display = sample.fault is not None
        if sample.fault is not None:
            fault.update(fault_text(sample.fault, excluded=sample.excluded))
        conversation = sample.run.conversation if sample.run is not None else None
        tabs = self.query_one(TabbedContent)
        tabs.get_tab("trajectory").label = "2 Conversation" if conversation else "2 Trajectory"
        body = self.query_one("#trajectory-body", Static)
        turns = self.query_one(TurnList)
        body.display = conversation is None
        turns.display = conversation is not None
        if conversation is None:
            body.update(render_trajectory(sample.run))
            return
        critical = turns.show(conversation, sample.fault)
        scroll = self.query_one("#trajectory-scroll", VerticalScroll)
        scroll.scroll_home(animate=False)
        if critical is not None:
            # Once laid out: the turn a reader should look at first, in view.
            self.call_after_refresh(scroll.scroll_to_widget, critical, animate=False)

    def action_toggle_markdown(self) -> None:
        """Show the output rendered as Markdown, or as plain text again."""
        self.markdown = not self.markdown
        self._show_output()
        self.query_one(TabbedContent).active = "output"

    def _show_output(self) -> None:
        sample = self.sample
        markdown = self.query_one("#output-markdown", Markdown)
        plain_body = self.query_one("#output-body", Static)
        if self.markdown and sample.run is not None:
            text = value_text(sample.output, pretty=True)
            markdown.update(sanitize(text[:DISPLAY_LIMIT]))
        markdown.display = self.markdown and sample.run is not None
        plain_body.display = not markdown.display

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_step_mode(self, direction: int) -> None:
        self.action_step(direction)

    def action_step(self, direction: int) -> None:
        failing = self.walk or self.session.state.failing_samples()
        if not failing:
            self.notify("no failing samples", timeout=2)
            return
        here = (self.case_index, self.sample_index)
        if here in failing:
            position = (failing.index(here) + direction) % len(failing)
        else:
            later = [i for i, f in enumerate(failing) if f > here]
            position = (
                later[0] if direction > 0 and later else (len(failing) - 1 if direction < 0 else 0)
            )
        self.case_index, self.sample_index = failing[position]
        self.show_sample()
        self._beside = self._has_passing_beside()
        self.refresh_bindings()  # `d` applies to some samples only
        which = "sample of the failure mode" if self.walk else "failing sample"
        self.notify(f"{which} {position + 1}/{len(failing)}", timeout=1.5)

    def action_view_full(self) -> None:
        self.app.push_screen(
            FullTextScreen(
                value_text(self.sample.output, pretty=True),
                title=f"Full output · {self.session.state.cases[self.case_index].name}",
            )
        )

    def action_beside_passing(self) -> None:
        """Open this (failing) sample beside the closest passing sample of its case."""
        sample = self.sample
        case = self.session.state.cases[self.case_index]
        if sample.passed:
            self.notify("this sample passed: d compares a failing sample", timeout=3)
            return
        passing = closest_passing(sample, case.samples)
        if passing is None:
            self.notify("no sample of this case passed to compare with", timeout=3)
            return
        self.app.push_screen(SideBySideScreen.beside_passing(case.name, sample, passing))

    def action_label(self) -> None:
        """Label this sample's judged checks (blind: the verdict shows once labelled)."""
        open_label_screen(self, self.session, None, only=(self.case_index, self.sample_index))

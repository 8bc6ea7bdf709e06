"""The Run screen: live progress, counters, what runs now, and the table of cases."""

from __future__ import annotations

from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static

from tui_eval.report.baselines import BaselineOutcome, BaselineStatus
from tui_eval.report.diff import Diff
from tui_eval.service.flaky import CaseHistory, case_histories
from tui_eval.service.session import RunSession
from tui_eval.tui.messages import WatchRerun, start_run, suite_to_rerun
from tui_eval.tui.screens.case import CaseScreen
from tui_eval.tui.screens.diff import DiffScreen
from tui_eval.tui.screens.failures import FailuresScreen
from tui_eval.tui.screens.labels import open_label_screen
from tui_eval.tui.screens.prompt import ConfirmScreen, quit_asking
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.widgets.case_table import (
    COLUMNS,
    SORT_ARROW,
    SORT_ORDER,
    CaseHeader,
    CaseTable,
)
from tui_eval.tui.widgets.conversation import LEFT_OUT
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.run_header import RunHeader
from tui_eval.tui.widgets.text import cell
from tui_eval.tui.workspace import Workspace

FRAME_SECONDS = 0.1
FAILING_CASES = "the failing cases: below their pass threshold"
"""What `f` shows (a case that passes with a failing sample is not one; `n` walks those)."""


class RunScreen(Screen[None]):
    """A run, live or finished. Updates are coalesced: one repaint per frame, not per sample."""

    TITLE = "Run"
    BINDINGS = [
        # The footer shows these in this order, as many as fit (`?` lists all): while a run
        # goes `x` comes early; once it ends `r`, `c` and `w` take its place.
        Binding("q,escape", "back", "Back", id="back"),
        Binding(
            "x", "cancel_run", "Cancel", tooltip="Cancel (finished samples stay)", id="cancel-run"
        ),
        Binding("n", "next_failure", "Next fail", tooltip="The next failing sample", id="next"),
        Binding("r", "rerun_failed", "Rerun", tooltip="Rerun the failing cases", id="rerun"),
        Binding("c", "compare", "Compare", tooltip="Compare with the baseline", id="compare"),
        # `w` writes a baseline, here as on the Diff screen (where `s` is skip).
        Binding("w", "save_baseline", "Save", tooltip="Save the run as the baseline", id="write"),
        Binding(
            "f",
            "failing_only",
            "Failing",
            tooltip="Only the failing cases: below their pass threshold (again: all)",
            id="failing",
        ),
        # Priority: the keys typed right after it go to the box it opens, in order.
        Binding("slash", "filter", "Filter", tooltip="Filter by name", priority=True, id="filter"),
        Binding("o", "sort", "Sort", tooltip="Sort by the next column, then by none", id="sort"),
        Binding("ctrl+r", "watch", "Watch", tooltip="Rerun on every save of its files", id="watch"),
        Binding("p", "since_previous", "vs prev", tooltip="Changes since the last run", id="prev"),
        Binding("l", "label_queue", "Label", tooltip="Label the judged outputs", id="label"),
        Binding("F", "failures", "Failures", tooltip="Failures grouped into modes", id="failures"),
    ]

    def __init__(
        self,
        session: RunSession,
        workspace: Workspace,
        *,
        watching: bool = False,
        previous: RunSession | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.workspace = workspace
        if watching:
            workspace.watching.add(session.state.name)
        self.previous = previous
        """The run this one reran (in watch mode), to show what changed since."""
        self.mode_label = ""
        """The failure mode whose cases the table shows (`f` on the Failures screen)."""
        self.since_previous: Diff | None = None
        self.reruns_started = 0
        self._finished_seen = False
        self._was_running: bool | None = None
        self._notes: str | None = None

    @property
    def watching(self) -> bool:
        """Whether an edit of the suite's files reruns it (ctrl+r; kept when the screen closes)."""
        return self.session.state.name in self.workspace.watching

    def compose(self) -> ComposeResult:
        yield Static(cell(self._title(), 200), id="screen-title")
        yield RunHeader(self.session.state)
        yield Input(
            placeholder="filter cases by name (enter to apply, escape to clear)", id="filter"
        )
        yield Static(id="run-notes")
        yield CaseHeader(id="case-header")
        yield CaseTable(self.session.state, id="cases")
        yield KeyFooter()

    def _title(self) -> str:
        path = self.session.suite.path if self.session.suite else None
        return f"Run · {self.session.title}" + (f" · {path}" if path else "")

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self._show_notes()
        # A screen opened on a run already under way (reopened from Suites) starts from the
        # whole current state: earlier screens may have taken its change flags.
        self.query_one(CaseTable).rebuild()
        self._frames = self.set_interval(FRAME_SECONDS, self.refresh_frame)
        self.refresh_frame()
        self.query_one(CaseTable).focus()

    def on_screen_suspend(self) -> None:
        self._frames.pause()

    def on_screen_resume(self) -> None:
        self._frames.resume()  # one frame at least: what changed while it was hidden

    def refresh_frame(self) -> None:
        """Apply what changed since the last frame."""
        state = self.session.state
        table = self.query_one(CaseTable)
        with self.app.batch_update():
            if state.take_structure_changed():
                state.take_dirty()
                table.rebuild()
                changed = True
            else:
                dirty = state.take_dirty()
                table.sync(dirty)
                changed = bool(dirty)
            self.query_one(RunHeader).sync(state)
            if changed and table.failing_only:
                self._show_notes()  # how many undecided cases `f` leaves out
        if state.running != self._was_running:
            # Which keys apply (cancel while running; save, rerun once finished) changed.
            self._was_running = state.running
            self.refresh_bindings()
        if not self._finished_seen and state.report is not None and not state.read_only:
            self._finished_seen = True
            if not self.session.announced:  # once per run, not again when it is reopened
                self.session.announced = True
                self._announce_finish()
            self._compare_with_previous()
            self.refresh_bindings()  # the keys of a finished run (s, r) instead of x
        if not state.running:
            self._frames.pause()  # a finished run changes no more: an idle screen costs nothing

    def _announce_finish(self) -> None:
        report = self.session.report
        assert report is not None
        planned = len(self.session.state.cases)
        if report.cancelled or report.stopped:
            ran = sum(1 for case in self.session.state.cases if case.samples)
            why = "cancelled" if report.cancelled else "stopped on budget"
            message = (
                f"{why}: {ran}/{planned} cases ran, {report.cases_passed} passed; "
                "R in History (or `tui-eval resume`) finishes the run"
            )
        else:
            verdict = "all passed" if report.passed else "some cases failed"
            undecided = report.cases_undecided
            message = f"{report.cases_passed}/{report.cases_decided} cases passed · {verdict}"
            if undecided:
                message += f" · ⊘ {undecided} undecided (the user simulator's fault)"
        self.notify(message, title=self.session.title)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Only the keys that apply show: no cancel or rerun on a finished or saved run."""
        state = self.session.state
        if action == "cancel_run":
            return state.running
        if action in ("rerun_failed", "watch"):
            return self.session.suite is not None and (action == "watch" or not state.running)
        if action == "save_baseline":
            return not state.running
        if action == "since_previous":
            return self.since_previous is not None
        return True

    # -- watch mode --------------------------------------------------------------------
    def action_watch(self) -> None:
        """Toggle watch mode: each save of the suite's files reruns it, failing cases first."""
        name = self.session.state.name
        self.workspace.watching ^= {name}
        self._show_notes()
        self.notify(
            "watching: saving the suite's files reruns it (failing cases first)"
            if self.watching
            else "stopped watching",
            timeout=3,
        )

    @on(WatchRerun)
    def _watch_rerun(self, message: WatchRerun) -> None:
        if message.previous is not self.session or not self.is_current:
            return
        screen = RunScreen(message.session, self.workspace, previous=self.session)
        screen.reruns_started = self.reruns_started + 1
        self.app.switch_screen(screen)

    def _compare_with_previous(self) -> None:
        previous = self.previous.report if self.previous is not None else None
        current = self.session.report
        if previous is None or current is None or current.cancelled:
            return
        try:
            self.since_previous = current.compare(previous)
        except ValueError:
            return
        self._show_notes()
        self.refresh_bindings()

    def _show_notes(self) -> None:
        notes = self.query_one("#run-notes", Static)
        parts = []
        if self.watching:
            parts.append("watching the suite's files: a save reruns it (w stops)")
        diff = self.since_previous
        if diff is not None:
            changes = (
                f"{len(diff.regressions)} regressed · {len(diff.improvements)} improved · "
                f"{len(diff.added)} added · {len(diff.removed)} removed"
            )
            parts.append(f"since the previous run: {changes} (p opens the diff)")
        table = self.query_one(CaseTable)
        shown = []
        if table.failing_only:
            # As the header counts them: the cases whose every sample was left out.
            undecided = sum(1 for c in self.session.state.cases if c.undecided and c.complete)
            left_out = f", not the {LEFT_OUT} {undecided} undecided" if undecided else ""
            shown.append(f"{FAILING_CASES}{left_out} (f: all)")
        if table.name_filter:
            shown.append(f"names containing {table.name_filter!r}")
        if table.mode_cases is not None:
            shown.append(f"the cases of failure mode {self.mode_label!r} (F, f: all)")
        if table.sort_key is not None:
            label = {key: name for key, name, _, _ in COLUMNS}.get(table.sort_key, "")
            shown.append(f"sorted by {label} {SORT_ARROW.get(table.sort_key, '')} (o: next)")
        if shown:
            parts.append("showing " + ", ".join(shown))
        text = " · ".join(parts)
        if text != self._notes:  # an update lays the screen out again
            self._notes = text
            notes.update(cell(text, 400))
            notes.display = bool(parts)

    def action_since_previous(self) -> None:
        if self.since_previous is None or self.previous is None:
            return
        self.app.push_screen(
            DiffScreen(
                self.since_previous,
                self.session,
                self.previous.report,
                title="since the previous run",
                workspace=self.workspace,
                previous_report=self.previous.report_file,
            )
        )

    # -- actions -----------------------------------------------------------------------
    @on(CaseTable.Selected)
    def _case_selected(self, event: CaseTable.Selected) -> None:
        event.stop()
        self.action_open_case()

    def action_open_case(self) -> None:
        index = self.query_one(CaseTable).current_case()
        if index is None:
            return
        self.app.push_screen(CaseScreen(self.session, index, self.workspace))

    def show_mode(self, cases: frozenset[str], label: str) -> None:
        """Show only `cases` (a failure mode's), or every case again for the same mode."""
        table = self.query_one(CaseTable)
        same = table.mode_cases == cases
        table.mode_cases = None if same else cases
        self.mode_label = "" if same else label
        table.rebuild()
        self._show_notes()

    def action_failures(self) -> None:
        self.app.push_screen(
            FailuresScreen(
                self.session,
                baseline=self.session.compared_baseline(),
                flaky=self._flaky_cases,
                show_cases=self.show_mode,
                shown=self.mode_label,
            )
        )

    def _flaky_cases(self) -> list[CaseHistory]:
        history = self.workspace.history
        if history is None:
            return []
        thresholds = {c.name: c.pass_threshold for c in self.session.state.cases}
        found = case_histories(history, self.session.state.name, thresholds)
        return [past for past in found.values() if past.flaky]

    def action_failing_only(self) -> None:
        table = self.query_one(CaseTable)
        table.failing_only = not table.failing_only
        table.rebuild()
        self._show_notes()
        self.notify(
            f"showing {FAILING_CASES}" if table.failing_only else "showing every case", timeout=3
        )

    def action_filter(self) -> None:
        """Open the filter box and give it the keys that follow, at once."""
        box = self.query_one("#filter", Input)
        if self.focused is box:
            raise SkipAction()  # a "/" typed into the filter
        box.display = True
        self.set_focus(box)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        table = self.query_one(CaseTable)
        table.name_filter = event.value.strip()
        table.rebuild()
        self._show_notes()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.query_one(CaseTable).focus()
        if not event.value.strip():
            self.query_one("#filter", Input).display = False

    @on(CaseHeader.SortRequested)
    def _sort_by_column(self, event: CaseHeader.SortRequested) -> None:
        """Sort by the clicked column; clicking it again restores the run order."""
        table = self.query_one(CaseTable)
        key = table.column_at(event.x)
        if key is not None:
            table.sort_key = None if table.sort_key == key else key
            table.rebuild()
            self._show_notes()

    def action_sort(self) -> None:
        table = self.query_one(CaseTable)
        position = SORT_ORDER.index(table.sort_key) if table.sort_key in SORT_ORDER else -1
        table.sort_key = SORT_ORDER[(position + 1) % len(SORT_ORDER)]
        table.rebuild()
        self._show_notes()
        label = {key: name for key, name, _, _ in COLUMNS}.get(table.sort_key or "", "run order")
        self.notify(f"sorted by {label}", timeout=2)

    def action_next_failure(self) -> None:
        failing = self.session.state.failing_samples()
        if not failing:
            self.notify("no failing samples", timeout=2)
            return
        case_index, sample_index = failing[0]
        screen = SampleScreen(self.session, case_index, sample_index)
        # Back from it, the cursor is on the case of the sample shown last.
        self.app.push_screen(
            screen, lambda _: self.query_one(CaseTable).show_case(screen.case_index)
        )

    def action_save_baseline(self) -> None:
        plan = self.session.plan_baseline()
        if isinstance(plan, BaselineOutcome):
            self.notify(plan.message, severity="warning")
            return
        if not plan.needs_confirmation:
            self._save_baseline(True)
            return
        self.app.push_screen(ConfirmScreen(plan.question()), self._save_baseline)

    def _save_baseline(self, confirmed: bool | None) -> None:
        if not confirmed:
            self.notify("the baseline was not changed", timeout=3)
            return
        outcome = self.session.save_baseline()
        saved = outcome.status is BaselineStatus.SAVED
        self.notify(outcome.message, severity="information" if saved else "warning")

    def action_compare(self) -> None:
        outcome = self.session.compare()
        if outcome.diff is None or outcome.baseline is None:
            self.notify(outcome.message, severity="warning")
            return
        self.app.push_screen(
            DiffScreen(
                outcome.diff,
                self.session,
                outcome.baseline,
                baseline_path=self.session.baseline_path,
                workspace=self.workspace,
            )
        )

    def action_rerun_failed(self) -> None:
        state = self.session.state
        suite = suite_to_rerun(self, self.workspace, self.session)
        if suite is None:
            return
        if state.running:
            self.notify(
                "the run is still going: rerun its failing cases when it ends", severity="warning"
            )
            return
        failing = [c.name for c in state.cases if not c.passed]
        if not failing:
            self.notify("no failing cases to rerun")
            return
        request = self.workspace.request.rerun(tuple(failing))
        title = f"{suite.name} · rerun of {len(failing)} failing"
        start_run(self, self.workspace, suite, request, title=title)

    def action_cancel_run(self) -> None:
        if not self.session.state.running:
            self.notify("the run has finished: there is nothing to cancel", timeout=2)
            return
        self.session.cancel()
        self.notify(
            "cancelling: finished samples are kept; R in History (or `tui-eval resume`) "
            "finishes the run",
            severity="warning",
        )

    def action_label_queue(self) -> None:
        """Label the run's judged outputs, the most useful first (blind)."""
        open_label_screen(self, self.session, self.workspace.suite(self.session.state.name))

    def action_back(self) -> None:
        filter_box = self.query_one("#filter", Input)
        if filter_box.has_focus:
            filter_box.value = ""
            filter_box.display = False
            self.query_one(CaseTable).focus()
            return
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            quit_asking(self.app)

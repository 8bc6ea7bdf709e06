"""The Diff screen: a run against its baseline, reviewed case by case like `cargo insta review`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.core.results import CaseResult
from tui_eval.report.baselines import BaselineStatus, Decision, Review, review_items
from tui_eval.report.diff import CaseChange, Diff, points
from tui_eval.report.report import Report
from tui_eval.run.events import Event, SampleFinished
from tui_eval.service.deciding import cases_to_decide, decide_request, settle, verdicts_line
from tui_eval.service.run_plan import EmptySelection, PlanError
from tui_eval.service.session import RunSession
from tui_eval.tui.screens.failures import FailuresScreen
from tui_eval.tui.screens.prompt import ConfirmScreen
from tui_eval.tui.screens.side_by_side import DECISION_KEYS, SideBySideScreen
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.table import Column, Table
from tui_eval.tui.widgets.text import cell
from tui_eval.tui.workspace import Workspace
from tui_eval.util.text import counted

KIND_SHOWN = {
    "regressed": ("✗ regressed", "red"),
    "improved": ("✓ improved", "green"),
    "added": ("+ added", "cyan"),
    "removed": ("- removed", "yellow"),
    "redefined": ("~ redefined", "yellow"),
}
DECISION_SHOWN = {
    None: ("·", "dim"),
    Decision.ACCEPT: ("accept", "bold green"),
    Decision.REJECT: ("reject", "yellow"),
    Decision.SKIP: ("skip", "dim"),
}
LEGEND = (
    "before → now: the share of the case's samples that pass. noise: Fisher's exact test, "
    "Holm-adjusted — significant below p = 0.05, else noise?; too few (~n): with n samples "
    "a side this case's test would have 80% power; ~ flaky. m samples until decided"
)


def _case(report: Report | None, name: str) -> CaseResult | None:
    return next((c for c in report.cases if c.name == name), None) if report else None


def noise_text(change: CaseChange) -> Text:
    """The noise column: short enough for 80 columns, explained by the legend."""
    if change.label == "significant":
        words = f"significant p={change.adjusted_p_value:.3f}"
    elif change.label == "too few samples":
        words = f"too few (~{change.samples_needed})" if change.samples_needed else "too few"
    elif change.label == "noise":
        words = f"noise? p={change.adjusted_p_value:.2f}"
    else:
        words = change.label
    if change.flaky:
        words += " ~"
    return Text(words, style="bold" if change.significant else "dim")


class DiffScreen(Screen[None]):
    """A review queue: decisions are collected, then `w` writes them to the baseline at once."""

    TITLE = "Diff"
    BINDINGS = [
        Binding("q,escape", "back", "Back", id="back"),
        Binding("enter", "open", "Side by side", show=False, id="open"),
        *DECISION_KEYS,
        Binding("u", "undo", "Undo", tooltip="Undo the last decision not written", id="undo"),
        Binding("w", "write", "Write", tooltip="Write the decisions to the baseline", id="write"),
        Binding(
            "A", "accept_all", "Accept all", tooltip="Accept every pending case", id="accept-all"
        ),
        Binding(
            "m", "sample_more", "More samples", tooltip="Sample until decided", id="more-samples"
        ),
        Binding("F", "failures", "Failures", tooltip="Failures grouped into modes", id="failures"),
    ]

    def __init__(
        self,
        diff: Diff,
        current: RunSession | Report,
        baseline: Report | None,
        *,
        title: str = "",
        baseline_path: Path | None = None,
        workspace: Workspace | None = None,
        previous_report: Path | None = None,
    ) -> None:
        super().__init__()
        self.diff = diff
        """The comparison as first made (the rows); `shown` is it after the decisions."""
        self.shown = diff
        self.current = current.report if isinstance(current, RunSession) else current
        self.session = current if isinstance(current, RunSession) else None
        """The run whose results `w` writes into the baseline (through its `SuiteRun`)."""
        self.suite = current.suite if isinstance(current, RunSession) else None
        """The suite whose agent `m` samples more (None for two saved reports)."""
        self.workspace = workspace
        """Where `m` starts its decide run (a journaled `SuiteRun`); None: `m` is off."""
        self.deciding = False
        self.samples_drawn: dict[str, int] = {}
        """Per case, the samples `m` drew (streamed into the rows as they finished)."""
        self.baseline = baseline
        self.baseline_path = baseline_path
        self.previous_report = previous_report
        """The report `baseline` came from when it is an earlier run's (`m` decides against it)."""
        self.title_text = title
        self.review = Review(review_items(diff))
        self._names = [item.name for item in self.review.items]
        self._scope = {c.name for c in diff.changes} | set(diff.removed)
        """The baseline cases the comparison covered (a partial run covers some only)."""

    @property
    def reviewing(self) -> bool:
        """Whether decisions can be written (a baseline file and a current run)."""
        return self.baseline_path is not None and self.session is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Reviewing needs a baseline file and a current run (not two past runs)."""
        if action in ("decide", "accept_all", "undo", "write"):
            return self.reviewing and bool(self._names)
        if action == "sample_more":
            ready = self.suite is not None and self.workspace is not None
            return ready and self.baseline is not None and not self.deciding
        return True

    def compose(self) -> ComposeResult:
        yield Static(id="screen-title")
        yield Static(id="review-status")
        yield Static(id="suite-line")
        yield Static(LEGEND, id="diff-legend")
        yield Static(id="no-changes")
        yield Table(id="changes")
        yield KeyFooter()

    COLUMNS = (
        Column("decision", "review", 6, 0),
        Column("kind", "change", 11, 0),
        Column("name", "case", 14, 1, grow=40),
        Column("rates", "before → now", 12, 2),
        Column("delta", "Δ pts", 5, 4),
        Column("noise", "noise", 17, 3, grow=14),
    )

    def on_mount(self) -> None:
        columns = self.COLUMNS if self.reviewing else self.COLUMNS[1:]
        table = self.query_one(Table)
        table.show(columns, [(name, self._cells(name)) for name in self._names])
        empty = self.query_one("#no-changes", Static)
        empty.display = not self._names
        if not self._names:
            empty.update(f"no changes ({len(self.diff.unchanged)} cases unchanged)")
        table.display = bool(self._names)
        table.focus()
        self._show_header()

    def _cells(self, name: str) -> dict[str, Text]:
        kind = self.review.kind(name)
        label, style = KIND_SHOWN[kind]
        cells = {"kind": Text(label, style=style), "name": cell(name, 80)}
        cells["decision"] = self._decision_cell(name)
        change = next((c for c in self.diff.changes if c.name == name), None)
        if change is not None:
            delta = change.current_rate - change.baseline_rate
            cells["rates"] = Text(f"{change.baseline_rate:.0%} → {change.current_rate:.0%}")
            cells["delta"] = Text(
                points(delta), justify="right", style="red" if delta < 0 else "green"
            )
            cells["noise"] = noise_text(change)
        elif kind in ("added", "removed"):
            found = _case(self.current if kind == "added" else self.baseline, name)
            rate = f"{found.pass_rate:.0%}" if found is not None and found.samples else "?"
            cells["rates"] = Text(f"– → {rate}" if kind == "added" else f"{rate} → –")
        if name in self.diff.definition_changed:
            cells["noise"] = Text("case redefined", style="yellow")
        return cells

    def _decision_cell(self, name: str) -> Text:
        if name in self.review.written:
            return Text("saved", style="bold green")
        label, style = DECISION_SHOWN[self.review.decisions.get(name)]
        return Text(label, style=style)

    def _show_header(self) -> None:
        """The counts as they will be once the decisions are written, and the review's state."""
        d = self.shown
        # One line: the counts first; what is compared last, cut with "…" when too long.
        summary = Text("Diff · ")
        summary.append(f"{len(d.regressions)} regressed", style="bold red" if d.regressions else "")
        summary.append(
            f" · {len(d.improvements)} improved", style="green" if d.improvements else ""
        )
        for count, words in ((len(d.added), "added"), (len(d.removed), "removed")):
            if count:
                summary.append(f" · {count} {words}")
        summary.append(f" · {len(d.unchanged)} unchanged")
        if d.definition_changed:
            summary.append(f" · {len(d.definition_changed)} redefined", style="yellow")
        if self.title_text:
            summary.append(" · ")
            summary.append_text(cell(self.title_text, 300))
        self.query_one("#screen-title", Static).update(summary)
        status = self.query_one("#review-status", Static)
        status.display = self.reviewing and bool(self._names)
        if status.display:
            line = Text("review: ", style="bold")
            line.append(self.review.status())
            unwritten = sum(len(names) for names in self.review.accepted())
            if unwritten:
                line.append(f" — w writes {unwritten} change(s) to the baseline", style="yellow")
            status.update(line)
        # The suite's rate is the mean of the cases' rates (not the share of cases passed).
        rate = d.suite_line(label="mean pass rate of the cases", sep=" · ")
        self.query_one("#suite-line", Static).update(Text(rate, style="bold"))

    def _decided(self, name: str) -> None:
        """Repaint after a decision about `name`: its row, the header, the footer."""
        self.query_one(Table).set_cell(name, "decision", self._decision_cell(name))
        if self.baseline is not None and self.current is not None:
            try:
                self.shown = self.review.preview(self.current, self.baseline, self._scope)
            except ValueError:
                self.shown = self.diff
        self._show_header()
        self.refresh_bindings()

    def _cursor_name(self) -> str | None:
        row = self.query_one(Table).selected()
        return self._names[row] if row is not None else None

    def _move_to(self, name: str) -> None:
        self.query_one(Table).move_cursor(row=self._names.index(name), animate=False)

    def action_open(self) -> None:
        self._open(self._cursor_name())

    def _open(self, name: str | None) -> None:
        if name is None:
            return
        before, now = _case(self.baseline, name), _case(self.current, name)
        screen = SideBySideScreen.of_cases(
            name, before, now, reviewing=self.reviewing, pending=self.review.status()
        )

        def decided(decision: Decision | None) -> None:
            if decision is not None:
                self._record(name, decision, then=self._open_next)

        self.app.push_screen(screen, decided)

    def _open_next(self, name: str) -> None:
        """After deciding in the side by side view: the next pending case, side by side."""
        following = self.review.next_pending(name)
        self._move_to(following or name)
        if following is not None:
            self._open(following)
        else:
            self.notify("every case is decided: w writes the decisions", timeout=4)

    def action_decide(self, decision: str) -> None:
        name = self._cursor_name()
        if name is not None and name not in self.review.written:
            self._record(name, Decision(decision), then=self._move_to_next)

    def _move_to_next(self, name: str) -> None:
        self._move_to(self.review.next_pending(name) or name)

    def _record(self, name: str, decision: Decision, *, then: Callable[[str], None]) -> None:
        """Record `decision`, then `then(name)`; accepting a regression is confirmed first."""

        def record(confirmed: bool | None = True) -> None:
            if not confirmed:
                self.notify(f"{name}: not accepted", timeout=2)
                return
            self.review.decide(name, decision)
            self._decided(name)
            then(name)

        if decision is Decision.ACCEPT and self.review.kind(name) == "regressed":
            change = next(c for c in self.diff.regressions if c.name == name)
            question = (
                f"Accept the regression of {name!r}? It passed before and fails now "
                f"({change.baseline_rate:.0%} → {change.current_rate:.0%} of samples): the "
                "baseline will expect the failing result."
            )
            self.app.push_screen(ConfirmScreen(question), record)
            return
        record()

    def action_undo(self) -> None:
        name = self.review.undo()
        if name is None:
            self.notify("nothing to undo", timeout=2)
            return
        self._decided(name)
        self._move_to(name)

    def action_accept_all(self) -> None:
        """Accept every pending case (asking first when regressions are among them)."""
        pending = self.review.pending
        if not pending:
            self.notify("no pending case", timeout=2)
            return

        def record(confirmed: bool | None = True) -> None:
            if not confirmed:
                self.notify("nothing accepted", timeout=2)
                return
            for name in pending:
                self.review.decide(name, Decision.ACCEPT)
                self._decided(name)

        regressed = [n for n in pending if self.review.kind(n) == "regressed"]
        if regressed:
            named = ", ".join(repr(n) for n in regressed[:6])
            more = f" and {len(regressed) - 6} more" if len(regressed) > 6 else ""
            question = (
                f"Accept {len(pending)} case(s), {len(regressed)} of them regressions "
                f"({named}{more})? The baseline will expect their failing results."
            )
            self.app.push_screen(ConfirmScreen(question), record)
            return
        record()

    def action_write(self) -> None:
        """Write every accepted decision to the baseline file, atomically, in one go."""
        changed, removed = self.review.accepted()
        if self.session is None:
            return
        if not changed and not removed:
            self.notify("no accepted change to write: the baseline is unchanged", timeout=3)
            return
        outcome = self.session.write_baseline(changed + removed)
        if outcome.status is not BaselineStatus.SAVED:
            self.notify(outcome.message, severity="warning")
            return
        self.baseline = outcome.baseline
        self.review.mark_written()
        for name in changed + removed:
            self._decided(name)
        self.notify(outcome.message)

    def action_failures(self) -> None:
        if self.session is None:
            self.notify("no run to group the failures of", timeout=2)
            return
        self.app.push_screen(FailuresScreen(self.session, baseline=self.baseline))

    def action_sample_more(self) -> None:
        """Sample the changed cases until each comparison is decided (or the budget ends)."""
        changed = cases_to_decide(self.diff)
        if self.suite is None or self.workspace is None or self.baseline is None or not changed:
            self.notify("no changed case to decide", timeout=3)
            return
        self.deciding = True
        self.refresh_bindings()
        self.notify(f"sampling {len(changed)} case(s) until decided…", timeout=4)
        self.run_worker(self._decide(changed), exclusive=True, group="decide")

    async def _decide(self, names: list[str]) -> None:
        assert self.suite is not None and self.baseline is not None
        assert self.workspace is not None
        drawn = dict.fromkeys(names, 0)
        table = self.query_one(Table)

        def stream(event: Event) -> None:
            # Every finished sample shows in its case's row, as a run's table would: the
            # decision's samples so far, as the run's state holds them (each round starts
            # with the samples of the rounds before).
            if isinstance(event, SampleFinished) and event.sample.case_name in drawn:
                name = event.sample.case_name
                index = session.state.index_of(name)
                if index is None:
                    return
                drawn[name] = len(session.state.cases[index].samples)
                table.set_cell(
                    name,
                    "noise",
                    Text(f"deciding… {counted(drawn[name], 'sample')} drawn", style="cyan"),
                )

        workspace = self.workspace
        request = decide_request(
            workspace.request,
            names,
            baseline_path=self.baseline_path,
            against=self.previous_report if self.baseline_path is None else None,
        )
        try:
            session = workspace.new_session(
                self.suite,
                request,
                title=f"{self.suite.name} · deciding {len(names)} case(s)",
                baseline=self.baseline,
                on_event=stream,
            )
        except (EmptySelection, PlanError) as exc:
            self.deciding = False
            self.refresh_bindings()
            self.notify(str(exc), severity="warning")
            return
        assert session.service is not None
        await session.run()
        decision = session.service.decision
        if decision is None:  # cancelled before its first round ended
            self.deciding = False
            self.refresh_bindings()
            self.notify("the decision was stopped before it ended", severity="warning")
            return
        self.samples_drawn = dict(drawn)
        self.deciding = False
        totals = {c.name: c.current_total for c in decision.diff.changes}
        for change in settle(self.diff, decision.diff):
            table.set_cell(
                change.name,
                "noise",
                Text(f"{change.label} ({counted(totals[change.name], 'sample')})"),
            )
        self.refresh_bindings()
        self.notify(verdicts_line(decision.diff), timeout=8)

    def action_back(self) -> None:
        changed, removed = self.review.accepted()
        if not changed and not removed:
            self.app.pop_screen()
            return

        def leave(confirmed: bool | None) -> None:
            if confirmed:
                self.app.pop_screen()

        count = len(changed) + len(removed)
        question = (
            f"Leave without writing? {count} accepted case(s) are not written to the "
            f"baseline (w writes them)."
        )
        self.app.push_screen(ConfirmScreen(question), leave)

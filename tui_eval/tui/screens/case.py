"""The Case screen: its samples, a latency sparkline, pass@k, past pass rates, and reruns."""

from __future__ import annotations

import datetime
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.checks.faults import PARTIES
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.quarantine import (
    Quarantine,
    QuarantineFileError,
    put,
    quarantine_path,
    read,
    release,
)
from tui_eval.service.flaky import case_histories
from tui_eval.service.session import RunSession
from tui_eval.stats.proportions import wilson_interval
from tui_eval.tui.editor import edit_case
from tui_eval.tui.messages import start_run, suite_to_rerun
from tui_eval.tui.screens.prompt import ConfirmScreen, Prompt
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.widgets.conversation import LEFT_OUT, PARTY_STYLE
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.latency_chart import LatencyChart, scale_text
from tui_eval.tui.widgets.table import Column, Table
from tui_eval.tui.widgets.text import cell, format_ms
from tui_eval.tui.workspace import Workspace
from tui_eval.util.text import counted


def describe_rate(case: CaseResult) -> str:
    """`2/4 = 50% (95% CI 15–85%)` over the samples counted, then how many were left out."""
    n = case.counted
    left_out = f" · {LEFT_OUT} {case.left_out} left out" if case.left_out else ""
    if not n:
        return f"0/0 counted{left_out}"
    low, high = wilson_interval(case.samples_passed, n)
    rate = f"{case.samples_passed}/{n} = {case.pass_rate:.0%} (95% CI {low:.0%}–{high:.0%})"
    return rate + left_out


def describe_faults(samples: list[SampleResult]) -> Text:
    """`faults  user 2 · agent 1 · environment 0` and how many were left out; empty if none."""
    faults = [s.fault.party for s in samples if s.fault is not None]
    if not faults:
        return Text()
    text = Text("faults  ", style="bold")
    for number, party in enumerate(PARTIES):
        if number:
            text.append(" · ")
        found = faults.count(party)
        text.append(f"{party} {found}", style=PARTY_STYLE[party] if found else "dim")
    left_out = sum(1 for s in samples if s.excluded)
    if left_out:
        text.append(
            f" · {LEFT_OUT} {counted(left_out, 'sample')} left out of the pass rate: "
            "the user simulator's fault (count_user_faults keeps them in)",
            style="yellow",
        )
    return text


class CaseScreen(Screen[None]):
    """One case. `m` reruns just this case with more samples, to tell flaky from broken."""

    TITLE = "Case"
    BINDINGS = [
        Binding("q,escape", "app.back", "Back", id="back"),
        Binding("enter", "open", "Open sample", show=False, id="open"),
        Binding("m", "more_samples", "More samples", id="more-samples"),
        Binding("r", "rerun_case", "Rerun case", id="rerun"),
        Binding("e", "edit", "Edit", id="edit"),
        Binding(
            "Q", "quarantine", "Quarantine", tooltip="Runs, shows, never gates", id="quarantine"
        ),
    ]

    def __init__(self, session: RunSession, case_index: int, workspace: Workspace) -> None:
        super().__init__()
        self.session = session
        self.workspace = workspace
        self.case_index = case_index
        self._shown_samples = -1

    COLUMNS = (
        Column("n", "#", 4, 0),
        Column("status", "status", 9, 0),
        Column("latency", "latency", 8, 2),
        Column("tokens", "tokens", 8, 3),
        Column("score", "score", 5, 4),
        Column("fault", "fault (turn)", 15, 1),  # a conversation's: who failed it
        # The reason takes the rest of the width (no sideways scrolling at 80 columns).
        Column("failure", "first failure", 20, 1, grow=400),
    )

    @property
    def rerun(self) -> RunSession | None:
        """The case's latest "more samples" rerun (kept by the run, not by this screen)."""
        return self.session.more_samples.get(self.case.name)

    @property
    def case(self) -> CaseResult:
        return self.session.state.cases[self.case_index]

    def compose(self) -> ComposeResult:
        yield Static(id="screen-title")
        yield Static(id="case-stats")
        yield Static(id="latency-label")
        yield LatencyChart(id="latency")
        yield Static(id="rerun")
        yield Table(id="samples")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.history_line = self._history_line()
        self._ticks = self.set_interval(0.25, self.refresh_view)
        self.refresh_view()
        self.query_one(Table).focus()

    def on_screen_suspend(self) -> None:
        self._ticks.pause()

    def on_screen_resume(self) -> None:
        self._ticks.resume()  # one tick at least: what changed while it was hidden

    def _history_line(self) -> str:
        history = self.workspace.history
        suite = self.session.suite
        if history is None or suite is None:
            return ""
        name = self.case.name
        past = case_histories(history, suite.name, {name: self.case.pass_threshold}, limit=8)
        line = "past runs: none recorded"
        if name in past and past[name].runs:
            rates = " · ".join(f"{r.passed / r.total:.0%}" for r in past[name].runs)
            line = f"past runs (newest first): {rates} · {past[name].flips} flip(s)"
            if past[name].flaky:
                line += " · flaky (its runs disagree beyond noise; Q quarantines it)"
        held = self._quarantine()[1]
        if held is not None:
            line += f" · quarantined: {held.reason} (Q releases)"
        return line

    def _quarantine(self) -> tuple[Path | None, Quarantine | None]:
        """The run's quarantine file (None: no baseline folder), and the case's entry in it."""
        baseline = self.session.baseline_path
        path = quarantine_path(baseline) if baseline else None
        try:
            held = read(path, self.session.state.name).get(self.case.name) if path else None
        except (QuarantineFileError, OSError):
            held = None
        return path, held

    def action_quarantine(self) -> None:
        path, held = self._quarantine()
        if path is None:
            self.notify("this run has no baseline folder to keep a quarantine in", timeout=3)
            return
        suite, name = self.session.state.name, self.case.name

        def done(message: str) -> None:
            self.history_line = self._history_line()
            self.refresh_view()
            self.notify(message, timeout=4)

        if held is not None:

            def lift(confirmed: bool | None) -> None:
                if confirmed:
                    release(path, suite, name)
                    done(f"{name}: released; it gates again")

            self.app.push_screen(ConfirmScreen(f"Release the quarantine of {name!r}?"), lift)
            return

        def record(reason: str | int | None) -> None:
            if not isinstance(reason, str):
                return
            try:
                put(path, suite, name, Quarantine(reason, datetime.date.today()))
            except (QuarantineFileError, OSError) as exc:
                self.notify(str(exc), severity="error", markup=False)
                return
            done(f"{name}: quarantined (runs, shows, does not gate) in {path}")

        self.app.push_screen(
            Prompt(
                f"Quarantine {name!r}: it still runs and shows, but does not fail the run. Why?",
                "the reason, shown in JUnit and the summaries",
            ),
            record,
        )

    def refresh_view(self) -> None:
        """Repaint while the run or its `m` rerun goes; the timer pauses when neither does."""
        rerun = self.rerun
        if not self.session.state.running and (rerun is None or not rerun.state.running):
            self._ticks.pause()
        case = self.case
        title = Text("Case · ")
        title.append_text(cell(case.name, 100))
        _show(self.query_one("#screen-title", Static), title)
        n = len(case.samples)
        stats = Text()
        if case.undecided:
            stats.append(f"{LEFT_OUT} undecided: every sample was left out", style="yellow")
        else:
            stats.append(
                "✓ passed" if case.passed else "✗ failed",
                style="green" if case.passed else "red",
            )
        stats.append(
            f" · {describe_rate(case) if n else 'no samples yet'} · threshold {case.pass_threshold:.0%}"
        )
        if case.counted:  # pass@k is over the samples counted
            stats.append(
                "\npass@k  "
                + "  ".join(
                    f"k={k}: {case.pass_at_k(k):.2f}" for k in range(1, min(case.counted, 10) + 1)
                )
            )
        if n:
            stats.append(
                f"\nlatency p50 {format_ms(case.latency_p50_ms)} · {case.usage.total_tokens:,} tokens"
            )
        faults = describe_faults(case.samples)
        if faults:
            stats.append("\n")
            stats.append_text(faults)
        if self.history_line:
            stats.append("\n" + self.history_line, style="dim")
        _show(self.query_one("#case-stats", Static), stats)
        bars = tuple((sample.latency_ms, sample.passed) for _, sample in self._rows())
        self.query_one(LatencyChart).samples = bars
        scale = Text(f"latency of each sample, in order: bars from {scale_text(bars)}")
        scale.append(" (red: failed)" if not all(passed for _, passed in bars) else "", "dim")
        _show(self.query_one("#latency-label", Static), scale)
        self._update_rerun()
        rows = self._rows()
        if len(rows) != self._shown_samples:
            self._shown_samples = len(rows)
            with_faults = any(
                s.fault is not None or (s.run is not None and s.run.conversation is not None)
                for _, s in rows
            )
            columns = [c for c in self.COLUMNS if with_faults or c.key != "fault"]
            self.query_one(Table).show(columns, [(n, _sample_cells(n, s)) for n, s in rows])

    def _rows(self) -> list[tuple[str, SampleResult]]:
        """The case's samples, then those of its `m` rerun (labelled m1, m2, ...)."""
        rows = [(str(s.index + 1), s) for s in self.case.samples]
        if self.rerun is not None and self.rerun.state.cases:
            rows += [(f"m{s.index + 1}", s) for s in self.rerun.state.cases[0].samples]
        return rows

    def _update_rerun(self) -> None:
        widget = self.query_one("#rerun", Static)
        if self.rerun is None:
            widget.display = False
            return
        widget.display = True
        state = self.rerun.state
        if not state.cases:
            widget.update("rerun: starting…")
            return
        new = state.cases[0]
        verb = (
            "rerun" if state.report is not None else f"rerunning ({len(new.samples)}/{new.planned})"
        )
        text = Text(f"{verb}: ")
        text.append(describe_rate(new) if new.samples else "–", style="bold")
        text.append(f"   before: {describe_rate(self.case)}")
        _show(widget, text)

    def action_open(self) -> None:
        row = self.query_one(Table).selected()
        if row is None or row >= len(self._rows()):
            return
        own = len(self.case.samples)
        if row < own:
            session, case, sample = self.session, self.case_index, row
        elif self.rerun is not None:  # a sample of the `m` rerun: its own run, case 0
            session, case, sample = self.rerun, 0, row - own
        else:
            return

        screen = SampleScreen(session, case, sample)
        self.app.push_screen(
            screen, lambda _: self._came_back(session, screen.case_index, screen.sample_index)
        )

    def _came_back(self, session: RunSession, case_index: int, sample_index: int) -> None:
        """Back from a sample (`n`/`p` may have changed case): its case, the cursor on it."""
        if session is self.session and case_index != self.case_index:
            self.show_case(case_index)
        own = len(self.case.samples)
        row = sample_index if session is self.session else own + sample_index
        table = self.query_one(Table)
        if 0 <= row < table.row_count:
            table.move_cursor(row=row, animate=False)

    def show_case(self, case_index: int) -> None:
        """Show another case of the run."""
        self.case_index = case_index
        self._shown_samples = -1
        self.history_line = self._history_line()
        self.refresh_view()

    def action_more_samples(self) -> None:
        if suite_to_rerun(self, self.workspace, self.session) is None:
            return
        default = max(10, 2 * max(1, len(self.case.samples)))
        name = self.case.name

        def start(samples: str | int | None) -> None:
            suite = suite_to_rerun(self, self.workspace, self.session) if samples else None
            if not isinstance(samples, int) or suite is None:
                return
            request = self.workspace.request.rerun((name,), samples=samples, parallel_samples=True)
            title = f"{name} × {samples}"
            rerun = start_run(self, self.workspace, suite, request, title=title, show=False)
            if rerun is None:
                return
            self.session.more_samples[name] = rerun
            self._shown_samples = -1
            self._ticks.resume()
            self.notify(f"drawing {counted(samples, 'more sample')} of {name[:40]}")

        own = counted(len(self.case.samples), "sample")
        question = (
            f"How many more samples of “{name[:40]}”? They are added under its {own} "
            "(m1, m2, …), with their own pass rate beside the case's."
        )
        self.app.push_screen(Prompt(question, default=default), start)

    def action_rerun_case(self) -> None:
        """A new run of just this case, with the suite as it is now."""
        suite = suite_to_rerun(self, self.workspace, self.session)
        if suite is not None:
            request = self.workspace.request.rerun((self.case.name,))
            start_run(
                self, self.workspace, suite, request, title=f"{suite.name} · {self.case.name}"
            )

    def action_edit(self) -> None:
        """Open the suite file at this case in `$VISUAL`/`$EDITOR`."""
        suite = self.workspace.suite(self.session.state.name) or self.session.suite
        if suite is None or suite.path is None:
            self.notify("this case has no suite file to edit", severity="warning")
            return
        edit_case(self.app, suite.path, self.case.name)


def _sample_cells(label: str, sample: SampleResult) -> dict[str, Text]:
    """A sample's row; its fault `agent t3`: whose fault and its first critical turn."""
    marks = (" ⟲" if sample.cached else "") + (f" {LEFT_OUT}" if sample.excluded else "")
    score, fault = sample.score, sample.fault
    where = f" t{fault.turn}" if fault is not None and fault.turn is not None else ""
    return {
        "n": Text(label, justify="right"),
        "status": Text(sample.status + marks, style="green" if sample.passed else "red"),
        "latency": Text(format_ms(sample.latency_ms), justify="right"),
        "tokens": Text(f"{sample.usage.total_tokens:,}", justify="right"),
        "score": Text(f"{score:.2f}" if score is not None else "–", justify="right"),
        "fault": Text(f"{fault.party}{where}", style=PARTY_STYLE.get(fault.party, ""))
        if fault is not None
        else Text(""),
        "failure": cell(sample.first_failure, 300, style="red"),
    }


def _show(widget: Static, text: Text) -> None:
    """Update `widget` only if `text` changed: an update lays out the screen (4 times a second)."""
    shown = widget.content
    if isinstance(shown, Text) and shown == text and shown.style == text.style:
        return
    widget.update(text)

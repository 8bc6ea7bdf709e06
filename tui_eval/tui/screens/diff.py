"""The Diff screen: regressions, improvements, added and removed cases; side by side samples."""

from __future__ import annotations

import difflib
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from tui_eval.events import Event, SampleFinished
from tui_eval.report import CaseResult, Diff, Report, SampleResult
from tui_eval.suite_run import BaselineStatus
from tui_eval.text import one_line, value_text
from tui_eval.tui.session import RunSession
from tui_eval.tui.widgets.sample_text import render_checks
from tui_eval.tui.widgets.table import Column, Table
from tui_eval.tui.widgets.text import cell, plain


def _representative(case: CaseResult) -> SampleResult | None:
    """The sample that best explains the case: its first failure, else its first sample."""
    return next(
        (s for s in case.samples if not s.passed), case.samples[0] if case.samples else None
    )


def _trajectory_lines(sample: SampleResult | None) -> list[str]:
    if sample is None or sample.run is None:
        return []
    lines = []
    for call in sample.run.tool_calls:
        outcome = (
            f"error: {call.error}"
            if call.error is not None
            else f"→ {value_text(call.result, pretty=True)[:200]}"
        )
        lines.append(
            f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())}) {outcome}"
        )
    return lines


def _unified(before: list[str], after: list[str], what: str) -> Text:
    text = Text()
    diff = list(
        difflib.unified_diff(before, after, f"baseline {what}", f"current {what}", lineterm="", n=2)
    )
    if not diff:
        return Text(f"{what}: identical", style="dim")
    for line in diff[:400]:
        style = (
            "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        text.append_text(plain(line[:500], limit=None, style=style))
        text.append("\n")
    return text


class DiffScreen(Screen[None]):
    """The current run against its baseline. `enter` opens a case side by side; `a` accepts
    that case's new result into the baseline and `A` every case shown (a review, like
    `cargo insta review`)."""

    BINDINGS = [
        Binding("q,escape", "back", "Back"),
        Binding("question_mark", "app.help", "Help"),
        Binding("enter", "open", "Side by side", show=False),
        Binding("a", "accept", "Accept case"),
        Binding("A", "accept_all", "Accept all"),
        Binding("m", "decide", "More samples until decided"),
    ]

    def __init__(
        self,
        diff: Diff,
        current: RunSession | Report,
        baseline: Report | None,
        *,
        title: str = "",
        baseline_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.diff = diff
        self.current = current.report if isinstance(current, RunSession) else current
        self.session = current if isinstance(current, RunSession) else None
        """The run whose results `a`/`A` write into the baseline (through its `SuiteRun`)."""
        self.suite = current.suite if isinstance(current, RunSession) else None
        """The suite whose agent `m` samples more (None for two saved reports)."""
        self.deciding = False
        self.samples_drawn: dict[str, int] = {}
        """Per case, the samples `m` drew (streamed into the rows as they finished)."""
        self.baseline = baseline
        self.baseline_path = baseline_path
        self.title_text = title
        self._names: list[str] = []
        self.accepted: set[str] = set()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Accepting needs a baseline file and a current run (not two past runs)."""
        if action in ("accept", "accept_all"):
            return self.baseline_path is not None and self.session is not None
        if action == "decide":
            return self.suite is not None and self.baseline is not None and not self.deciding
        return True

    def compose(self) -> ComposeResult:
        d = self.diff
        summary = Text(f"Diff{' · ' + self.title_text if self.title_text else ''} · ")
        summary.append(
            f"{len(d.regressions)} regression(s)", style="bold red" if d.regressions else ""
        )
        summary.append(
            f" · {len(d.improvements)} improvement(s)", style="green" if d.improvements else ""
        )
        summary.append(
            f" · {len(d.added)} added · {len(d.removed)} removed · {len(d.unchanged)} unchanged"
        )
        if d.definition_changed:
            summary.append(f" · {len(d.definition_changed)} redefined", style="yellow")
        yield Static(summary, id="screen-title")
        yield Static(Text(d.suite_line(), style="bold"), id="suite-line")
        yield Static(
            "noise: whether a change in pass rate is larger than sampling noise (Fisher's exact "
            "test on passed/failed samples, Holm-adjusted across cases; p < 0.05 is "
            "significant; 'too few samples': these samples could never show it, with the "
            "samples per side at which this case's test would have 80% power)",
            id="diff-legend",
        )
        yield Static(id="no-changes")
        yield Table(id="changes")
        yield Footer()

    COLUMNS = (
        Column("kind", "change", 12, 0),
        Column("name", "case", 30, 1),
        Column("before", "before", 7, 2),
        Column("now", "now", 7, 3),
        Column("delta", "Δ", 6, 4),
        Column("noise", "noise", 40, 5),
    )

    def on_mount(self) -> None:
        rows: list[tuple[str, dict[str, Text]]] = []
        for change in self.diff.regressions + self.diff.improvements:
            regressed = change in self.diff.regressions
            delta = change.current_rate - change.baseline_rate
            noise = change.noise_label + ("; flaky" if change.flaky else "")
            rows.append(
                (
                    change.name,
                    {
                        "kind": Text(
                            "✗ regressed" if regressed else "✓ improved",
                            style="red" if regressed else "green",
                        ),
                        "name": cell(change.name, 80),
                        "before": Text(f"{change.baseline_rate:.0%}", justify="right"),
                        "now": Text(f"{change.current_rate:.0%}", justify="right"),
                        "delta": Text(
                            f"{delta:+.0%}", justify="right", style="red" if delta < 0 else "green"
                        ),
                        "noise": Text(noise, style="dim" if not change.significant else "bold"),
                    },
                )
            )
        for name in self.diff.added:
            rows.append(
                (
                    name,
                    {
                        "kind": Text("+ added", style="cyan"),
                        "name": cell(name, 80),
                        "before": Text("–"),
                    },
                )
            )
        for name in self.diff.removed:
            rows.append(
                (
                    name,
                    {
                        "kind": Text("- removed", style="yellow"),
                        "name": cell(name, 80),
                        "now": Text("–"),
                    },
                )
            )
        listed = {name for name, _ in rows}
        for name in self.diff.definition_changed:
            if name in listed:  # moved too: say so on its row
                cells = dict(rows)[name]
                cells["noise"] = Text("definition changed", style="yellow")
            else:
                rows.append(
                    (
                        name,
                        {
                            "kind": Text("~ redefined", style="yellow"),
                            "name": cell(name, 80),
                            "noise": Text("definition changed: same name, other case"),
                        },
                    )
                )
        self._names = [name for name, _ in rows]
        self.query_one(Table).show(self.COLUMNS, rows)
        empty = self.query_one("#no-changes", Static)
        empty.display = not self._names
        if not self._names:
            empty.update(f"no changes ({len(self.diff.unchanged)} cases unchanged)")
        table = self.query_one(DataTable)
        table.display = bool(self._names)
        table.focus()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _cursor_name(self) -> str | None:
        table = self.query_one(DataTable)
        if not self._names or not 0 <= table.cursor_row < len(self._names):
            return None
        return self._names[table.cursor_row]

    def action_open(self) -> None:
        name = self._cursor_name()
        if name is None:
            return
        now = (
            next((c for c in self.current.cases if c.name == name), None) if self.current else None
        )
        before = (
            next((c for c in self.baseline.cases if c.name == name), None)
            if self.baseline
            else None
        )
        self.app.push_screen(SideBySideScreen(name, before, now))

    def action_accept(self) -> None:
        name = self._cursor_name()
        if name is not None:
            self._accept([name])

    def action_accept_all(self) -> None:
        self._accept([n for n in self._names if n not in self.accepted])

    def _accept(self, names: list[str]) -> None:
        if self.baseline_path is None or self.current is None or not names:
            return
        if self.session is None:
            return
        outcome = self.session.write_baseline(names)
        if outcome.status is not BaselineStatus.SAVED:
            self.notify(outcome.message, severity="warning")
            return
        self.baseline = outcome.baseline
        table = self.query_one(Table)
        for name in names:
            self.accepted.add(name)
            table.set_cell(name, "kind", Text("✓ accepted", style="bold green"))
        self.notify(outcome.message)

    def action_decide(self) -> None:
        """Sample the changed cases until each comparison is decided (or the budget ends)."""
        changed = {c.name for c in self.diff.regressions + self.diff.improvements}
        changed |= {c.name for c in self.diff.changes if c.label == "too few samples"}
        if self.suite is None or self.baseline is None or not changed:
            self.notify("no changed case to decide", timeout=3)
            return
        self.deciding = True
        self.refresh_bindings()
        self.notify(f"sampling {len(changed)} case(s) until decided…", timeout=4)
        self.run_worker(self._decide(sorted(changed)), exclusive=True, group="decide")

    async def _decide(self, names: list[str]) -> None:
        from tui_eval.sequential import decide

        assert self.suite is not None and self.baseline is not None
        cases = [case for case in self.suite.cases if case.label in set(names)]
        counts = dict.fromkeys(names, 0)
        table = self.query_one(Table)

        def stream(event: Event) -> None:
            # Every finished sample shows in its case's row, as a run's table would.
            if isinstance(event, SampleFinished) and event.sample.case_name in counts:
                name = event.sample.case_name
                counts[name] += 1
                table.set_cell(
                    name, "noise", Text(f"deciding… {counts[name]} sample(s) drawn", style="cyan")
                )

        diff = await decide(
            self.suite.agent,
            cases,
            self.baseline,
            concurrency=self.suite.concurrency,
            price=self.suite.price,
            on_event=stream,
        )
        self.samples_drawn = dict(counts)
        self.deciding = False
        decided = {c.name: c for c in diff.changes}
        for change in self.diff.changes:
            found = decided.get(change.name)
            if found is not None:
                change.label, change.decided = found.label, found.decided
                self.query_one(Table).set_cell(
                    change.name, "noise", Text(f"{found.label} ({found.current_total} samples)")
                )
        self.refresh_bindings()
        summary = ", ".join(f"{c.name}: {c.label}" for c in diff.changes)
        self.notify(one_line(summary, 300), timeout=8)

    def action_back(self) -> None:
        self.app.pop_screen()


class SideBySideScreen(Screen[None]):
    """One case in the baseline and now: outputs, an output diff, a trajectory diff, and checks."""

    BINDINGS = [
        Binding("q,escape", "back", "Back"),
        Binding("question_mark", "app.help", "Help"),
    ]

    def __init__(self, name: str, baseline: CaseResult | None, current: CaseResult | None) -> None:
        super().__init__()
        self.case_name = name
        self.before = _representative(baseline) if baseline else None
        self.after = _representative(current) if current else None
        self.baseline_case = baseline
        self.current_case = current

    def compose(self) -> ComposeResult:
        title = Text("Side by side · ")
        title.append_text(cell(self.case_name, 100))
        yield Static(title, id="screen-title")
        with Horizontal(id="sides"):
            for label, case, sample in (
                ("baseline", self.baseline_case, self.before),
                ("current", self.current_case, self.after),
            ):
                with VerticalScroll(classes="side"):
                    yield Static(self._side(label, case, sample))
        with VerticalScroll(id="diffs"):
            before_out = (
                value_text(self.before.output, pretty=True).splitlines() if self.before else []
            )
            after_out = (
                value_text(self.after.output, pretty=True).splitlines() if self.after else []
            )
            yield Static(_unified(before_out, after_out, "output"))
            yield Static(
                _unified(
                    _trajectory_lines(self.before), _trajectory_lines(self.after), "trajectory"
                )
            )
        yield Footer()

    @staticmethod
    def _side(label: str, case: CaseResult | None, sample: SampleResult | None) -> Text:
        text = Text()
        text.append(f"{label}\n", style="bold underline")
        if case is None or sample is None:
            text.append("not in this run", style="dim")
            return text
        text.append(
            f"{case.samples_passed}/{len(case.samples)} samples passed · sample {sample.index + 1}: {sample.status}\n\n"
        )
        text.append("output\n", style="bold")
        text.append_text(plain(value_text(sample.output, pretty=True), limit=3000))
        text.append("\n\nchecks\n", style="bold")
        text.append_text(render_checks(sample))
        if sample.error:
            text.append("error\n", style="bold red")
            text.append_text(plain(sample.error, limit=2000))
        return text

    def action_back(self) -> None:
        self.app.pop_screen()

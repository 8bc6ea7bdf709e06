"""The Run screen's header: one widget rendered from the `RunState` (repainted, no layout)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from tui_eval.report.report import Report
from tui_eval.run.state import RunState
from tui_eval.tui.widgets.text import format_duration
from tui_eval.util.text import counted, one_line


class RunHeader(Widget):
    """Progress bar with ETA, counters, and the samples in flight; repainted by `sync()`."""

    DEFAULT_CSS = """
    RunHeader { height: 4; padding: 0 1; }
    """

    def __init__(self, state: RunState, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.state = state
        self._verdicts: tuple[tuple[int, int, bool], Text] | None = None
        """The cases' verdicts drawn last, and when: they change only as samples end."""

    def sync(self, state: RunState) -> None:
        """Repaint from `state` (no layout pass)."""
        self.state = state
        self.refresh()

    def render(self) -> RenderableType:
        state = self.state
        total = counted(state.samples_total, "sample")
        label = f"{state.name}  {state.samples_done:,}/{total}"
        if state.running:
            label += f" · eta {format_duration(state.eta)}"
        elif state.report is not None and state.report.stopped:
            label += " · stopped on budget"
        elif state.report is not None and state.report.cancelled:
            label += " · cancelled"
        elif state.read_only:
            label += " · saved report"
        else:
            label += " · done"
        top = Table.grid(expand=True, padding=(0, 1))
        top.add_column(no_wrap=True)
        top.add_column(ratio=1)
        top.add_column(no_wrap=True, justify="right")
        percent = f"{state.samples_done / state.samples_total:.0%}" if state.samples_total else "–"
        top.add_row(
            Text(one_line(label, 70)),
            ProgressBar(
                total=max(1, state.samples_total),
                completed=state.samples_done,
                complete_style="green",
                finished_style="green",
            ),
            Text(percent),
        )
        drawn = (state.samples_done, len(state.cases), state.report is not None)
        if self._verdicts is None or self._verdicts[0] != drawn:
            self._verdicts = (drawn, self._case_verdicts(state))
        counters = self._counters(state, self._verdicts[1])
        return Group(top, counters, self._in_flight(state))

    @staticmethod
    def _case_verdicts(state: RunState) -> Text:
        """The verdicts of the cases that ended, as the report will count them (an undecided
        case, every sample left out, was not tested: no verdict to count)."""
        line = Text()
        ended = [c for c in state.cases if c.samples and c.complete]
        so_far = Report(state.name, ended)
        if so_far.cases_decided:
            low, high = so_far.pass_rate_ci
            line.append(
                f"{so_far.cases_passed:,}/{so_far.cases_decided:,} passed · "
                f"{so_far.pass_rate:.0%} (95% CI {low * 100:.0f}–{high * 100:.0f}%)"
            )
        if so_far.cases_undecided:
            line.append(" · " if so_far.cases_decided else "")
            line.append(f"⊘ {so_far.cases_undecided:,} undecided", style="yellow")
        if not ended:
            line.append(f"0/{len(state.cases):,} finished", style="dim")
        elif len(ended) < len(state.cases):
            line.append(f" · {len(state.cases) - len(ended):,} to go")
        return line

    @staticmethod
    def _counters(state: RunState, verdicts: Text | None = None) -> Text:
        """Samples (each run of a case) and cases (verdicts), then what the run used."""
        counters = Text(no_wrap=True, overflow="ellipsis")
        counters.append("samples  ", style="bold")
        counters.append(f"✓ {state.samples_passed:,} passed", style="green")
        counters.append("  ")
        counters.append(
            f"✗ {state.samples_failed:,} failed", style="red" if state.samples_failed else ""
        )
        left_out = state.samples_left_out
        if left_out:
            # Left out of every rate here, never silently; beside the failures, where it
            # still fits at 80 columns (the zero counters give way to it).
            counters.append("  ")
            counters.append(f"⊘ {left_out:,} left out (user faults)", style="yellow")
        for number, label, style in (
            (state.samples_errored, "error", "magenta"),
            (state.samples_timed_out, "timeout", "yellow"),
        ):
            if left_out and not number:
                continue
            counters.append("  ")
            mark = "!" if label == "error" else "⏱"
            counters.append(f"{mark} {counted(number, label)}", style=style if number else "")
        in_rate = state.samples_done - left_out
        if in_rate:
            counters.append(f"  · {state.samples_passed / in_rate:.0%} passed")
        if state.samples_cached:
            counters.append(f" · {state.samples_cached:,} cached")
        counters.append("\n")
        counters.append("cases    ", style="bold")
        counters.append(verdicts if verdicts is not None else RunHeader._case_verdicts(state))
        counters.append(f" · {state.usage.total_tokens:,} tokens")
        if state.cost is not None:
            spent = f" · ${state.cost:.4f}"
            if state.max_cost is not None:
                spent += f" of ${state.max_cost:g}"
            unpriced = state.report.unpriced_samples if state.report is not None else 0
            if unpriced:  # the total leaves them out: say so beside it
                spent += f" · {counted(unpriced, 'sample')} unpriced"
            counters.append(spent)
            if state.budget_unenforced:  # a sample without a price: the budget cannot hold
                counters.append(" · budget not enforced", style="yellow")
        elif state.budget_unenforced:
            counters.append(
                f" · budget ${state.max_cost:g} not enforced: nothing priced", style="yellow"
            )
        elif state.max_cost is not None:
            counters.append(f" · budget ${state.max_cost:g} (nothing priced yet)")
        counters.append(f" · {format_duration(state.elapsed)}")
        if state.running:
            counters.append(f" · {state.rate:,.1f} samples/s")
        return counters

    @staticmethod
    def _in_flight(state: RunState) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        limited = [status for status in state.limits if status.limited]
        if limited:
            slowest = max(limited, key=lambda status: status.waiting_s)
            line.append(str(slowest), style="yellow")
            line.append("  ")
        if not state.in_flight:
            return line
        now = state.clock()
        flights = sorted(state.in_flight.values(), key=lambda f: f.since)
        parts = [
            f"{f.state} {one_line(state.cases[f.case_index].name, 28)} #{f.sample_index + 1} ({now - f.since:.1f}s)"
            for f in flights[:6]
        ]
        more = f"  +{len(flights) - 6} more" if len(flights) > 6 else ""
        line.append("now: " + " · ".join(parts) + more, style="dim")
        return line

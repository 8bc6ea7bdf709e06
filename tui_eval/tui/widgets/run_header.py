"""The top of the Run screen: overall progress, counters, and what is running now."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static

from tui_eval.tui.state import RunState
from tui_eval.tui.widgets.text import format_duration, one_line


class RunHeader(Vertical):
    """Progress bar with ETA, counters, and the samples in flight; repainted by `sync()`."""

    DEFAULT_CSS = """
    RunHeader { height: auto; padding: 0 1; }
    RunHeader #progress-row { height: 1; }
    RunHeader #progress-label { width: auto; padding-right: 1; }
    RunHeader ProgressBar { width: 1fr; }
    RunHeader ProgressBar Bar { width: 1fr; }
    RunHeader #counters { height: auto; }
    RunHeader #in-flight { height: auto; max-height: 4; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal(id="progress-row"):
            yield Static("", id="progress-label")
            yield ProgressBar(total=None, show_eta=False, id="progress")
        yield Static("", id="counters")
        yield Static("", id="in-flight")

    def sync(self, state: RunState) -> None:
        """Show the state's current numbers."""
        bar = self.query_one(ProgressBar)
        if state.total:
            bar.update(total=state.total, progress=state.done)
        eta = state.eta
        label = f"{state.name}  {state.done:,}/{state.total:,} samples"
        if state.running:
            label += f" · eta {format_duration(eta)}"
        elif state.report is not None and state.report.cancelled:
            label += " · cancelled"
        elif state.read_only:
            label += " · saved report"
        else:
            label += " · done"
        self.query_one("#progress-label", Static).update(Text(one_line(label, 80)))
        counters = Text()
        counters.append(f"✓ {state.passed:,} passed", style="green")
        counters.append("  ")
        counters.append(f"✗ {state.failed:,} failed", style="red" if state.failed else "")
        counters.append("  ")
        counters.append(f"! {state.errors:,} errors", style="magenta" if state.errors else "")
        counters.append("  ")
        counters.append(f"⏱ {state.timeouts:,} timeouts", style="yellow" if state.timeouts else "")
        counters.append(f"  · {state.usage.total_tokens:,} tokens")
        if state.cost is not None:
            counters.append(f" · ${state.cost:.4f}")
        counters.append(f" · {format_duration(state.elapsed)}")
        if state.running or not state.read_only:
            counters.append(f" · {state.rate:,.1f} samples/s")
        self.query_one("#counters", Static).update(counters)
        self.query_one("#in-flight", Static).update(self._in_flight(state))

    @staticmethod
    def _in_flight(state: RunState) -> Text:
        if not state.in_flight:
            return Text("")
        now = state.clock()
        flights = sorted(state.in_flight.values(), key=lambda f: f.since)
        parts = [
            f"{f.state} {one_line(state.cases[f.case_index].name, 28)} #{f.sample_index + 1} ({now - f.since:.1f}s)"
            for f in flights[:6]
        ]
        more = f"  +{len(flights) - 6} more" if len(flights) > 6 else ""
        return Text("now: " + " · ".join(parts) + more, no_wrap=True, overflow="ellipsis")

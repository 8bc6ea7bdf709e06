"""`Progress`: the headless run's progress — a live bar on a terminal, periodic lines in CI logs."""

from __future__ import annotations

import sys
import time
from typing import Any

from tui_eval.run.events import Event, RunFinished, RunStarted, RunStatus, SampleFinished
from tui_eval.run.state import RunState
from tui_eval.util.text import counted, one_line


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _left_out(count: int) -> str:
    """` · 3 left out` (the user simulator's fault), or nothing."""
    return f" · {count:,} left out" if count else ""


class Progress:
    """A live progress bar on a terminal, plain periodic lines otherwise; it only draws."""

    def __init__(self, live: bool | None = None) -> None:
        self.live = sys.stderr.isatty() if live is None else live
        self.state = RunState()
        self._bar: Any = None
        self._task: Any = None
        self._name = ""
        self._last_print = 0.0
        self._next_line = 0
        self._paces: dict[str, str] = {}
        self._budget_said = False

    def _counts(self) -> tuple[int, int, int, int]:
        """Samples done, passed, not passed, and left out (the user simulator's fault)."""
        state = self.state
        left_out = state.samples_left_out
        failed = state.samples_done - state.samples_passed - left_out
        return state.samples_done, state.samples_passed, failed, left_out

    def on_event(self, event: Event) -> None:
        """Feed a runner event."""
        self.state.apply(event)
        if isinstance(event, SampleFinished):
            self._advance()
            if self.state.budget_unenforced and not self._budget_said:
                self._budget_said = True
                first = self.state.first_unpriced
                which = (
                    f"{one_line(first.case_name, 60)} #{first.index + 1}" if first else "a sample"
                )
                self._log(
                    f"warning: max_cost ${self.state.max_cost:g} cannot be enforced: {which} "
                    "finished without a price (give the suite a price= function, or use a "
                    "model in the built-in price table); the run goes on at full concurrency"
                )
        elif isinstance(event, RunStarted):
            self._start(event.name, event.total_samples)
        elif isinstance(event, RunFinished):
            self._stop()
        elif isinstance(event, RunStatus):
            for status in self.state.limits:
                if status.pace is not None and self._paces.get(status.name) != status.reason:
                    # Which pace the run keeps against an API, and why (once per change).
                    self._paces[status.name] = status.reason
                    self._log(
                        f"rate limit {one_line(status.name, 60)}: pace {status.pace:.3g} req/s"
                        f" ({status.reason})"
                    )

    def _start(self, name: str, total: int) -> None:
        self._name = one_line(name, 60)
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(
                    "[green]✓ {task.fields[passed]}[/] [red]✗ {task.fields[failed]}[/]"
                    "{task.fields[left_out]}"
                ),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            done, passed, failed, left_out = self._counts()
            self._task = self._bar.add_task(
                self._name.replace("[", "\\["),
                total=total,
                completed=done,
                passed=passed,
                failed=failed,
                left_out=_left_out(left_out),
            )
        else:
            _err(f"[{self._name}] running {counted(total, 'sample')}")
            self._last_print = time.monotonic()
            self._next_line = max(1, total // 10)

    def _advance(self) -> None:
        done, passed, failed, left_out = self._counts()
        if self._bar is not None:
            self._bar.update(
                self._task,
                completed=done,
                passed=passed,
                failed=failed,
                left_out=_left_out(left_out),
            )
            return
        now = time.monotonic()
        total = self.state.samples_total
        if done >= self._next_line or now - self._last_print >= 5:
            _err(
                f"[{self._name}] {done:,}/{total:,} samples · {passed:,} passed · {failed:,} failed"
                + _left_out(left_out)
            )
            self._last_print = now
            self._next_line = done + max(1, total // 10)

    def _log(self, message: str) -> None:
        if self._bar is not None:
            self._bar.console.print(message, markup=False, highlight=False)
        else:
            _err(f"[{self._name}] {message}")

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

"""`Progress`: the headless run's progress — a live bar on a terminal, periodic lines in CI logs."""

from __future__ import annotations

import sys
import time
from typing import Any

from tui_eval.run.events import Event, RunFinished, RunStarted, RunStatus, SampleFinished
from tui_eval.util.text import one_line


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Progress:
    """A live progress bar on a terminal; plain periodic lines otherwise (CI logs)."""

    def __init__(self, live: bool | None = None) -> None:
        self.live = sys.stderr.isatty() if live is None else live
        self._bar: Any = None
        self._task: Any = None
        self.samples_total = self.samples_done = self.samples_passed = self.samples_failed = 0
        self._name = ""
        self._last_print = 0.0
        self._next_line = 0
        self._paces: dict[str, str] = {}

    def on_event(self, event: Event) -> None:
        """Feed a runner event."""
        if isinstance(event, SampleFinished):
            self.samples_done += 1
            if event.sample.passed:
                self.samples_passed += 1
            else:
                self.samples_failed += 1
            self._advance()
        elif isinstance(event, RunStarted):
            self.samples_done = len(event.resumed)
            self.samples_passed = sum(1 for s in event.resumed if s.passed)
            self.samples_failed = self.samples_done - self.samples_passed
            self._start(event.name, event.total_samples)
        elif isinstance(event, RunFinished):
            self._stop()
        elif isinstance(event, RunStatus):
            for status in event.limits:
                if status.pace is not None and self._paces.get(status.name) != status.reason:
                    # Which pace the run keeps against an API, and why (once per change).
                    self._paces[status.name] = status.reason
                    self._log(
                        f"rate limit {one_line(status.name, 60)}: pace {status.pace:.3g} req/s"
                        f" ({status.reason})"
                    )

    def _start(self, name: str, total: int) -> None:
        self._name, self.samples_total = one_line(name, 60), total
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
                TextColumn("[green]✓ {task.fields[passed]}[/] [red]✗ {task.fields[failed]}[/]"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(
                self._name.replace("[", "\\["),
                total=total,
                completed=self.samples_done,
                passed=self.samples_passed,
                failed=self.samples_failed,
            )
        else:
            _err(f"[{self._name}] running {total:,} samples")
            self._last_print = time.monotonic()
            self._next_line = max(1, total // 10)

    def _advance(self) -> None:
        if self._bar is not None:
            self._bar.update(
                self._task,
                completed=self.samples_done,
                passed=self.samples_passed,
                failed=self.samples_failed,
            )
            return
        now = time.monotonic()
        if self.samples_done >= self._next_line or now - self._last_print >= 5:
            _err(
                f"[{self._name}] {self.samples_done:,}/{self.samples_total:,} samples · {self.samples_passed:,} passed · {self.samples_failed:,} failed"
            )
            self._last_print = now
            self._next_line = self.samples_done + max(1, self.samples_total // 10)

    def _log(self, message: str) -> None:
        if self._bar is not None:
            self._bar.console.print(message, markup=False, highlight=False)
        else:
            _err(f"[{self._name}] {message}")

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

"""`RunSession`: one run started from the app — its evaluation, state, journal and baseline."""

from __future__ import annotations

import gc
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tui_eval.report import Diff, Report, ReportFileError, SampleResult
from tui_eval.runner import Evaluation, Event, SampleFinished
from tui_eval.store import RunHistory, RunJournal, load_baseline, save_baseline
from tui_eval.suites import Suite
from tui_eval.tui.state import Clock, RunState

INVOCATION = uuid.uuid4().hex[:12]


@dataclass
class RunSession:
    """A suite run from the app (or a saved report shown read-only).

    Attributes:
        suite: the suite being run (None for a report opened from disk).
        state: what the screens show.
        baseline_path: where `s` saves and `c` compares.
    """

    suite: Suite | None
    state: RunState
    baseline_path: Path | None = None
    concurrency: int | None = None
    history: RunHistory | None = None
    evaluation: Evaluation | None = None
    journal: RunJournal | None = None
    title: str = ""
    notes: list[str] = field(default_factory=list)

    @classmethod
    def for_suite(
        cls,
        suite: Suite,
        *,
        clock: Clock,
        history: RunHistory | None,
        concurrency: int | None = None,
        fail_fast: bool = False,
        baseline_path: Path | None = None,
        title: str = "",
        done: dict[str, list[SampleResult]] | None = None,
        journal: RunJournal | None = None,
    ) -> RunSession:
        """Prepare a run of `suite` (call `run()` in a worker to start it).

        Args:
            done: samples an interrupted run already finished (they are not run again).
            journal: the interrupted run's journal, to append to instead of starting one.
        """
        state = RunState(suite.name, clock=clock)
        session = cls(
            suite,
            state,
            baseline_path or suite.baseline_path,
            concurrency,
            history,
            title=title or suite.name,
        )
        session.evaluation = Evaluation(
            suite.agent,
            suite.cases,
            concurrency=concurrency or suite.concurrency,
            fail_fast=fail_fast,
            price=suite.price,
            name=suite.name,
            on_event=session._on_event,
            done=done,
            metadata={"suite_path": str(suite.path or "")},
        )
        session.journal = journal
        return session

    @classmethod
    def for_report(
        cls, report: Report, *, clock: Clock, baseline_path: Path | None = None, title: str = ""
    ) -> RunSession:
        """A read-only session showing a saved report."""
        return cls(
            None,
            RunState.from_report(report, clock=clock),
            baseline_path,
            title=title or report.name,
        )

    def _on_event(self, event: Event) -> None:
        self.state.apply(event)
        if self.journal is not None and isinstance(event, SampleFinished):
            self.journal.append(event.sample)

    async def run(self) -> Report:
        """Run the suite to the end (or until `cancel()`), journaling every sample."""
        assert self.evaluation is not None and self.suite is not None
        # Everything alive now (the app's widgets, loaded suites, earlier runs) is moved out
        # of the garbage collector's sight: otherwise every full collection during the run
        # walks the whole widget tree, which measured as most of the app's cost on a
        # zero-latency suite (bench/). Reference counting still frees it as usual.
        gc.freeze()
        if self.journal is None and self.history is not None:
            self.journal = self.history.start(
                self.suite.name, str(self.suite.path or ""), invocation=INVOCATION, options={}
            )
        try:
            report = await self.evaluation.run()
        finally:
            if self.journal is not None and self.evaluation.report is not None:
                self.journal.finish(self.evaluation.report)
        return report

    def cancel(self) -> None:
        """Stop the run; finished samples are kept."""
        if self.evaluation is not None:
            self.evaluation.cancel()

    @property
    def report(self) -> Report | None:
        """The final report, once the run ended."""
        return self.state.report

    def save_baseline(self) -> str:
        """Save the finished run as the baseline; returns what happened, for a notification."""
        report = self.report
        if report is None:
            return "the run has not finished yet"
        if report.cancelled:
            return "a cancelled run is not saved as the baseline"
        if self.baseline_path is None:
            return "no baseline path for this run"
        save_baseline(self.baseline_path, report)
        return f"baseline saved to {self.baseline_path}"

    def compare(self) -> Diff | str:
        """The Diff against the baseline, or why there is none."""
        if self.report is None:
            return "the run has not finished yet"
        if self.baseline_path is None:
            return "no baseline for this run"
        try:
            baseline = load_baseline(self.baseline_path)
        except ReportFileError as exc:
            return str(exc)
        if baseline is None:
            return f"no baseline yet at {self.baseline_path} (press s to save this run as the baseline)"
        self.baseline = baseline
        try:
            return self.report.compare(baseline)
        except ValueError as exc:
            return str(exc)

    baseline: Report | None = None

"""`RunSession`: what the app's screens show of one suite run — its live state, and the
core's `SuiteRun` service behind it (or a saved report shown read-only)."""

from __future__ import annotations

import gc
import uuid
from dataclasses import dataclass
from pathlib import Path

from tui_eval.options import RunOptions
from tui_eval.report import Report
from tui_eval.store import RunHistory, RunRecord
from tui_eval.suite_run import (
    BaselineOutcome,
    BaselinePlan,
    BaselineStatus,
    SuiteRun,
    compare_with_baseline,
    plan_baseline,
    save_baseline,
)
from tui_eval.suites import Suite
from tui_eval.tui.state import Clock, RunState

INVOCATION = uuid.uuid4().hex[:12]
"""Every run started in one app session belongs to one invocation (resumed together)."""


@dataclass(kw_only=True)
class RunSession:
    """A suite run in the app (or a saved report shown read-only).

    Attributes:
        state: what the screens show; the runner's events are applied to it.
        service: the run itself (None for a report opened from disk).
        baseline_path: where `s` saves and `c` compares.
        title: the Run screen's title.
    """

    state: RunState
    service: SuiteRun | None = None
    baseline_path: Path | None = None
    title: str = ""

    @classmethod
    def start(
        cls,
        suite: Suite,
        options: RunOptions,
        *,
        clock: Clock,
        history: RunHistory | None,
        title: str = "",
    ) -> RunSession:
        """Prepare a new run of `suite` (call `run()` in a worker to start it).

        Raises:
            EmptySelection: the options select no case.
        """
        state = RunState(suite.name, clock=clock)
        service = SuiteRun.start(
            suite, options, history=history, invocation=INVOCATION, on_event=state.apply
        )
        return cls(
            state=state,
            service=service,
            baseline_path=service.baseline_path,
            title=title or suite.name,
        )

    @classmethod
    def resume(cls, record: RunRecord, *, clock: Clock, history: RunHistory) -> RunSession:
        """Prepare to finish an interrupted run with its journaled options.

        Raises:
            ResumeError: it cannot be resumed (the message says why).
        """
        state = RunState(record.suite, clock=clock)
        service = SuiteRun.resume(record, history=history, on_event=state.apply)
        return cls(
            state=state,
            service=service,
            baseline_path=service.baseline_path,
            title=f"{record.suite} · resumed",
        )

    @classmethod
    def for_report(
        cls, report: Report, *, clock: Clock, baseline_path: Path | None = None, title: str = ""
    ) -> RunSession:
        """A read-only session showing a saved report."""
        return cls(
            state=RunState.from_report(report, clock=clock),
            baseline_path=baseline_path,
            title=title or report.name,
        )

    @property
    def suite(self) -> Suite | None:
        """The suite as run (None for a saved report)."""
        return self.service.suite if self.service is not None else None

    async def run(self) -> Report:
        """Run the suite to the end (or until `cancel()`), journaling every sample."""
        assert self.service is not None, "a saved report does not run"
        # Everything alive now (the app's widgets, loaded suites, earlier runs) is moved out
        # of the garbage collector's sight: otherwise every full collection during the run
        # walks the whole widget tree, which measured as most of the app's cost on a
        # zero-latency suite (bench/). Reference counting still frees it as usual.
        gc.freeze()
        return await self.service.run()

    def cancel(self) -> None:
        """Stop the run; finished samples are kept."""
        if self.service is not None:
            self.service.cancel()

    @property
    def report(self) -> Report | None:
        """The final report, once the run ended."""
        return self.state.report

    @property
    def partial(self) -> bool:
        """Whether the run covers only some of its suite's cases (a rerun, a filter)."""
        return self.service is not None and self.service.options.is_partial

    def plan_baseline(self) -> BaselinePlan | BaselineOutcome:
        """What `s` would do (merge a partial run, replace with a full one), or why it can't."""
        if self.baseline_path is None:
            return BaselineOutcome(
                status=BaselineStatus.REFUSED, path=None, message="no baseline path for this run"
            )
        plan = plan_baseline(self.report, self.baseline_path, merge=self.partial)
        return plan.problem if plan.problem is not None else plan

    def save_baseline(self) -> BaselineOutcome:
        """Save the finished run as the baseline (the core's policy: never over a corrupt
        file; a partial run is merged)."""
        if self.baseline_path is None:
            return BaselineOutcome(
                status=BaselineStatus.REFUSED, path=None, message="no baseline path for this run"
            )
        return save_baseline(self.report, self.baseline_path, merge=self.partial)

    def compare(self) -> BaselineOutcome:
        """The comparison with the baseline, or why there is none."""
        if self.baseline_path is None:
            return BaselineOutcome(
                status=BaselineStatus.REFUSED, path=None, message="no baseline for this run"
            )
        outcome = compare_with_baseline(self.report, self.baseline_path)
        if outcome.status is BaselineStatus.MISSING:
            return BaselineOutcome(
                status=outcome.status,
                path=outcome.path,
                message=f"{outcome.message} (press s to save this run as the baseline)",
            )
        return outcome

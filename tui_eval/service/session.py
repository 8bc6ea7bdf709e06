"""`RunSession`: one suite run as the app shows it (or a saved report, read-only)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from tui_eval.agents.http.context import Runtime
from tui_eval.report.baselines import (
    BaselineOutcome,
    BaselinePlan,
    BaselineStatus,
    BaselineStore,
    Coverage,
)
from tui_eval.report.report import Report
from tui_eval.run.events import Event
from tui_eval.run.state import Clock, RunState
from tui_eval.service.request import PlainRun, RunRequest
from tui_eval.service.run_plan import plan_run
from tui_eval.service.store import RunHistory, RunRecord
from tui_eval.service.suite_run import SuiteRun
from tui_eval.suites import Suite


@dataclass(kw_only=True)
class RunSession:
    """A suite run in the app (or a saved report shown read-only).

    Attributes:
        state: what the screens show; the runner's events are applied to it.
        service: the run itself (None for a report opened from disk).
        baseline: where `w` saves and `c` compares (None: the run has no baseline).
        title: the Run screen's title.
        more_samples: each case's latest "more samples" rerun (`m` on the Case screen).
        announced: whether its end was announced.
    """

    state: RunState
    service: SuiteRun | None = None
    baseline: BaselineStore | None = None
    title: str = ""
    more_samples: dict[str, RunSession] = field(default_factory=dict)
    announced: bool = False

    @classmethod
    def start(
        cls,
        suite: Suite,
        request: RunRequest,
        *,
        clock: Clock,
        history: RunHistory | None,
        invocation: str,
        runtime: Runtime | None = None,
        title: str = "",
        baseline: Report | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> RunSession:
        """Prepare a new run of `suite` (call `run()` in a worker to start it); `on_event`
        sees each event after the state has.

        Raises:
            EmptySelection: the request selects no case.
            PlanError: the request's kind of run cannot start.
        """
        state = RunState(suite.name, clock=clock)

        def apply(event: Event) -> None:
            state.apply(event)
            if on_event is not None:
                on_event(event)

        service = SuiteRun.start(
            plan_run(suite, request, baseline=baseline),
            history=history,
            invocation=invocation,
            on_event=state.apply if on_event is None else apply,
            runtime=runtime,
        )
        return cls(
            state=state,
            service=service,
            baseline=service.baseline_store,
            title=title or suite.name,
        )

    @classmethod
    def resume(
        cls,
        record: RunRecord,
        *,
        clock: Clock,
        history: RunHistory,
        runtime: Runtime | None = None,
    ) -> RunSession:
        """Prepare to finish an interrupted run with its journaled request.

        Raises:
            ResumeError: it cannot be resumed (the message says why).
        """
        state = RunState(record.suite, clock=clock)
        service = SuiteRun.resume(record, history=history, on_event=state.apply, runtime=runtime)
        return cls(
            state=state,
            service=service,
            baseline=service.baseline_store,
            title=f"{record.suite} · resumed",
        )

    @classmethod
    def for_report(
        cls, report: Report, *, clock: Clock, baseline: BaselineStore | None = None, title: str = ""
    ) -> RunSession:
        """A read-only session showing a saved report."""
        return cls(
            state=RunState.from_report(report, clock=clock),
            baseline=baseline,
            title=title or report.name,
        )

    @property
    def suite(self) -> Suite | None:
        """The suite as run (None for a saved report)."""
        return self.service.plan.suite if self.service is not None else None

    async def run(self) -> Report:
        """Run the suite to the end (or until `cancel()`), journaling every sample."""
        assert self.service is not None, "a saved report does not run"
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
    def report_file(self) -> Path | None:
        """Where the run's report is kept in the history once it ends (None: not journaled)."""
        journal = self.service.journal if self.service is not None else None
        return journal.record.report_path if journal is not None else None

    @property
    def baseline_path(self) -> Path | None:
        """The baseline file (None: the run has none)."""
        return self.baseline.path if self.baseline is not None else None

    @property
    def coverage(self) -> Coverage:
        """The baseline cases the run speaks for (a saved report: only its own cases)."""
        if self.service is not None:
            return self.service.coverage
        return Coverage(tuple(case.name for case in self.report.cases) if self.report else ())

    def _no_path(self, verb: str) -> BaselineOutcome:
        return BaselineOutcome(
            status=BaselineStatus.REFUSED, path=None, message=f"no baseline to {verb} for this run"
        )

    def plan_baseline(self) -> BaselinePlan | BaselineOutcome:
        """What `w` would do (merge a partial run, replace with a full one), or why it can't."""
        if self.baseline is None:
            return self._no_path("save")
        plan = self.baseline.plan(self.report, self.coverage)
        return plan.problem if plan.problem is not None else plan

    def save_baseline(self) -> BaselineOutcome:
        """Save the finished run as the baseline (`BaselineStore.save`)."""
        if self.baseline is None:
            return self._no_path("save")
        return self.baseline.save(self.report, self.coverage)

    def compare(self) -> BaselineOutcome:
        """The comparison with the baseline (of the cases this run covers), or why there is none."""
        if self.service is not None:
            outcome = self.service.compare()
        elif self.baseline is not None:
            outcome = self.baseline.compare(self.report, self.coverage)
        else:
            return self._no_path("compare with")
        if outcome.status is BaselineStatus.MISSING:
            return BaselineOutcome(
                status=outcome.status,
                path=outcome.path,
                message=f"{outcome.message} (press w to save this run as the baseline)",
            )
        return outcome

    def compared_baseline(self) -> Report | None:
        """The report this run is compared with, also while a plain run still goes (so the
        Failures screen shows what is new as samples stream); None if there is none."""
        compared = self.compare()
        if compared.status is BaselineStatus.COMPARED:
            return compared.baseline
        service, store = self.service, self.baseline
        if (
            service is not None
            and self.report is None
            and isinstance(service.kind, PlainRun)
            and store
        ):
            return store.read().baseline
        return None

    def write_baseline(self, accepted: Collection[str]) -> BaselineOutcome:
        """Write a review's accepted cases into the baseline, keeping every other case."""
        if self.baseline is None:
            return self._no_path("accept into")
        return self.baseline.accept(self.report, list(accepted), self.coverage)

"""`SuiteRun`: the one way a suite run is started, journaled, resumed and finished.

The CLI and the app are thin callers of it, so a run started in either resumes in either.
Every way of running a suite (plain, rerun, `--decide`, A/B, recheck) is a kind of
`SuiteRun`, journaled and resumable alike."""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from tui_eval.agents.http.context import Runtime
from tui_eval.core.budget import CostBudget
from tui_eval.core.cases import Case
from tui_eval.core.results import SampleResult
from tui_eval.core.settings import RunSettings
from tui_eval.report import quarantine
from tui_eval.report.baselines import BaselineOutcome, BaselineStatus, BaselineStore, Coverage
from tui_eval.report.left_out import COUNT_USER_FAULTS
from tui_eval.report.report import Report
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.events import Event, SampleFinished
from tui_eval.run.sample_sources import SavedRuns, recheck_metadata
from tui_eval.run.sequential import (
    Decision,
    compare_in_rounds,
    decide_in_rounds,
    paired_concurrency,
)
from tui_eval.service.request import (
    ABRun,
    DecideRun,
    Exports,
    PlainRun,
    RecheckRun,
    RunKind,
)
from tui_eval.service.run_plan import (
    EmptySelection,
    PlanError,
    RunPlan,
    changed_definitions,
    definitions,
    plan_run,
    shown_path,
)
from tui_eval.service.store import (
    RunHistory,
    RunJournal,
    RunLockedError,
    RunRecord,
    read_journal_samples,
)
from tui_eval.stats.case_decisions import ALPHA, DEFAULT_MARGIN
from tui_eval.suites import load_suites
from tui_eval.util.errors import TuiEvalError


class ResumeError(TuiEvalError):
    """A recorded run cannot be resumed; the message says why (and names the run)."""


class SuiteRun:
    """One run of one suite: its samples, its journal, and its baseline.

    Create it with `SuiteRun.start(plan_run(suite, request))` or `SuiteRun.resume()`, then
    `await run()`; `cancel()` stops it keeping finished samples.

    Attributes:
        plan: the run as planned (`plan_run()`), with the front-end's runtime unless the
            suite's settings give one.
        journal: where samples are appended (None: nothing kept on disk).
        evaluation: the runner's handle on the samples running now (for `decide` and
            `ab`, the current round's).
        decision: for `decide` and `ab`, the outcome once the run has ended.
    """

    def __init__(
        self,
        plan: RunPlan,
        *,
        journal: RunJournal | None,
        done: dict[str, list[SampleResult]] | None = None,
        done_a: dict[str, list[SampleResult]] | None = None,
        on_event: Callable[[Event], None] | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        if runtime is not None and plan.settings.runtime is None:
            plan = dataclasses.replace(plan, settings=plan.settings.replace(runtime=runtime))
        self.plan = plan
        self.journal = journal
        self.on_event = on_event
        metadata: dict[str, object] = {"suite_path": str(plan.suite.path or ""), **plan.metadata}
        if journal is not None:
            metadata["run_id"] = journal.record.run_id
        if done is not None:
            metadata["resumed"] = True
        if plan.settings.count_user_faults:  # every report of the run says it counted them
            metadata[COUNT_USER_FAULTS] = True
        if plan.rechecked is not None:
            metadata = {**recheck_metadata(plan.rechecked), **metadata}
        self.metadata = metadata
        self.decision: Decision | None = None
        self._done = done or {}
        self._done_a = done_a or {}
        self._final: Report | None = None
        self._cancel_requested = False
        self.quarantine_notes: list[str] = []
        """What the run's quarantines did (one ended, one released), once it has ended."""
        self._running: set[Evaluation] = set()
        """The rounds running now (an A/B round runs both sides at once)."""
        agent = None if plan.rechecked is not None else plan.suite.agent
        if plan.agents is not None:
            agent = plan.agents[1]
        self.evaluation = self._evaluation(agent, plan.suite.cases, self._done, plan.settings)

    @property
    def kind(self) -> RunKind:
        """What kind of run this is."""
        return self.plan.request.kind

    def _evaluation(
        self,
        agent: Any,
        cases: Sequence[Case],
        done: Mapping[str, Sequence[SampleResult]],
        settings: RunSettings,
        arm: Literal["a"] | None = None,
    ) -> Evaluation:
        rechecked = self.plan.rechecked
        return Evaluation(
            agent,
            cases,
            settings=settings,
            name=self.plan.suite.name,
            on_event=self._dispatch if arm is None else functools.partial(self._journal, arm=arm),
            done=done or None,
            source=SavedRuns.of(rechecked) if rechecked is not None else None,
            metadata=self.metadata,
        )

    # -- starting ----------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        plan: RunPlan,
        *,
        history: RunHistory | None,
        invocation: str,
        on_event: Callable[[Event], None] | None = None,
        exports: Exports | None = None,
        runtime: Runtime | None = None,
    ) -> SuiteRun:
        """A new run as `plan` says, journaled in `history` (if given) with its `exports`."""
        journal = None
        if history is not None:
            journal = history.start(
                plan.suite.name,
                str(plan.suite.path or ""),
                invocation=invocation,
                request=plan.request,
                definitions=definitions(plan.suite),
                exports=exports,
            )
        return cls(plan, journal=journal, on_event=on_event, runtime=runtime)

    @classmethod
    def resume(
        cls,
        record: RunRecord,
        *,
        history: RunHistory,
        on_event: Callable[[Event], None] | None = None,
        force: bool = False,
        runtime: Runtime | None = None,
    ) -> SuiteRun:
        """Finish the interrupted run `record` as its request asked, appending to its journal.

        Raises:
            ResumeError: the run already ended, its suite cannot be loaded any more, or
                (unless `force`) the suite's cases or checks changed since it started.
        """
        if record.problem is not None:
            raise ResumeError(record.problem)
        if not record.resumable:
            raise ResumeError(f"run {record.run_id} has already finished")
        if not record.suite_path:
            raise ResumeError(f"cannot resume {record.run_id}: its suite file was not recorded")
        loaded = load_suites([record.suite_path])
        suite = next((s for s in loaded.suites if s.name == record.suite), None)
        if suite is None:
            errors = "; ".join(e.message for e in loaded.errors)
            raise ResumeError(
                f"cannot resume {record.run_id}: suite {record.suite!r} not found in "
                f"{record.suite_path}" + (f" ({errors})" if errors else "")
            )
        try:
            plan = plan_run(suite, record.request)
        except (EmptySelection, PlanError) as exc:
            raise ResumeError(f"cannot resume {record.run_id}: {exc}") from None
        changed = changed_definitions(record.definitions, plan.suite)
        if changed and not force:
            raise ResumeError(
                f"cannot resume {record.run_id}: the suite {record.suite!r} changed since the "
                f"run started ({changed}); its finished samples were judged by the old "
                "definitions. Start a new run, or `tui-eval resume --force` to mix them"
            )
        try:
            journal = RunJournal(record)
        except RunLockedError as exc:
            raise ResumeError(str(exc)) from None
        done = read_journal_samples(record.journal_path)
        done_a = read_journal_samples(record.journal_path, arm="a") if plan.agents else None
        return cls(
            plan, journal=journal, done=done, done_a=done_a, on_event=on_event, runtime=runtime
        )

    # -- running -----------------------------------------------------------------------
    @property
    def run_id(self) -> str | None:
        """The run's id in the history (None when it is not journaled)."""
        return self.journal.record.run_id if self.journal is not None else None

    @property
    def resumed_samples(self) -> int:
        """How many samples an earlier, interrupted run of this one had finished."""
        return sum(len(samples) for samples in self._done.values()) + sum(
            len(samples) for samples in self._done_a.values()
        )

    @property
    def journal_error(self) -> str | None:
        """Why the journal could not be written (the run then stopped), if it could not."""
        error = self.journal.error if self.journal is not None else None
        return str(error) if error is not None else None

    def _dispatch(self, event: Event) -> None:
        self._journal(event)
        if self.on_event is not None:
            self.on_event(event)

    def _journal(self, event: Event, arm: Literal["a"] | None = None) -> None:
        journal = self.journal
        if journal is not None and isinstance(event, SampleFinished):
            journal.append(event.sample, arm=arm)
            if journal.error is not None and not self.evaluation.cancel_requested:
                # Unjournaled samples could not be resumed: stop while the journal is whole.
                self.cancel()

    def close(self) -> None:
        """Release a run that will not be run now; its journal stays resumable."""
        if self.journal is not None:
            self.journal.close()

    async def run(self) -> Report:
        """Run every missing sample; the journal is finished even when cancelled."""
        report: Report | None = None
        try:
            if isinstance(self.kind, DecideRun | ABRun):
                report = await self._decide()
            else:
                report = await self.evaluation.run()
            self._quarantine(report)
            self._final = report
            return report
        finally:
            if self.journal is not None and self._final is not None:
                self.journal.finish(self._final)
            elif self.journal is not None and self.evaluation.finished:
                self.journal.finish(self.evaluation.report)

    async def _round(
        self,
        agent: Any,
        cases: list[Case],
        done: dict[str, list[SampleResult]],
        budget: CostBudget | None,
        arm: Literal["a"] | None = None,
    ) -> Report:
        # Every round shares the decision's budget; an A/B round runs both sides at once.
        settings = self.plan.settings.replace(max_cost=budget)
        if isinstance(self.kind, ABRun):
            settings = settings.replace(concurrency=paired_concurrency(settings.concurrency))
        evaluation = self.evaluation = self._evaluation(agent, cases, done, settings, arm)
        if self._cancel_requested:
            evaluation.cancel()
        self._running.add(evaluation)
        try:
            return await evaluation.run()
        finally:
            self._running.discard(evaluation)

    async def _decide(self) -> Report:
        """A decide run against its baseline, or an A/B run of its two agents."""
        plan, cases = self.plan, list(self.plan.suite.cases)
        if plan.agents is None:
            assert plan.baseline is not None
            self.decision = await decide_in_rounds(
                functools.partial(self._round, plan.suite.agent),
                cases,
                plan.baseline,
                plan.settings,
                alpha=ALPHA,
                margin=DEFAULT_MARGIN,
                done=self._done,
            )
        else:
            agent_a, agent_b = plan.agents
            self.decision = await compare_in_rounds(
                functools.partial(self._round, agent_a, arm="a"),
                functools.partial(self._round, agent_b),
                cases,
                plan.settings,
                alpha=ALPHA,
                margin=DEFAULT_MARGIN,
                done_a=self._done_a,
                done_b=self._done,
            )
        cancelled = self.decision.report.cancelled or self._cancel_requested
        return dataclasses.replace(
            self.decision.report, metadata=self.metadata, cancelled=cancelled
        )

    def _quarantine(self, report: Report) -> None:
        """Mark the suite's quarantined cases on the report and count a finished plain run
        towards their release (notes in `quarantine_notes`)."""
        if isinstance(self.kind, RecheckRun):
            return
        try:
            self.quarantine_notes = quarantine.apply_to(
                report,
                quarantine.quarantine_path(self.baseline_store.path),
                self.plan.suite.name,
                datetime.date.today(),
                count=isinstance(self.kind, PlainRun) and not report.cancelled,
            )
        except (quarantine.QuarantineFileError, OSError) as exc:
            self.quarantine_notes = [f"warning: no case is quarantined: {exc}"]

    def cancel(self) -> None:
        """Stop the run; finished samples are kept and the report is marked cancelled."""
        self._cancel_requested = True
        for evaluation in {self.evaluation, *self._running}:
            evaluation.cancel()

    @property
    def cancel_requested(self) -> bool:
        """Whether `cancel()` was called."""
        return self._cancel_requested

    @property
    def report(self) -> Report | None:
        """The final report, once the run has ended."""
        if self._final is not None:
            return self._final
        if isinstance(self.kind, PlainRun | RecheckRun):
            return self.evaluation.report if self.evaluation.finished else None
        return None

    # -- the baseline --------------------------------------------------------------------
    @functools.cached_property
    def baseline_store(self) -> BaselineStore:
        """Where this run compares and saves: `--baseline FILE`, else the suite's baseline
        (found once: an earlier version's file is read whole to know whose it is)."""
        return BaselineStore.for_suite(self.plan.suite, self.plan.request.baseline)

    @property
    def coverage(self) -> Coverage:
        """The baseline cases this run speaks for (a partial run: only those it ran)."""
        plan = self.plan
        only = tuple(case.label for case in plan.suite.cases) if plan.request.is_partial else None
        return Coverage(only, tuple(self.not_reached))

    def compare(self) -> BaselineOutcome:
        """Compare the finished run with its baseline over the cases it covers (a decide or
        A/B run: its decision; a recheck: against the rechecked report)."""
        if self.decision is not None:
            kind = self.kind
            path = self.baseline_store.path if isinstance(kind, DecideRun) else None
            if isinstance(kind, DecideRun) and kind.against is not None:
                path = Path(kind.against)
            return BaselineOutcome(
                status=BaselineStatus.COMPARED,
                path=path,
                message="decided" if path is None else f"decided against {path}",
                diff=self.decision.diff,
                baseline=self.decision.other or self.plan.baseline,
            )
        report = self.report
        rechecked = self.plan.rechecked
        if isinstance(self.kind, RecheckRun) and rechecked is not None and report is not None:
            return BaselineOutcome(
                status=BaselineStatus.COMPARED,
                path=None,
                message=f"compared with {shown_path(self.kind.report)}",
                diff=report.compare(rechecked),
                baseline=rechecked,
            )
        return self.baseline_store.compare(self.report, self.coverage)

    @property
    def not_reached(self) -> list[str]:
        """The cases of the finished run that never ran a sample (cut short, `fail_fast`)."""
        report = self.report
        if report is None:
            return []
        ran = {case.name for case in report.cases}
        return [case.label for case in self.plan.suite.cases if case.label not in ran]

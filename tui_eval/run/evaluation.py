"""`Evaluation`: one run of cases: its results, budget, cancellation, events and scheduling."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Coroutine, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from tui_eval.agents.messages import input_text
from tui_eval.core.budget import CostBudget, Ledger
from tui_eval.core.cases import Case
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.core.settings import ExecutorError, RaySpec, RunSettings
from tui_eval.report.left_out import COUNT_USER_FAULTS, blamed_on_user
from tui_eval.report.report import Report
from tui_eval.run.events import (
    CaseFinished,
    EventHandler,
    RunFinished,
    RunStarted,
    RunStatus,
    SampleFinished,
)
from tui_eval.run.sample_runner import Pacing, SampleRunner, SampleSource
from tui_eval.run.sample_sources import AgentRuns

STATUS_EVERY_S = 0.5


class Evaluation:
    """One evaluation run, with a handle to cancel it and read its partial report.

    `evaluate()` is `Evaluation(...).run()`; after `cancel()`, `run()` returns a report of
    every finished sample, `cancelled=True`.

    Args:
        done: samples an interrupted run finished, by case name; only the missing ones run.
        source: where the samples come from (default: `AgentRuns(agent)`; `SavedRuns`
            rechecks an earlier report's runs).
    """

    def __init__(
        self,
        agent: Any,
        cases: Iterable[Case],
        *,
        settings: RunSettings | None = None,
        name: str | None = None,
        on_event: EventHandler | None = None,
        done: Mapping[str, Sequence[SampleResult]] | None = None,
        source: SampleSource | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.settings = settings = settings or RunSettings()
        self.cases = list(cases)
        if settings.samples is not None:
            self.cases = [replace(case, samples=settings.samples) for case in self.cases]
        if isinstance(settings.executor, RaySpec):
            raise ExecutorError(
                "RaySpec is the executor of a suite run (tui-eval run --executor ray); "
                "evaluate() takes a RayExecutor(suite_file, suite_name)"
            )
        self._executor = settings.executor
        self.budget = CostBudget.of(settings.max_cost)
        self.ledger = self.budget.ledger if self.budget is not None else Ledger()
        """What the run spent (a shared budget's ledger counts its other runs' too)."""
        self._accepted: set[tuple[int, int]] = set()
        self._left: list[int] = []
        self.name = name or "eval"
        self.metadata = dict(metadata or {})
        # Whether the report counts its user faults (a recheck's metadata is its report's).
        self.metadata.pop(COUNT_USER_FAULTS, None)
        if settings.count_user_faults:
            self.metadata[COUNT_USER_FAULTS] = True
        if source is None:
            source = AgentRuns(agent)
        self.cases = source.cases(self.cases)
        self.samples = SampleRunner(self.cases, source, settings, emit=on_event)
        """Runs single samples of this run."""
        self.cache = self.samples.context.cache
        self.pacing = Pacing(on_event)
        self._emit = on_event
        self.gated = self.budget is not None or settings.time_budget is not None
        """Whether `may_start()` can refuse a sample; schedulers skip the call otherwise."""
        self.results = [
            CaseResult(
                case.label,
                list((done or {}).get(case.label, ()))[: case.samples],
                pass_threshold=case.pass_threshold,
                planned=case.samples,
                input=input_text(case.input),
                expected=case.expected,
                expected_tools=case.expected_tools,
                metadata=dict(case.metadata),
                suite=self.name,
                definition=case,
            )
            for case in self.cases
        ]
        """Each case's result so far, by case index."""
        if not isinstance(settings.max_cost, CostBudget):
            # A resumed run's samples were spent, and say what one costs. (A budget shared
            # with earlier runs, decide()'s rounds, has seen them already: its owner seeds it.)
            for result in self.results:
                for done_sample in result.samples:
                    self._spend(done_sample)
        self._scope: anyio.CancelScope | None = None
        self._cancel_requested = False
        self._cancelled = False
        self._started_at = 0.0
        self._t0 = 0.0
        self._duration = 0.0
        self._cancel_caught = False
        self._out_of_time = False
        self.finished = False
        """Whether `run()` has ended (completely or cancelled): `report` is then final."""

    # -- control ---------------------------------------------------------------------
    @property
    def cancel_requested(self) -> bool:
        """Whether `cancel()` was called."""
        return self._cancel_requested

    def cancel(self) -> None:
        """Stop the run; finished samples are kept and the report is marked cancelled."""
        self._cancel_requested = True
        if self._scope is not None:
            self._scope.cancel()

    @property
    def _stopped(self) -> str | None:
        """Why the run stopped on its own (budget or time budget spent)."""
        budget = self.budget
        if budget is not None and budget.stopped:
            return budget.reason()
        if self._out_of_time:
            return f"time budget of {self.settings.time_budget:g}s reached: no new sample started"
        return None

    @property
    def stopped(self) -> bool:
        """Whether the run stopped on its own (budget or time budget spent)."""
        return self._stopped is not None

    @property
    def total_samples(self) -> int:
        """How many samples the run will have when complete."""
        return sum(case.samples for case in self.cases)

    @property
    def report(self) -> Report:
        """The report so far (complete once `run()` returned)."""
        duration = self._duration or (time.perf_counter() - self._t0 if self._t0 else 0.0)
        return Report(
            self.name,
            [r for r in self.results if r.samples],
            started_at=self._started_at,
            duration_s=duration,
            cancelled=self._cancelled,
            priced=self.settings.price is not None or self.ledger.priced > 0,
            metadata=self.metadata,
            stopped=self._stopped,
        )

    # -- running ---------------------------------------------------------------------
    async def run(self) -> Report:
        """Run every missing sample and return the report."""
        self._started_at = time.time()
        self._t0 = time.perf_counter()
        emit = self._emit
        if emit is not None:
            resumed = [s for result in self.results for s in result.samples]
            emit(
                RunStarted(
                    self.name,
                    self.cases,
                    self.total_samples,
                    self._started_at,
                    resumed,
                    max_cost=None if self.budget is None else self.budget.max_cost,
                )
            )
        try:
            await self._run_in_scope(emit)
        except BaseException:
            # Cancelled from outside (task cancelled, Ctrl+C): the partial report still goes out.
            self._finish(cancelled=True)
            raise
        stopped = self._stopped is not None
        return self._finish(cancelled=self._cancel_requested or self._cancel_caught or stopped)

    async def _run_in_scope(self, emit: EventHandler | None) -> None:
        async with self.samples.context.closing_clients():
            if emit is None:
                await self._run_all()
                return
            async with anyio.create_task_group() as status:
                status.start_soon(self._report_status, emit)
                try:
                    await self._run_all()
                finally:
                    status.cancel_scope.cancel()

    async def _report_status(self, emit: EventHandler) -> None:
        """Every half second: the rate limiters this run used, and its spend."""
        started = time.monotonic()
        while True:
            await anyio.sleep(STATUS_EVERY_S)
            limiters = self.samples.context.runtime.limiters()
            used = [limiter.status() for limiter in limiters if limiter.last_used >= started]
            if used or self.budget is not None:
                spent = self.ledger.spent if self.ledger.priced else None
                emit(RunStatus(used, spent, None if self.budget is None else self.budget.max_cost))

    async def may_start(self, index: int, sample_index: int) -> bool:
        """Reserve the budget for a sample before it starts (False: budget or time spent)."""
        time_budget = self.settings.time_budget
        if time_budget is not None and time.perf_counter() - self._t0 >= time_budget:
            self._out_of_time = True
            return False
        if self.budget is None:
            return True
        return await self.budget.reserve((id(self), index, sample_index), self.cases[index].label)

    async def _run_all(self) -> None:
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._cancel_requested:
                    scope.cancel()
                if self._executor is not None:
                    await self._executor.execute(self, self.missing_units())
                else:
                    await self._run_here()
        finally:
            self._scope = None
        self._cancel_caught = scope.cancelled_caught

    # -- scheduling in this process ----------------------------------------------------
    async def _run_here(self) -> None:
        """`concurrency` workers take the cases in order, a case's samples one by one."""
        settings, samples, record, turn_due = (
            self.settings,
            self.samples,
            self.record_unit,
            self.pacing.turn_due,
        )
        fail_fast, gated = settings.fail_fast, self.gated
        units = self.missing_units()
        work: list[tuple[int, list[tuple[int, int]]]]
        if settings.parallel_samples and not fail_fast:
            work = [(unit[0], [unit]) for unit in units]
        else:
            work = [(index, []) for index in range(len(self.cases))]
            for unit in units:
                work[unit[0]][1].append(unit)
        pending = iter(work)

        async def worker() -> None:
            pacer = self.pacing.new_pacer()
            for index, group in pending:
                for _, sample_index in group:
                    if gated and not await self.may_start(index, sample_index):
                        return
                    started = time.perf_counter()
                    record(index, await samples.run(index, sample_index, pacer))
                    if turn_due(pacer, started):
                        await anyio.lowlevel.checkpoint()
                if not group:
                    self.case_finished(index)  # resumed whole
                if (fail_fast and not self.results[index].passed) or (gated and self.stopped):
                    return

        async with anyio.create_task_group() as group:
            count = 1 if fail_fast else min(settings.concurrency, len(work))
            await _start_staggered(group, worker, count)

    def _finish(self, *, cancelled: bool) -> Report:
        self._duration = time.perf_counter() - self._t0
        if self.budget is not None:
            self.budget.release(id(self))  # samples cancelled mid-run reserve nothing more
        self._cancelled = cancelled
        self.finished = True
        report = self.report
        if self._emit is not None:
            self._emit(RunFinished(report))
        return report

    # -- recording --------------------------------------------------------------------
    def missing_units(self) -> list[tuple[int, int]]:
        """Every (case, sample) still to run; counts them per case for `record_unit`."""
        units = [
            (index, sample_index)
            for index, case in enumerate(self.cases)
            for sample_index in range(len(self.results[index].samples), case.samples)
        ]
        self._left = [
            case.samples - len(self.results[i].samples) for i, case in enumerate(self.cases)
        ]
        return units

    def record_unit(self, index: int, sample: SampleResult) -> None:
        """Record a sample of a unit, and announce its case when that was the last one."""
        self.record(index, sample)
        self._left[index] -= 1
        if self._left[index] == 0:
            self.case_finished(index)

    def case_finished(self, index: int) -> None:
        """Announce a case whose samples all ran."""
        if self._emit is not None:
            self._emit(CaseFinished(index, self.results[index]))

    def accept(self, index: int, sample: SampleResult) -> bool:
        """Record a sample another executor ran (False: already recorded, by a worker that
        died after running it but before it was requeued)."""
        key = (index, sample.index)
        if key in self._accepted:
            return False
        self._accepted.add(key)
        self.record_unit(index, sample)
        if self.budget is not None and self.budget.exhausted():
            self.cancel()  # samples run elsewhere reserve nothing: stop at the budget
        return True

    async def sample(self, index: int, sample_index: int) -> SampleResult:
        """Run one redacted sample of case `index` without recording it (an executor's worker)."""
        return await self.samples.sample(index, sample_index)

    def record(self, index: int, sample: SampleResult) -> None:
        """Keep a finished sample (in index order) and announce it."""
        if self.samples.redacts:
            sample = self.samples.redacted(sample)
        # The user simulator's failures are left out of the verdicts (said everywhere); a
        # rechecked sample that passes now is counted again.
        sample.excluded = blamed_on_user(sample) and not self.settings.count_user_faults
        samples = self.results[index].samples
        if not samples or samples[-1].index < sample.index:
            samples.append(sample)
        else:  # samples of one case running concurrently finish in any order
            bisect.insort(samples, sample, key=lambda s: s.index)
        self._spend(sample, (id(self), index, sample.index))
        if self._emit is not None:
            self._emit(SampleFinished(index, sample))

    def _spend(self, sample: SampleResult, key: Hashable = None) -> None:
        """Count a sample's cost in the ledger, through the budget when there is one."""
        if self.budget is None:
            self.ledger.add(sample)
        else:
            self.budget.settle(sample, key)


async def _start_staggered(
    group: anyio.abc.TaskGroup, worker: Callable[[], Coroutine[Any, Any, None]], count: int
) -> None:
    """Start `count` workers, letting the loop turn after each (200 at once stall the app)."""
    for _ in range(count):
        group.start_soon(worker)
        await anyio.lowlevel.checkpoint()

"""`evaluate()`, `evaluate_iter()` and `recheck()`: run cases against an agent and stream
typed events; `Evaluation` is the handle behind them (cancel, partial report).

By default concurrency is across cases (a pool of `concurrency` workers), the samples of
one case run one after another, and the checks of one sample run concurrently;
`RunSettings` changes how (samples of a case in parallel, a budget, an executor
elsewhere). Everything the app and the CLI show is built from the events emitted here.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import time
import traceback
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio
import anyio.lowlevel

from tui_eval.agents.messages import RunResult, Usage, input_text
from tui_eval.agents.providers.base import resource_scope, retry_listener
from tui_eval.agents.providers.cache import CacheMode, ResponseCache, run_cache
from tui_eval.agents.providers.limits import limiters
from tui_eval.agents.providers.metering import SampleMeter, sample_meter
from tui_eval.agents.providers.settings import ProviderOptions, run_provider_options
from tui_eval.agents.run_spec import RunSpec
from tui_eval.agents.sources import make_runner
from tui_eval.budget import CostBudget
from tui_eval.cancellation import cancelled_from_outside
from tui_eval.case_plan import CasePlan
from tui_eval.cases import Case
from tui_eval.events import (
    CaseFinished,
    Event,
    EventHandler,
    RunFinished,
    RunStarted,
    RunStatus,
    SampleFinished,
    SampleStateChanged,
)
from tui_eval.report import CaseResult, Report, SampleResult
from tui_eval.run_settings import Executor, Price, RunSettings, resolve
from tui_eval.secrets import redact, redact_value, secret_values
from tui_eval.stored_values import map_values

YIELD_EVERY_S = 0.01
QUICK_SAMPLE_S = 0.001
MAX_UNYIELDED_S = 0.1
STATUS_EVERY_S = 0.5


class _Pacer:
    """One worker's view of the time slices (see `Evaluation._pace`)."""

    __slots__ = ("current", "forced_at", "seen")

    def __init__(self) -> None:
        self.seen = 0
        self.forced_at = 0.0
        self.current: tuple[int, int] | None = None
        """The (case, sample) this worker runs now, for provider retry notices."""


def _input_text(case: Case) -> str:
    return input_text(case.input)


async def _replay_only(spec: RunSpec) -> RunResult:
    raise RuntimeError("a recheck never calls the agent")


class Evaluation:
    """One evaluation run, with a handle to cancel it and read its partial report.

    `evaluate()` is `Evaluation(...).run()`. The app and the CLI keep the object to call
    `cancel()`: the run then stops, and `run()` returns a report of every finished sample
    marked `cancelled=True`.

    Args:
        settings: how the run runs (`RunSettings`); the keyword arguments of the same
            names, when given, override its fields.
        done: samples already finished in an earlier, interrupted run, by case name; only
            the missing samples of each case run (this is how `resume` works).
        replay: saved samples by case name whose runs are checked again instead of calling
            the agent (this is how `recheck` works); cases without saved samples are skipped.
    """

    def __init__(
        self,
        agent: Any,
        cases: Iterable[Case],
        *,
        settings: RunSettings | None = None,
        concurrency: int | None = None,
        fail_fast: bool | None = None,
        price: Price | None = None,
        name: str | None = None,
        on_event: EventHandler | None = None,
        done: Mapping[str, Sequence[SampleResult]] | None = None,
        replay: Mapping[str, Sequence[SampleResult]] | None = None,
        metadata: dict[str, Any] | None = None,
        parallel_samples: bool | None = None,
        provider: ProviderOptions | None = None,
        max_cost: float | CostBudget | None = None,
        cache: bool | CacheMode | ResponseCache | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.settings = settings = resolve(
            settings,
            concurrency=concurrency,
            fail_fast=fail_fast,
            price=price,
            parallel_samples=parallel_samples,
            provider=provider,
            max_cost=max_cost,
            cache=cache,
            executor=executor,
        )
        self.cases = list(cases)
        if settings.samples is not None:
            self.cases = [replace(case, samples=settings.samples) for case in self.cases]
        self.concurrency = settings.concurrency
        self.fail_fast = settings.fail_fast
        self.parallel_samples = settings.parallel_samples
        self.price = settings.price
        self.provider = settings.provider
        self.budget = CostBudget.of(settings.max_cost)
        self.max_cost = None if self.budget is None else self.budget.max_cost
        self.time_budget = settings.time_budget
        self.cache = _response_cache(settings.cache)
        self.executor = settings.executor
        self._accepted: set[tuple[int, int]] = set()
        self._left: list[int] = []
        self._spent = 0.0
        self._priced_samples = 0
        self.name = name or "eval"
        self.metadata = dict(metadata or {})
        self._emit = on_event
        self._replay = replay
        if replay is not None:
            self.cases = [
                replace(c, samples=len(replay[c.label])) for c in self.cases if replay.get(c.label)
            ]
        self._runner = make_runner(agent) if replay is None else _replay_only
        self._plans: list[CasePlan | None] = [None] * len(self.cases)
        self._results = [
            CaseResult(
                case.label,
                list((done or {}).get(case.label, ()))[: case.samples],
                pass_threshold=case.pass_threshold,
                planned=case.samples,
                input=_input_text(case),
                expected=case.expected,
                expected_tools=case.expected_tools,
                metadata=dict(case.metadata),
                suite=self.name,
                definition=case,
            )
            for case in self.cases
        ]
        if self.budget is not None and not isinstance(settings.max_cost, CostBudget):
            # A resumed run's samples were spent, and say what one costs. (A budget shared
            # with earlier runs, decide()'s rounds, has seen them already: its owner seeds it.)
            for result in self._results:
                for done_sample in result.samples:
                    self.budget.observe(done_sample)
        self._scope: anyio.CancelScope | None = None
        self._cancel_requested = False
        self._cancelled = False
        self._started_at = 0.0
        self._t0 = 0.0
        self._duration = 0.0
        self._slice = 0
        self._cancel_caught = False
        self._slice_ends = 0.0
        self._secrets = secret_values()
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
        """Why the run stopped on its own: its budget was spent (with the final spend), or
        its time budget."""
        budget = self.budget
        if budget is not None and budget.stopped:
            return budget.reason()
        if self._out_of_time:
            return f"time budget of {self.time_budget:g}s reached: no new sample started"
        return None

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
            [r for r in self._results if r.samples],
            started_at=self._started_at,
            duration_s=duration,
            cancelled=self._cancelled,
            priced=self.price is not None or self._priced_samples > 0,
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
            resumed = [s for result in self._results for s in result.samples]
            emit(RunStarted(self.name, self.cases, self.total_samples, self._started_at, resumed))
        try:
            with self.scope():
                await self._run_in_scope(emit)
        except BaseException:
            # Cancelled from outside (task cancelled, Ctrl+C): the partial report still goes out.
            self._finish(cancelled=True)
            raise
        stopped = self._stopped is not None
        return self._finish(cancelled=self._cancel_requested or self._cancel_caught or stopped)

    async def _run_in_scope(self, emit: EventHandler | None) -> None:
        async with resource_scope():
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
            used = [limiter.status() for limiter in limiters() if limiter.last_used >= started]
            if used or self.max_cost is not None:
                spent = self._spent if self._priced_samples else None
                emit(RunStatus(used, spent, self.max_cost))

    async def _may_start(self, index: int, sample_index: int) -> bool:
        """Reserve the budget for a sample before it starts (False: the budget is spent, or
        the run has taken its `time_budget`)."""
        if self.time_budget is not None and time.perf_counter() - self._t0 >= self.time_budget:
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
                if self.executor is not None:
                    await self._execute_elsewhere(self.executor)
                elif self.fail_fast:

                    async def serial() -> None:  # its own task, so its context stays its own
                        pacer = self._new_pacer()
                        for index in range(len(self.cases)):
                            await self._run_case(index, pacer)
                            if not self._results[index].passed or self._stopped:
                                break

                    async with anyio.create_task_group() as group:
                        group.start_soon(serial)
                elif self.parallel_samples:
                    await self._run_samples_in_parallel()
                else:
                    pending = iter(range(len(self.cases)))

                    async def worker() -> None:
                        pacer = self._new_pacer()
                        for index in pending:
                            await self._run_case(index, pacer)
                            if self._stopped:
                                return

                    async with anyio.create_task_group() as group:
                        for _ in range(min(self.concurrency, len(self.cases))):
                            group.start_soon(worker)
        finally:
            self._scope = None
        self._cancel_caught = scope.cancelled_caught

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

    def _new_pacer(self) -> _Pacer:
        """A worker's pacer; with a listener, provider retries in this task are reported."""
        pacer = _Pacer()
        emit = self._emit
        if emit is not None:

            def on_retry(attempt: int, delay: float) -> None:
                if pacer.current is not None:
                    emit(SampleStateChanged(*pacer.current, "retrying"))

            retry_listener.set(on_retry)  # the worker's own task context
        return pacer

    async def _pace(self, pacer: _Pacer, sample_started: float) -> None:
        """Give the event loop a turn every few milliseconds, even if the agent never blocks.

        The app's keys and Ctrl+C (cancellation) need it. When a time slice ends, every
        worker whose last sample was quick (it never waited on anything) yields once, so
        the loop really turns instead of passing from worker to worker. A worker whose
        samples wait on I/O already gives the loop its turns; forcing a yield on it would
        only delay its next request, so it is forced at most every `MAX_UNYIELDED_S`.
        """
        now = time.perf_counter()
        if now >= self._slice_ends:
            self._slice += 1
            self._slice_ends = now + YIELD_EVERY_S
        if pacer.seen != self._slice:
            pacer.seen = self._slice
            if now - sample_started < QUICK_SAMPLE_S or now - pacer.forced_at > MAX_UNYIELDED_S:
                pacer.forced_at = now
                await anyio.lowlevel.checkpoint()

    async def _run_samples_in_parallel(self) -> None:
        """Every missing sample of every case as its own unit of work (samples of one case
        run concurrently: only for agents built fresh for each sample)."""
        units = self._missing_units()
        pending = iter(units)

        async def worker() -> None:
            pacer = self._new_pacer()
            for index, sample_index in pending:
                if not await self._may_start(index, sample_index):
                    return
                started = time.perf_counter()
                plan = self._plan_of(index)
                self._record_unit(index, await self._run_sample(index, sample_index, plan, pacer))
                await self._pace(pacer, started)

        async with anyio.create_task_group() as group:
            for _ in range(min(self.concurrency, len(units))):
                group.start_soon(worker)

    # -- the executor seam ----------------------------------------------------------
    def _missing_units(self) -> list[tuple[int, int]]:
        """Every (case, sample) still to run, one unit each; counts them per case, so
        `_record_unit` knows when a case is done."""
        units = [
            (index, sample_index)
            for index, case in enumerate(self.cases)
            for sample_index in range(len(self._results[index].samples), case.samples)
        ]
        self._left = [
            case.samples - len(self._results[i].samples) for i, case in enumerate(self.cases)
        ]
        return units

    def _record_unit(self, index: int, sample: SampleResult) -> None:
        """Record a sample of a unit, and announce its case when that was the last one."""
        self._record(index, sample)
        self._left[index] -= 1
        if self._left[index] == 0 and self._emit is not None:
            self._emit(CaseFinished(index, self._results[index]))

    async def _execute_elsewhere(self, executor: Executor) -> None:
        await executor.execute(self, self._missing_units())

    def accept(self, index: int, sample: SampleResult) -> bool:
        """Record a sample another executor ran (False: that sample was already recorded,
        by a worker that died after running it but before it was requeued)."""
        key = (index, sample.index)
        if key in self._accepted:
            return False
        self._accepted.add(key)
        self._record_unit(index, sample)
        if self.budget is not None and self.budget.exhausted():
            self.cancel()  # samples run elsewhere reserve nothing: stop at the budget
        return True

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """The run's provider options and cache, for the tasks started inside: an executor's
        worker runs its `sample()` calls in one."""
        options_token = run_provider_options.set(self.provider)
        cache_token = run_cache.set(self.cache)
        try:
            yield
        finally:
            run_provider_options.reset(options_token)
            run_cache.reset(cache_token)

    async def sample(self, index: int, sample_index: int) -> SampleResult:
        """Run one sample of case `index` the normal way (timeouts, checks, judges,
        redaction) without recording it: what an executor's worker does, in `scope()`."""
        sample = await self._run_sample(index, sample_index, self._plan_of(index), _Pacer())
        if self._secrets:
            sample = map_values(sample, lambda value: redact_value(value, self._secrets))
        return sample

    def _plan_of(self, index: int) -> CasePlan:
        plan = self._plans[index]
        if plan is None:  # planned when first needed: a big suite starts at once
            plan = self._plans[index] = CasePlan.of(self.cases[index])
        return plan

    def _record(self, index: int, sample: SampleResult) -> None:
        """Keep a finished sample (in index order) and announce it."""
        if self._secrets:
            # The one place outside text enters a record: an agent, tool, model or check
            # that echoed a key from the environment leaves `***` in every artefact.
            sample = map_values(sample, lambda value: redact_value(value, self._secrets))
        samples = self._results[index].samples
        if not samples or samples[-1].index < sample.index:
            samples.append(sample)
        else:  # samples of one case running concurrently finish in any order
            bisect.insort(samples, sample, key=lambda s: s.index)
        if sample.cost is not None:
            self._spent += sample.cost
            self._priced_samples += 1
        if self.budget is not None:
            self.budget.settle((id(self), index, sample.index), sample)
        if self._emit is not None:
            self._emit(SampleFinished(index, sample))

    async def _run_case(self, index: int, pacer: _Pacer) -> None:
        plan = self._plan_of(index)
        result = self._results[index]
        for sample_index in range(len(result.samples), plan.case.samples):
            if not await self._may_start(index, sample_index):
                return
            started = time.perf_counter()
            self._record(index, await self._run_sample(index, sample_index, plan, pacer))
            await self._pace(pacer, started)
        if self._emit is not None:
            self._emit(CaseFinished(index, result))

    async def _run_sample(
        self, index: int, sample_index: int, plan: CasePlan, pacer: _Pacer
    ) -> SampleResult:
        case = plan.case
        emit = self._emit
        if self._replay is not None:
            stored = self._replay[case.label][sample_index]
            if stored.run is None or stored.status in ("error", "timeout", "cancelled"):
                return replace(stored, index=sample_index)
            sample = replace(stored, index=sample_index, checks=[], judge_usage=Usage())
            # Judges of a recheck are metered like a run's: cached, priced, within max_cost.
            meter = SampleMeter(sample_index)
            meter_token = sample_meter.set(meter)
            try:
                await self._judge(index, plan, sample, stored.run)
            finally:
                sample_meter.reset(meter_token)
            if meter.requests:
                sample.cached = meter.all_cached
            if self.price is None and meter.priced and stored.cost is None:
                sample.cost = meter.cost
            return sample
        if emit is not None:
            emit(SampleStateChanged(index, sample_index, "running"))
            pacer.current = (index, sample_index)  # whom a provider's retry is about
        sample = SampleResult(case.label, sample_index, "passed")
        meter = SampleMeter(sample_index)
        meter_token = sample_meter.set(meter)
        try:
            if case.timeout is None:
                await self._attempt(index, plan, sample, pacer)
            else:
                with anyio.move_on_after(case.timeout) as deadline:
                    await self._attempt(index, plan, sample, pacer)
                if deadline.cancelled_caught:
                    stage = "its checks ran" if sample.run is not None else "the agent ran"
                    sample.status = "timeout"
                    sample.error = (
                        f"sample exceeded its timeout of {case.timeout:g}s while {stage}"
                        " and was cancelled"
                    )
                    sample.checks = []
                    self._settle_usage(sample)
        finally:
            pacer.current = None
            sample_meter.reset(meter_token)
        sample.cached = meter.all_cached
        if self.price is None and meter.priced:
            sample.cost = meter.cost
        return sample

    async def _attempt(
        self, index: int, plan: CasePlan, sample: SampleResult, pacer: _Pacer
    ) -> None:
        """Run the agent, then the checks, recording everything on `sample`."""
        case = plan.case
        run: RunResult | None = None
        start = time.perf_counter()
        try:
            run = await self._runner(plan.spec)
        except BaseException as exc:
            if cancelled_from_outside(exc):
                sample.latency_ms = (time.perf_counter() - start) * 1000
                raise
            sample.status = "error"
            sample.error = redact(f"{type(exc).__name__}: {exc}")
            sample.traceback = redact(traceback.format_exc())
            partial = getattr(exc, "partial", None)
            run = partial if isinstance(partial, RunResult) else None
        elapsed = time.perf_counter() - start
        sample.run = run
        pacer.current = None
        if case.timeout is not None and elapsed > case.timeout and sample.status == "passed":
            # No cancellation can reach an agent that never yields to the event loop.
            sample.status = "timeout"
            sample.error = (
                f"the agent blocked the event loop for {elapsed:.2f}s, past its timeout of "
                f"{case.timeout:g}s (run blocking code in a thread: a sync agent is run in "
                "one automatically)"
            )
        if sample.status == "passed" and run is not None:
            sample.latency_ms = run.latency_ms or elapsed * 1000
            await self._judge(index, plan, sample, run)
        else:
            sample.latency_ms = elapsed * 1000
            self._settle_usage(sample)

    def _settle_usage(self, sample: SampleResult) -> None:
        """Usage and cost of a sample whose checks did not (all) run."""
        sample.usage = sample.run.usage if sample.run is not None else Usage()
        sample.judge_usage = Usage()
        if self.price is not None:
            sample.cost = self.price(sample.usage)

    async def _judge(
        self, index: int, plan: CasePlan, sample: SampleResult, run: RunResult
    ) -> None:
        """Run the case's checks on a finished run; settle the sample's status, usage and cost."""
        if plan.async_checks and self._emit is not None:
            self._emit(SampleStateChanged(index, sample.index, "judging"))
        checks = sample.checks = await plan.run_checks(run)
        sample.usage = run.usage
        for check in checks:
            if check.usage is not None:
                sample.judge_usage = sample.judge_usage + check.usage
        if sample.judge_usage.requests or sample.judge_usage.total_tokens:
            sample.usage = run.usage + sample.judge_usage
        sample.status = "passed" if all(check.passed for check in checks) else "failed"
        if self.price is not None:
            sample.cost = self.price(sample.usage)


async def evaluate(
    agent: Any,
    cases: Iterable[Case],
    *,
    settings: RunSettings | None = None,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    price: Price | None = None,
    name: str | None = None,
    on_event: EventHandler | None = None,
    provider: ProviderOptions | None = None,
    max_cost: float | CostBudget | None = None,
    cache: bool | CacheMode | ResponseCache | None = None,
    executor: Executor | None = None,
) -> Report:
    """Run every case against the agent and return the `Report`.

    Example:
        >>> report = await evaluate(agent, [Case("2 + 3?", checks=[contains("5")])])  # doctest: +SKIP
        >>> print(report)  # doctest: +SKIP
        eval: 1/1 cases passed (100%) · 1 samples · 36 tokens · 0.0s

    Args:
        agent: an `Agent`, a zero-arg factory (called per sample), an async callable
            `f(input)`, or an object with an async `run(input)`.
        cases: the cases to run.
        settings: how the run runs (`RunSettings`: concurrency, price, provider options,
            cache, max_cost, executor, time budget...). The keyword arguments below
            override its fields when given.
        concurrency: how many cases run at once (default 4).
        fail_fast: run cases one at a time and stop after the first failing case.
        price: turns a sample's `Usage` into a cost; the report sums it. Without it,
            responses of known models are priced by the built-in table (genai-prices).
        name: the report's name.
        on_event: called with every `Event` (run/sample/case started, changed, finished).
        provider: `ProviderOptions` for every HTTP provider of the run (`rpm`, `timeout`...).
        max_cost: dollars: a sample starts only while it fits, by its estimate, in what is
            left (see `tui_eval.budget` for the bound); a `CostBudget` may be shared.
        cache: `True`/`"on"` or `"read-only"`: replay stored model responses.
        executor: where samples run (None: this process); `RayExecutor(suite_file, name)`
            runs them on Ray, for cases loaded from that suite file.
    """
    evaluation = Evaluation(
        agent,
        cases,
        settings=settings,
        concurrency=concurrency,
        fail_fast=fail_fast,
        price=price,
        name=name,
        on_event=on_event,
        provider=provider,
        max_cost=max_cost,
        cache=cache,
        executor=executor,
    )
    return await evaluation.run()


async def recheck(
    report: Report,
    cases: Iterable[Case],
    *,
    settings: RunSettings | None = None,
    concurrency: int | None = None,
    price: Price | None = None,
    on_event: EventHandler | None = None,
    provider: ProviderOptions | None = None,
    cache: bool | CacheMode | ResponseCache | None = None,
) -> Report:
    """Run the current checks of `cases` on the saved outputs of `report`, without the agent.

    A new rubric, a new judge or a fixed check costs no agent calls (a judge's calls follow
    `settings`: its provider options, cache and price). Samples that errored or timed out
    stay as they were; cases not in `report` are skipped.
    """
    evaluation = Evaluation(
        None,
        cases,
        settings=resolve(settings, samples=None).but(
            concurrency=concurrency, price=price, provider=provider, cache=cache
        ),
        name=report.name,
        on_event=on_event,
        replay=replay_of(report),
        metadata=recheck_metadata(report),
    )
    return await evaluation.run()


def replay_of(report: Report) -> dict[str, list[SampleResult]]:
    """The saved samples of `report` by case name, for `Evaluation(replay=...)`."""
    return {case.name: case.samples for case in report.cases}


def recheck_metadata(report: Report) -> dict[str, Any]:
    """What a rechecked report records about the report it rechecked."""
    return {**report.metadata, "rechecked_from": report.started_at}


async def evaluate_iter(
    agent: Any,
    cases: Iterable[Case],
    *,
    settings: RunSettings | None = None,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    price: Price | None = None,
    name: str | None = None,
    provider: ProviderOptions | None = None,
    max_cost: float | None = None,
    cache: bool | CacheMode | ResponseCache | None = None,
    executor: Executor | None = None,
) -> AsyncIterator[Event]:
    """The events of `evaluate()` as an async generator; the last one is `RunFinished`.

    Takes the same `settings` and keyword arguments as `evaluate()`. Leaving the loop
    early cancels the run.
    """
    send, receive = anyio.create_memory_object_stream[Event](math.inf)

    def forward(event: Event) -> None:
        # A consumer that left the loop closed the stream; the run is being cancelled.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(event)

    evaluation = Evaluation(
        agent,
        cases,
        settings=settings,
        concurrency=concurrency,
        fail_fast=fail_fast,
        price=price,
        name=name,
        on_event=forward,
        provider=provider,
        max_cost=max_cost,
        cache=cache,
        executor=executor,
    )

    async def drive() -> None:
        async with send:
            await evaluation.run()

    async with anyio.create_task_group() as group:
        group.start_soon(drive)
        async with receive:
            async for event in receive:
                try:
                    yield event
                except GeneratorExit:
                    # The consumer left early: stop the run, let the task group drain, end quietly.
                    evaluation.cancel()
                    break


__all__ = [
    "CaseFinished",
    "Evaluation",
    "Event",
    "Executor",
    "Price",
    "RunFinished",
    "RunSettings",
    "RunStarted",
    "SampleFinished",
    "SampleStateChanged",
    "evaluate",
    "evaluate_iter",
    "recheck",
]


def _response_cache(cache: bool | CacheMode | ResponseCache) -> ResponseCache | None:
    if isinstance(cache, ResponseCache):
        return cache
    if cache is True:
        return ResponseCache("on")
    if cache is False or cache == "off":
        return None
    return ResponseCache(cache)

"""`SampleRunner`: one sample of one case (agent call or saved run, timeouts, checks,
metering, pricing, redaction), without recording it: recording, budget and cancellation
belong to the run (`Evaluation`)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import Protocol

import anyio

from tui_eval.agents.conversation import converse
from tui_eval.agents.http.cache import CacheMode, ResponseCache
from tui_eval.agents.http.context import (
    CURRENT_SAMPLE,
    RetryListener,
    RunContext,
    Runtime,
    SampleContext,
)
from tui_eval.agents.http.metering import SampleMeter
from tui_eval.agents.messages import RunResult, Usage
from tui_eval.agents.run_spec import AgentCall
from tui_eval.agents.state import Environment, StateError
from tui_eval.checks.conversations import state_equals
from tui_eval.checks.faults import attribute_fault
from tui_eval.core.budget import known_cost
from tui_eval.core.case_plan import CasePlan
from tui_eval.core.cases import Case
from tui_eval.core.results import SampleResult
from tui_eval.core.settings import RunSettings
from tui_eval.report.stored_values import map_values
from tui_eval.run.events import EventHandler, SampleStateChanged
from tui_eval.util.cancellation import cancelled_from_outside
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.secrets import redact, redact_value, secret_values

YIELD_EVERY_S = 0.01
QUICK_SAMPLE_S = 0.001
MAX_UNYIELDED_S = 0.1


class Pacer:
    """One worker's view of the time slices (see `Pacing`)."""

    __slots__ = ("current", "forced_at", "on_retry", "seen")

    def __init__(self) -> None:
        self.seen = 0
        self.forced_at = 0.0
        self.current: tuple[int, int] | None = None
        """The (case, sample) this worker runs now, for provider retry notices."""
        self.on_retry: RetryListener | None = None
        """Told of the retries of this worker's samples (`SampleContext.on_retry`)."""


class Pacing:
    """The run's time slices: workers give the event loop a turn every few milliseconds,
    even if the agent never blocks, so the app's keys and Ctrl+C get in."""

    def __init__(self, emit: EventHandler | None) -> None:
        self.emit = emit
        self._slice = 0
        self._slice_ends = 0.0

    def new_pacer(self) -> Pacer:
        """A worker's pacer, reporting its samples' provider retries to the listener."""
        pacer = Pacer()
        emit = self.emit
        if emit is not None:

            def on_retry(attempt: int, delay: float) -> None:
                if pacer.current is not None:
                    emit(SampleStateChanged(*pacer.current, "retrying"))

            pacer.on_retry = on_retry
        return pacer

    def turn_due(self, pacer: Pacer, sample_started: float) -> bool:
        """Whether the worker of `pacer` yields to the event loop now (the caller awaits a
        checkpoint); a plain function, as a coroutine per sample costs (bench/README.md).

        When a slice ends, every worker whose last sample was quick yields once, so the loop
        really turns. A worker waiting on I/O already yields; forcing it would only delay
        its next request, so it is forced at most every `MAX_UNYIELDED_S`.
        """
        now = time.perf_counter()
        if now >= self._slice_ends:
            self._slice += 1
            self._slice_ends = now + YIELD_EVERY_S
        if pacer.seen != self._slice:
            pacer.seen = self._slice
            if now - sample_started < QUICK_SAMPLE_S or now - pacer.forced_at > MAX_UNYIELDED_S:
                pacer.forced_at = now
                return True
        return False


@dataclass(slots=True)
class _Progress:
    """How far a sample with a timeout got: its meter, and its usage when checks began."""

    meter: SampleMeter
    before_checks: Usage | None = None


class SampleSource(Protocol):
    """Where the runs of a run's samples come from."""

    def cases(self, cases: list[Case]) -> list[Case]:
        """The cases this source has samples for, with how many each."""
        ...

    def produce(
        self, runner: SampleRunner, index: int, sample_index: int, plan: CasePlan, pacer: Pacer
    ) -> Awaitable[SampleResult]:
        """One finished (unredacted) sample of case `index`, through `runner`."""
        ...


def response_cache(cache: bool | CacheMode | ResponseCache) -> ResponseCache | None:
    """The run's response cache for a `RunSettings.cache` value (None: no cache)."""
    if isinstance(cache, ResponseCache):
        return cache
    if cache is True:
        return ResponseCache("on")
    if cache is False or cache == "off":
        return None
    return ResponseCache(cache)


class SampleRunner:
    """Runs single samples of `cases` from `source`.

    Args:
        cases: the run's cases, by index (as the source planned them).
        source: where the samples' runs come from.
        settings: the run's settings (`price`, `provider`, `cache`, `runtime` are read).
        emit: receives the samples' `SampleStateChanged` events.
    """

    def __init__(
        self,
        cases: list[Case],
        source: SampleSource,
        settings: RunSettings | None = None,
        *,
        emit: EventHandler | None = None,
    ) -> None:
        settings = settings or RunSettings()
        self.cases = cases
        self.source = source
        self.price = settings.price
        self.context = RunContext(
            settings.provider,
            response_cache(settings.cache),
            settings.runtime or Runtime(),
        )
        """What the run's providers share (options, cache, rate limiters, clients)."""
        self.emit = emit
        self._plans: list[CasePlan | None] = [None] * len(cases)
        self._secrets = secret_values()
        self.redacts = bool(self._secrets)
        """Whether `redacted()` changes anything (secrets are set in the environment)."""

    def plan_of(self, index: int) -> CasePlan:
        plan = self._plans[index]
        if plan is None:  # planned when first needed: a big suite starts at once
            plan = self._plans[index] = CasePlan.of(self.cases[index])
        return plan

    def redacted(self, sample: SampleResult) -> SampleResult:
        """`sample` with every secret from the environment replaced by `***`."""
        if not self._secrets:
            return sample
        return map_values(sample, lambda value: redact_value(value, self._secrets))

    async def sample(self, index: int, sample_index: int) -> SampleResult:
        """Run one redacted sample of case `index` without recording it (an executor's worker)."""
        return self.redacted(await self.run(index, sample_index, Pacer()))

    def run(self, index: int, sample_index: int, pacer: Pacer) -> Awaitable[SampleResult]:
        """Run one sample of case `index`, unredacted; a plain function (bench/README.md)."""
        plan = self._plans[index] or self.plan_of(index)
        return self.source.produce(self, index, sample_index, plan, pacer)

    async def recheck(
        self, stored: SampleResult, index: int, sample_index: int, plan: CasePlan
    ) -> SampleResult:
        """Check a saved sample's run again, without the agent."""
        if stored.run is None or stored.status in ("error", "timeout", "cancelled"):
            return replace(stored, index=sample_index)
        sample = replace(
            stored, index=sample_index, checks=[], judge_usage=Usage(), fault=None, excluded=False
        )
        # Judges of a recheck are metered like a run's: cached, priced, within max_cost.
        meter = SampleMeter()
        token = CURRENT_SAMPLE.set(
            SampleContext(self.context, plan.case.label, sample_index, meter)
        )
        try:
            await self._judge(index, plan, sample, stored.run)
            if plan.case.user is not None:  # new checks may change whose fault it is
                await self._attribute(sample, plan.case, None)
        finally:
            CURRENT_SAMPLE.reset(token)
        if meter.requests:
            sample.cached = meter.all_cached
        if self.price is not None or stored.cost is None:  # else the run's price stands
            self._price(sample, meter)
        return sample

    async def run_agent(
        self, call: AgentCall, index: int, sample_index: int, plan: CasePlan, pacer: Pacer
    ) -> SampleResult:
        """Call the agent for one sample, then its checks, within the case's timeout."""
        case = plan.case
        emit = self.emit
        if emit is not None:
            emit(SampleStateChanged(index, sample_index, "running"))
            pacer.current = (index, sample_index)  # whom a provider's retry is about
        sample = SampleResult(case.label, sample_index, "passed")
        meter = SampleMeter()
        current = SampleContext(self.context, sample.case_name, sample_index, meter, pacer.on_retry)
        token = CURRENT_SAMPLE.set(current)
        environment: Environment | None = None
        try:
            if case.state is not None:
                try:
                    environment = Environment.fresh(case.state, case=case.label)
                except StateError as exc:
                    sample.status, sample.error = "error", str(exc)
                    return sample
                current.state = environment.live
            if case.timeout is None:
                await self._attempt(call, index, plan, sample, pacer, environment=environment)
            else:
                progress = _Progress(meter)
                with anyio.move_on_after(case.timeout) as deadline:
                    await self._attempt(
                        call, index, plan, sample, pacer, progress, environment=environment
                    )
                if deadline.cancelled_caught:
                    stage = "its checks ran" if sample.run is not None else "the agent ran"
                    sample.status = "timeout"
                    sample.error = (
                        f"sample exceeded its timeout of {case.timeout:g}s while {stage}"
                        " and was cancelled"
                    )
                    sample.checks = []
                    self._settle_cut_off(sample, progress)
                    if case.user is not None:
                        sample.fault = await attribute_fault(
                            sample.run, [], case.user, status="timeout"
                        )
        finally:
            pacer.current = None
            CURRENT_SAMPLE.reset(token)
            if environment is not None:
                environment.close()
        sample.cached = meter.all_cached
        self._price(sample, meter)
        return sample

    async def _attempt(
        self,
        call: AgentCall,
        index: int,
        plan: CasePlan,
        sample: SampleResult,
        pacer: Pacer,
        progress: _Progress | None = None,
        *,
        environment: Environment | None = None,
    ) -> None:
        """Run the agent, then the checks, recording everything on `sample` (and `progress`)."""
        case = plan.case
        run: RunResult | None = None
        failure: BaseException | None = None
        spec = plan.spec
        if environment is not None:
            deps = spec.deps if spec.deps is not None else environment.live
            spec = replace(spec, state=environment.live, deps=deps)
        start = time.perf_counter()
        try:
            if case.user is None:
                run = await call(spec)
                if environment is not None:
                    run.state = environment.snapshot()
            else:
                run = await converse(call, spec, case.user, environment)
        except BaseException as exc:
            if cancelled_from_outside(exc):
                sample.latency_ms = (time.perf_counter() - start) * 1000
                raise
            failure = exc
            sample.status = "error"
            sample.error = redact(error_text(exc))
            sample.traceback = redact(traceback.format_exc())
            partial = getattr(exc, "partial", None)
            run = partial if isinstance(partial, RunResult) else None
            if run is not None and environment is not None and run.state is None:
                run.state = environment.snapshot()
        elapsed = time.perf_counter() - start
        if run is not None and not run.usage.known:
            # An agent that reports no usage (a plain function returning text) but called
            # its model through `http_client()`: its requests' usage is what it used.
            current = CURRENT_SAMPLE.get()
            if current is not None and current.meter.requests:
                run.usage = current.meter.usage
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
            if progress is not None:
                progress.before_checks = progress.meter.usage
            await self._judge(index, plan, sample, run)
        else:
            sample.latency_ms = elapsed * 1000
            self._settle_usage(sample)
        if case.user is not None:
            await self._attribute(sample, case, failure)

    async def _attribute(
        self, sample: SampleResult, case: Case, failure: BaseException | None
    ) -> None:
        """Add a conversation's user usage; attribute a failed one's fault (as judge usage)."""
        run = sample.run
        if run is not None and run.conversation is not None:
            conversation = run.conversation
            spent = conversation.user_usage
            if spent.requests or spent.total_tokens:
                sample.usage = sample.usage + spent
        if sample.status in ("passed", "cancelled"):
            return
        assert case.user is not None
        expected = [check for check in case.checks if isinstance(check, state_equals)]
        fault = await attribute_fault(
            run, sample.checks, case.user, failure, status=sample.status, expected_states=expected
        )
        if fault.usage is not None:
            sample.judge_usage = sample.judge_usage + fault.usage
            sample.usage = sample.usage + fault.usage
        sample.fault = fault

    def _settle_usage(self, sample: SampleResult) -> None:
        """Usage of a sample whose checks did not (all) run."""
        sample.usage = sample.run.usage if sample.run is not None else Usage()
        sample.judge_usage = Usage()

    def _settle_cut_off(self, sample: SampleResult, progress: _Progress) -> None:
        """Usage of a sample its timeout cancelled: what its responses used (the API billed
        it, so `max_cost` must count it): the meter's, if cut off in the agent; else the
        run's plus the judges' since the checks began."""
        spent = progress.meter.usage
        if sample.run is None:
            sample.usage, sample.judge_usage = spent, Usage()
        else:
            before = progress.before_checks or spent
            judge = Usage(
                spent.input_tokens - before.input_tokens,
                spent.output_tokens - before.output_tokens,
                spent.requests - before.requests,
            )
            sample.usage, sample.judge_usage = sample.run.usage + judge, judge

    async def _judge(
        self, index: int, plan: CasePlan, sample: SampleResult, run: RunResult
    ) -> None:
        """Run the case's checks on a finished run; settle the sample's status and usage."""
        if plan.async_checks and self.emit is not None:
            self.emit(SampleStateChanged(index, sample.index, "judging"))
        context = plan.check_context(sample.index) if plan.takes_context else None
        checks = sample.checks = await plan.run_checks(run, context)
        sample.usage = run.usage
        for check in checks:
            if check.usage is not None:
                sample.judge_usage = sample.judge_usage + check.usage
        if sample.judge_usage.requests or sample.judge_usage.total_tokens:
            sample.usage = run.usage + sample.judge_usage
        sample.status = "passed" if all(check.passed for check in checks) else "failed"

    def _price(self, sample: SampleResult, meter: SampleMeter) -> None:
        """Price a finished sample once: by the run's `price=`, else by the built-in table."""
        price = self.price
        if price is None:
            if meter.priced:
                sample.cost = known_cost(meter.cost)
            return
        sample.cost = known_cost(price(sample.usage))
        conversation = sample.run.conversation if sample.run is not None else None
        if conversation is not None:  # the run's prices, not the built-in ones
            spent = conversation.user_usage
            conversation.user_cost = known_cost(price(spent)) if spent.requests else None
            for turn in conversation.turns:
                turn.cost = known_cost(price(turn.usage))


def error_text(exc: BaseException) -> str:
    """A sample's error line: the exception, and the tui-eval error an SDK wrapped in it
    ("APIConnectionError: Connection error."), which says what is really wrong."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, TuiEvalError):
        return text
    seen: set[int] = {id(exc)}
    cause = _cause(exc)
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, TuiEvalError):
            return f"{text} (caused by {type(cause).__name__}: {cause})"
        cause = _cause(cause)
    return text


def _cause(exc: BaseException) -> BaseException | None:
    """What `exc` was raised from, as its traceback shows it (respecting `from None`)."""
    if exc.__cause__ is not None or exc.__suppress_context__:
        return exc.__cause__
    return exc.__context__

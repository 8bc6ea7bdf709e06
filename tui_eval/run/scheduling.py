"""How a run's samples are spread over workers in this process, and how the workers give
the event loop its turns.

Three strategies, chosen by `RunSettings`: a pool of `concurrency` workers over the cases
(the default: a case's samples one after another), one case at a time stopping after the
first failing case (`fail_fast`), and a pool over every missing sample
(`parallel_samples`). A run elsewhere (`RunSettings.executor`) schedules its own. Each
sample is run by the run's `SampleRunner`; the run (`tui_eval.run.evaluation.Evaluation`) records it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

import anyio
import anyio.abc
import anyio.lowlevel

from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.core.settings import RunSettings
from tui_eval.run.events import EventHandler, SampleStateChanged
from tui_eval.run.sample_runner import Pacer, SampleRunner

YIELD_EVERY_S = 0.01
QUICK_SAMPLE_S = 0.001
MAX_UNYIELDED_S = 0.1


class Scheduled(Protocol):
    """What a strategy needs of the run it schedules (`tui_eval.run.evaluation.Evaluation`)."""

    settings: RunSettings
    samples: SampleRunner
    pacing: Pacing
    gated: bool
    """Whether the run can refuse a sample or stop on its own (a budget or a time budget is
    set); when False, `may_start` and `stopped` are not consulted."""

    @property
    def results(self) -> Sequence[CaseResult]:
        """Each case's result so far, by case index."""
        ...

    @property
    def stopped(self) -> bool:
        """Whether the run stopped on its own (budget or time budget spent)."""
        ...

    async def may_start(self, index: int, sample_index: int) -> bool:
        """Whether a sample may start (it reserves its budget)."""
        ...

    def record(self, index: int, sample: SampleResult) -> None:
        """Keep a finished sample and announce it."""
        ...

    def case_finished(self, index: int) -> None:
        """Announce a case whose samples all ran."""
        ...

    def missing_units(self) -> list[tuple[int, int]]:
        """Every (case, sample) still to run."""
        ...

    def record_unit(self, index: int, sample: SampleResult) -> None:
        """Record a sample of a unit, announcing its case after its last one."""
        ...


class Pacing:
    """The run's time slices: workers give the event loop a turn every few milliseconds,
    even if the agent never blocks, so the app's keys and Ctrl+C (cancellation) get in."""

    def __init__(self, emit: EventHandler | None) -> None:
        self.emit = emit
        self._slice = 0
        self._slice_ends = 0.0

    def new_pacer(self) -> Pacer:
        """A worker's pacer; with a listener, its samples' provider retries are reported
        (while their agents run)."""
        pacer = Pacer()
        emit = self.emit
        if emit is not None:

            def on_retry(attempt: int, delay: float) -> None:
                if pacer.current is not None:
                    emit(SampleStateChanged(*pacer.current, "retrying"))

            pacer.on_retry = on_retry
        return pacer

    def turn_due(self, pacer: Pacer, sample_started: float) -> bool:
        """Whether the worker of `pacer` gives the event loop a turn now (the caller then
        awaits a checkpoint), so that it gets one every few milliseconds even if the agent
        never blocks.

        A plain function, called after every sample: most of the time the answer is no,
        and a coroutine per sample just to say so is measurable on a zero-latency run.
        When a time slice ends, every worker whose last sample was quick (it never waited
        on anything) yields once, so the loop really turns instead of passing from worker
        to worker. A worker whose samples wait on I/O already gives the loop its turns;
        forcing a yield on it would only delay its next request, so it is forced at most
        every `MAX_UNYIELDED_S`.
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


async def run_case(run: Scheduled, index: int, pacer: Pacer) -> None:
    """Run the missing samples of case `index`, one after another."""
    result = run.results[index]
    samples, record, turn_due, gated = run.samples, run.record, run.pacing.turn_due, run.gated
    for sample_index in range(len(result.samples), samples.plan_of(index).case.samples):
        if gated and not await run.may_start(index, sample_index):
            return
        started = time.perf_counter()
        record(index, await samples.run(index, sample_index, pacer))
        if turn_due(pacer, started):
            await anyio.lowlevel.checkpoint()
    run.case_finished(index)


async def until_first_failure(run: Scheduled) -> None:
    """One case at a time; stop after the first failing case."""

    async def serial() -> None:  # its own task, so its context stays its own
        pacer = run.pacing.new_pacer()
        for index in range(len(run.results)):
            await run_case(run, index, pacer)
            if not run.results[index].passed or run.stopped:
                break

    async with anyio.create_task_group() as group:
        group.start_soon(serial)


async def case_pool(run: Scheduled) -> None:
    """`concurrency` workers take the cases in order; a case's samples run one after another."""
    pending = iter(range(len(run.results)))

    async def worker() -> None:
        pacer = run.pacing.new_pacer()
        for index in pending:
            await run_case(run, index, pacer)
            if run.gated and run.stopped:
                return

    async with anyio.create_task_group() as group:
        await start_staggered(group, worker, min(run.settings.concurrency, len(run.results)))


async def sample_pool(run: Scheduled) -> None:
    """Every missing sample of every case as its own unit of work (samples of one case
    run concurrently: only for agents built fresh for each sample)."""
    units = run.missing_units()
    pending = iter(units)

    async def worker() -> None:
        pacer = run.pacing.new_pacer()
        for index, sample_index in pending:
            if run.gated and not await run.may_start(index, sample_index):
                return
            started = time.perf_counter()
            run.record_unit(index, await run.samples.run(index, sample_index, pacer))
            if run.pacing.turn_due(pacer, started):
                await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        await start_staggered(group, worker, min(run.settings.concurrency, len(units)))


async def start_staggered(
    group: anyio.abc.TaskGroup, worker: Callable[[], Coroutine[Any, Any, None]], count: int
) -> None:
    """Start `count` workers, letting the loop turn after each: every worker's first step
    (building its agent, its first request) would otherwise run in one turn of the loop,
    and 200 of them kept the app's keys and timers waiting ~0.1 s at a run's start."""
    for _ in range(count):
        group.start_soon(worker)
        await anyio.lowlevel.checkpoint()

"""`evaluate()`, `evaluate_iter()` and `recheck()`: run cases against an agent and stream
typed events; `Evaluation` is the handle behind them (cancel, partial report).

By default concurrency is across cases (a pool of `concurrency` workers), the samples of
one case run one after another, and the checks of one sample run concurrently;
`RunSettings` changes how (samples of a case in parallel, a budget, an executor
elsewhere). Everything the app and the CLI show is built from the events emitted here.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio

from tui_eval.agents.http.options import ProviderOptions
from tui_eval.core.cases import Case
from tui_eval.core.settings import CacheSetting, Executor, MaxCost, Price, RunSettings, resolve
from tui_eval.report.report import Report
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.events import (
    CaseFinished,
    Event,
    EventHandler,
    RunFinished,
    RunStarted,
    SampleFinished,
    SampleStateChanged,
)
from tui_eval.run.sample_sources import SavedRuns, recheck_metadata


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
    max_cost: MaxCost | None = None,
    cache: CacheSetting | None = None,
    executor: Executor | None = None,
    count_user_faults: bool | None = None,
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
            left (see `tui_eval.core.budget` for the bound); a `CostBudget` may be shared.
        cache: `True`/`"on"` or `"read-only"`: replay stored model responses.
        executor: where samples run (None: this process); `RayExecutor(suite_file, name)`
            runs them on Ray, for cases loaded from that suite file.
        count_user_faults: count the conversations the user simulator failed in pass
            rates and verdicts; by default they are left out, and the report says how many.
    """
    evaluation = Evaluation(
        agent,
        cases,
        settings=resolve(
            settings,
            concurrency=concurrency,
            fail_fast=fail_fast,
            price=price,
            provider=provider,
            max_cost=max_cost,
            cache=cache,
            executor=executor,
            count_user_faults=count_user_faults,
        ),
        name=name,
        on_event=on_event,
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
    cache: CacheSetting | None = None,
    count_user_faults: bool | None = None,
) -> Report:
    """Run the current checks of `cases` on the saved outputs of `report`, without the agent.

    A new rubric, a new judge or a fixed check costs no agent calls (a judge's calls follow
    `settings`: its provider options, cache and price). Samples that errored or timed out
    stay as they were; cases not in `report` are skipped.
    """
    evaluation = Evaluation(
        None,
        cases,
        settings=resolve(
            settings,
            concurrency=concurrency,
            price=price,
            provider=provider,
            cache=cache,
            count_user_faults=count_user_faults,
        ),
        name=report.name,
        on_event=on_event,
        source=SavedRuns.of(report),
        metadata=recheck_metadata(report),
    )
    return await evaluation.run()


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
    max_cost: MaxCost | None = None,
    cache: CacheSetting | None = None,
    executor: Executor | None = None,
    count_user_faults: bool | None = None,
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
        settings=resolve(
            settings,
            concurrency=concurrency,
            fail_fast=fail_fast,
            price=price,
            provider=provider,
            max_cost=max_cost,
            cache=cache,
            executor=executor,
            count_user_faults=count_user_faults,
        ),
        name=name,
        on_event=forward,
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

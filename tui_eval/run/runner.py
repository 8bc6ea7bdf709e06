"""`evaluate()`, `evaluate_iter()` and `recheck()`: run cases against an agent."""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Iterable
from typing import Any, Unpack

import anyio

from tui_eval.core.cases import Case
from tui_eval.core.settings import RunSettings, SettingKeywords, resolve
from tui_eval.report.report import Report
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.events import (
    Event,
    EventHandler,
)
from tui_eval.run.sample_sources import SavedRuns, recheck_metadata


async def evaluate(
    agent: Any,
    cases: Iterable[Case],
    *,
    settings: RunSettings | None = None,
    name: str | None = None,
    on_event: EventHandler | None = None,
    **given: Unpack[SettingKeywords],
) -> Report:
    """Run every case against the agent and return the `Report`.

    Example:
        >>> report = await evaluate(agent, [Case("2 + 3?", checks=[contains("5")])])  # doctest: +SKIP
        >>> print(report)  # doctest: +SKIP
        eval: 1/1 cases passed (100%) · 1 samples · 36 tokens · 0.0s

    Args:
        agent: an `Agent`, a zero-arg factory (called per sample), an async callable
            `f(input)`, or an object with an async `run(input)`.
        name: the report's name.
        on_event: called with every `Event`.
        **given: any `RunSettings` field by name, over `settings` (`concurrency=8`...).
    """
    evaluation = Evaluation(
        agent, cases, settings=resolve(settings, **given), name=name, on_event=on_event
    )
    return await evaluation.run()


async def recheck(
    report: Report,
    cases: Iterable[Case],
    *,
    settings: RunSettings | None = None,
    on_event: EventHandler | None = None,
    **given: Unpack[SettingKeywords],
) -> Report:
    """Run the current checks of `cases` on the saved outputs of `report`, without the agent.

    A new rubric, judge or fixed check costs no agent calls (judges follow `settings`).
    Samples that errored or timed out stay as they were; cases not in `report` are skipped.
    """
    evaluation = Evaluation(
        None,
        cases,
        settings=resolve(settings, **given),
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
    name: str | None = None,
    **given: Unpack[SettingKeywords],
) -> AsyncIterator[Event]:
    """The events of `evaluate()` as an async generator; the last one is `RunFinished`.

    Leaving the loop early cancels the run.
    """
    send, receive = anyio.create_memory_object_stream[Event](math.inf)

    def forward(event: Event) -> None:
        # A consumer that left the loop closed the stream; the run is being cancelled.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(event)

    evaluation = Evaluation(
        agent, cases, settings=resolve(settings, **given), name=name, on_event=forward
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

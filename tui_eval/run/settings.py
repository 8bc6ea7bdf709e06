"""`RunSettings`: how a run runs, one object for `evaluate`, `recheck`, `decide` and friends.

Before it, each entry point took its own list of keyword arguments, and the lists drifted:
`decide()` had no cache, `recheck()` no provider options. Now each takes `settings=` (and
keeps its old keywords, which override the settings' fields when given).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tui_eval.agents.messages import Price
from tui_eval.agents.providers.cache import CacheMode, ResponseCache
from tui_eval.agents.providers.settings import ProviderOptions
from tui_eval.run.budget import CostBudget


class Executor(Protocol):
    """Where an evaluation's samples run, when not in this process.

    `execute` runs every (case index, sample index) unit somewhere and hands each finished
    sample to `evaluation.accept(index, sample)` (`evaluation` is the run's
    `tui_eval.run.runner.Evaluation`), on the driver's event loop, as it arrives: the driver
    stays the one place that records, journals and emits events.
    """

    async def execute(self, evaluation: Any, units: Sequence[tuple[int, int]]) -> None: ...


class ExecutorError(RuntimeError):
    """An executor could not start (Ray missing, no suite file, an unreachable cluster)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """How a run runs, whichever entry point starts it.

    Example:
        >>> settings = RunSettings(concurrency=16, max_cost=2.0, cache="on")
        >>> report = await evaluate(agent, cases, settings=settings)  # doctest: +SKIP
        >>> diff = await decide(agent, cases, baseline, settings=settings)  # doctest: +SKIP

    Attributes:
        concurrency: how many cases run at once.
        samples: every case's sample count (None: each case's own).
        fail_fast: run cases one at a time and stop after the first failing case.
        price: turns a sample's `Usage` into dollars; without it, responses of known models
            are priced by the built-in table.
        provider: `ProviderOptions` every HTTP provider of the run applies over its own
            (rate limits, timeouts, retry budget, headers, base URL).
        max_cost: dollars (or a `CostBudget` shared between runs): a sample starts only
            while the spend, the estimates of the samples in flight and its own fit in it
            (see `tui_eval.run.budget`); the report then says the run stopped on budget.
        cache: replay stored model responses (`True`/`"on"`, or `"read-only"`), keyed by
            the request and the sample index.
        executor: where samples run; None is this process. `tui_eval.run.ray_executor.RayExecutor`
            runs them on a Ray cluster and streams them back.
        parallel_samples: let the samples of one case run concurrently too (only safe for
            agents built fresh for every sample).
        time_budget: seconds; no new sample starts once the run has taken this long, and
            the report says the run stopped on time.
    """

    concurrency: int = 4
    samples: int | None = None
    fail_fast: bool = False
    price: Price | None = None
    provider: ProviderOptions | None = None
    max_cost: float | CostBudget | None = None
    cache: bool | CacheMode | ResponseCache = False
    executor: Executor | None = None
    parallel_samples: bool = False
    time_budget: float | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.samples is not None and self.samples < 1:
            raise ValueError(f"samples must be at least 1, got {self.samples}")
        CostBudget.of(self.max_cost)  # a clear error for a budget that is not one
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(f"time_budget must be more than 0 seconds, got {self.time_budget}")
        if self.executor is not None and self.fail_fast:
            raise ValueError("fail_fast runs cases one by one; it needs the in-process executor")

    def but(self, **changes: Any) -> RunSettings:
        """These settings with the `changes` that are not None (an entry point's keyword
        arguments over its `settings=`)."""
        given = {name: value for name, value in changes.items() if value is not None}
        return dataclasses.replace(self, **given) if given else self


def resolve(settings: RunSettings | None, **keywords: Any) -> RunSettings:
    """`settings` (default: `RunSettings()`) with the keyword arguments that were given."""
    return (settings or RunSettings()).but(**keywords)


__all__ = ["Executor", "ExecutorError", "Price", "RunSettings"]

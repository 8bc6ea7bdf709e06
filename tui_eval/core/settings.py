"""`RunSettings`: how a run runs, each setting with its one default and validator.

Entry points, suites, the CLI and the app all build one; layers combine with `over()`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Protocol, TypedDict

import pydantic

from tui_eval.agents.http.cache import CACHE_MODES, CacheMode, ResponseCache
from tui_eval.agents.http.context import Runtime
from tui_eval.agents.http.options import ProviderOptions
from tui_eval.agents.messages import Price
from tui_eval.core.budget import CostBudget
from tui_eval.util.errors import TuiEvalError


class Executor(Protocol):
    """Where an evaluation's samples run, when not in this process.

    `execute` runs every (case index, sample index) unit and hands each finished sample to
    `evaluation.accept(index, sample)` on the driver's event loop, so the driver stays the
    one place that records, journals and emits events.
    """

    async def execute(self, evaluation: Any, units: Sequence[tuple[int, int]]) -> None: ...


class ExecutorError(TuiEvalError, RuntimeError):
    """An executor could not start (Ray missing, no suite file, an unreachable cluster)."""


class RaySpec(pydantic.BaseModel):
    """Run a suite's samples on a Ray cluster (`--executor ray`), as a value a journal keeps.

    Attributes:
        address: the cluster to join (default: `RAY_ADDRESS`, else a local one).
        workers: Ray worker actors (default: the cluster's CPUs).
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    address: str | None = None
    workers: Annotated[int, pydantic.Field(ge=1, strict=True)] | None = None


# Each setting's type and constraint, defined once: `RunSettings` uses them with its
# defaults, and a suite file's model (`tui_eval.suites.declarative`) with None ("not given").
Count = Annotated[int, pydantic.Field(ge=1, strict=True)]
"""A count of at least 1 (`concurrency`, `samples`, `max_samples`)."""

Dollars = Annotated[float, pydantic.Field(gt=0, allow_inf_nan=False, strict=True)]
"""A finite number of dollars > 0 (`max_cost`; a shared `CostBudget` may hold 0)."""

Seconds = Annotated[float, pydantic.Field(gt=0, allow_inf_nan=False)]
"""A finite number of seconds > 0 (`time_budget`)."""

MaxCost = float | CostBudget
"""Dollars, or a `CostBudget` shared between runs."""

CacheSetting = bool | CacheMode | ResponseCache
"""`True`/`"on"`, `"read-only"`, `False`/`"off"`, or a `ResponseCache` of one's own."""

# The settings the journal keeps (a resumed run runs as the first one did): the others are
# Python objects (a price function, a shared budget, an executor, a runtime) that a
# front-end rebuilds from what it was asked.
JOURNALED = (
    "concurrency",
    "samples",
    "fail_fast",
    "provider",
    "max_cost",
    "cache",
    "parallel_samples",
    "time_budget",
    "max_samples",
    "count_user_faults",
    "executor",
)


class RunSettings(pydantic.BaseModel):
    """How a run runs, whichever entry point starts it.

    Example:
        >>> settings = RunSettings(concurrency=16, max_cost=2.0, cache="on")
        >>> report = await evaluate(agent, cases, settings=settings)  # doctest: +SKIP

    Only the fields given are *set* (`given()`), so `over()` layers a suite's settings
    and the command line's without a second default.

    Attributes:
        concurrency: how many cases run at once.
        samples: every case's sample count (None: each case's own).
        fail_fast: run cases one at a time and stop after the first failing case.
        price: turns a sample's `Usage` into dollars (default: the built-in price table).
        provider: `ProviderOptions` every HTTP provider of the run applies over its own.
        max_cost: dollars (or a shared `CostBudget`): a sample starts only while the spend,
            the samples in flight and its own estimate fit (`tui_eval.core.budget`).
        cache: replay stored model responses (`True`/`"on"`, or `"read-only"`).
        executor: where samples run (None: this process): an `Executor`, or a `RaySpec`.
        parallel_samples: let one case's samples run concurrently too (only safe for
            agents built fresh for every sample).
        time_budget: seconds after which no new sample starts.
        max_samples: `decide()`/`compare_agents()`: the most samples per case and side.
        runtime: the `Runtime` whose rate limiters and prices the run uses; runs sharing
            one pace themselves as one against an API (None: the run's own).
        count_user_faults: count samples whose failure was the user simulator's in pass
            rates, `decide()` and the exit code; by default they are left out.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    concurrency: Count = 4
    samples: Count | None = None
    fail_fast: bool = False
    price: pydantic.SkipValidation[Price | None] = None
    provider: ProviderOptions | None = None
    max_cost: Dollars | CostBudget | None = None
    cache: CacheSetting = "off"
    executor: pydantic.SkipValidation[Executor | RaySpec | None] = None
    parallel_samples: bool = False
    time_budget: Seconds | None = None
    max_samples: Count = 100
    runtime: pydantic.SkipValidation[Runtime | None] = None
    count_user_faults: bool = False

    @pydantic.field_validator("cache", mode="before")
    @classmethod
    def _cache_mode(cls, value: Any) -> Any:
        if isinstance(value, bool | ResponseCache) or value in CACHE_MODES:
            return value
        modes = ", ".join(CACHE_MODES)
        raise ValueError(f"cache must be one of {modes} (or true/false), got {value!r}")

    @pydantic.field_validator("executor", mode="before")
    @classmethod
    def _executor_spec(cls, value: Any) -> Any:
        return RaySpec.model_validate(value) if isinstance(value, dict) else value

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> RunSettings:
        if self.executor is not None and self.fail_fast:
            raise ValueError("fail_fast runs cases one by one; it needs the in-process executor")
        return self

    def given(self) -> dict[str, Any]:
        """The settings that were set, by name (the rest are defaults)."""
        return {name: getattr(self, name) for name in self.model_fields_set}

    def over(self, *layers: RunSettings | None) -> RunSettings:
        """These settings with each of `layers`' given settings over them, in order."""
        merged = self.given()
        for layer in layers:
            if layer is None:
                continue
            given = layer.given()
            below, above = merged.get("provider"), given.get("provider")
            if isinstance(below, ProviderOptions) and isinstance(above, ProviderOptions):
                given["provider"] = below.over(above)  # provider options layer field by field
            merged.update(given)
        return RunSettings(**merged)

    def but(self, **changes: Any) -> RunSettings:
        """These settings with the `changes` that are not None."""
        given = {name: value for name, value in changes.items() if value is not None}
        return self.replace(**given) if given else self

    def replace(self, **changes: Any) -> RunSettings:
        """These settings with `changes` set as they are (None included)."""
        return RunSettings(**{**self.given(), **changes})

    def journaled(self) -> dict[str, Any]:
        """The given settings a journal keeps, as JSON values."""
        kept: dict[str, Any] = {}
        for name in JOURNALED:
            if name not in self.model_fields_set:
                continue
            value = getattr(self, name)
            if isinstance(value, CostBudget):
                value = value.max_cost
            elif isinstance(value, ResponseCache):
                value = value.mode
            elif isinstance(value, ProviderOptions | RaySpec):
                value = value.model_dump(mode="json", exclude_unset=True)
            elif name == "executor":
                continue  # an object of one's own: its owner gives it again
            kept[name] = value
        return kept


class SettingKeywords(TypedDict, total=False):
    """`RunSettings`' fields as the entry points' keyword arguments, set over `settings=`;
    None is "not given". A test keeps them in step with the fields."""

    concurrency: int | None
    samples: int | None
    fail_fast: bool | None
    price: Price | None
    provider: ProviderOptions | None
    max_cost: float | CostBudget | None
    cache: CacheSetting | None
    executor: Executor | None
    parallel_samples: bool | None
    time_budget: float | None
    max_samples: int | None
    runtime: Runtime | None
    count_user_faults: bool | None


_PHRASES = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "extra_forbidden": "is not a run setting",
}


def settings_problem(exc: ValueError) -> str:
    """A `RunSettings` validation error in plain words, one problem per setting."""
    if not isinstance(exc, pydantic.ValidationError):
        return str(exc)
    problems: dict[str, str] = {}
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else "settings"
        phrase = _PHRASES.get(error["type"])
        if phrase is None:
            words = error["msg"].removeprefix("Value error, ")
            problem = words[0].lower() + words[1:] if words else error["type"]
        else:
            got = "" if error["type"] == "extra_forbidden" else f", got {error['input']!r}"
            problem = f"{name} {phrase.format(**error.get('ctx', {}))}{got}"
        problems.setdefault(name, problem)  # a union's second reading adds nothing
    return "; ".join(problems.values())


def resolve(settings: RunSettings | None, **keywords: Any) -> RunSettings:
    """`settings` (default: `RunSettings()`) with the keyword arguments that were given."""
    return (settings or RunSettings()).but(**keywords)


__all__ = [
    "JOURNALED",
    "CacheSetting",
    "Count",
    "Dollars",
    "Executor",
    "ExecutorError",
    "MaxCost",
    "RaySpec",
    "RunSettings",
    "Seconds",
    "SettingKeywords",
    "settings_problem",
]

"""Combinators: several checks judged as one, each handing its `CheckContext` on to them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated

import anyio
import pydantic

from tui_eval.agents.messages import RunResult, Usage
from tui_eval.checks.base import (
    Check,
    CheckContext,
    CheckResult,
    Declared,
    check_name,
    run_check,
)


async def _run_all(
    checks: list[Check], run: RunResult, context: CheckContext | None
) -> list[CheckResult]:
    results: list[CheckResult | None] = [None] * len(checks)

    async def one(index: int, check: Check) -> None:
        results[index] = await run_check(check, run, context)

    async with anyio.create_task_group() as group:
        for index, check in enumerate(checks):
            group.start_soon(one, index, check)
    return [r for r in results if r is not None]


def spent_usage(results: Sequence[CheckResult]) -> Usage | None:
    """What the checks spent together (None when none of them spent anything)."""
    spent = [r.usage for r in results if r.usage is not None]
    return sum(spent, Usage()) if spent else None


def _score(result: CheckResult) -> float:
    """A sub-check's score (a pass/fail check scores 1 or 0)."""
    return result.score if result.score is not None else float(result.passed)


class all_of:
    """Passes when every sub-check passes; the reason is the first failure's."""

    is_async = True
    takes_context = True

    def __init__(self, *checks: Check, name: str = "all_of") -> None:
        self.checks = list(checks)
        self.name = name

    async def __call__(self, run: RunResult, context: CheckContext | None = None) -> CheckResult:
        results = await _run_all(self.checks, run, context)
        failed = [r for r in results if not r.passed]
        reason = f"{failed[0].name}: {failed[0].reason}" if failed else ""
        score = min(map(_score, results), default=1.0)
        return CheckResult(self.name, not failed, score, reason, spent_usage(results))


class any_of(all_of):
    """Passes when at least one sub-check passes; a failure lists every reason."""

    def __init__(self, *checks: Check, name: str = "any_of") -> None:
        super().__init__(*checks, name=name)

    async def __call__(self, run: RunResult, context: CheckContext | None = None) -> CheckResult:
        results = await _run_all(self.checks, run, context)
        passed = any(r.passed for r in results)
        reasons = "; ".join(f"{r.name}: {r.reason}" for r in results)
        score = max(map(_score, results), default=0.0)
        reason = "" if passed else f"none passed: {reasons}"
        return CheckResult(self.name, passed, score, reason, spent_usage(results))


class weighted:
    """A weighted mean of sub-check scores (a pass/fail check scores 1 or 0).

    Example:
        >>> weighted({contains("Paris"): 2, max_turns(3): 1}, threshold=0.7)  # doctest: +SKIP
    """

    is_async = True
    takes_context = True

    def __init__(
        self,
        weights: Annotated[
            Mapping[Check, float] | Iterable[tuple[Check, float]],
            Declared("list[WeightedItem]", key="checks"),
        ],
        threshold: Annotated[float, pydantic.Field(ge=0, le=1)] = 0.7,
        *,
        name: str = "weighted",
    ) -> None:
        pairs = list(weights.items()) if isinstance(weights, Mapping) else list(weights)
        if not pairs:
            raise ValueError("weighted() needs at least one check")
        if any(w < 0 for _, w in pairs) or sum(w for _, w in pairs) <= 0:
            raise ValueError("weighted() needs non-negative weights with a positive sum")
        self.checks = [c for c, _ in pairs]
        self.weights = [float(w) for _, w in pairs]
        self.threshold = threshold
        self.name = name

    async def __call__(self, run: RunResult, context: CheckContext | None = None) -> CheckResult:
        results = await _run_all(self.checks, run, context)
        total = sum(self.weights)
        score = sum(w * _score(r) for r, w in zip(results, self.weights, strict=True)) / total
        passed = score >= self.threshold
        parts = ", ".join(
            f"{check_name(c)} {_score(r):.2f}×{w:g}"
            for c, r, w in zip(self.checks, results, self.weights, strict=True)
        )
        reason = (
            "" if passed else f"weighted score {score:.2f} below {self.threshold:.2f} ({parts})"
        )
        return CheckResult(self.name, passed, score, reason, spent_usage(results))

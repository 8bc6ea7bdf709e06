"""Checks against the case's own `expected` value (read from the `CheckContext`, so one
check object in a suite's `checks` serves every case), and the model's stop reason."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pydantic

from tui_eval.agents.messages import UNKNOWN_STOP_REASON, RunResult
from tui_eval.checks.base import CheckContext, CheckResult, fail, ok
from tui_eval.checks.matchers import subset_mismatch
from tui_eval.util.text import one_line

_NO_EXPECTED = "the case has no expected value: set Case(expected=...) (YAML `expected:`)"


def _structured(value: Any) -> Any:
    """A pydantic model or dataclass output as plain data, to compare with YAML values."""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


@dataclass(eq=False, slots=True)
class equals_expected:
    """The output equals the case's `expected` value.

    A structured output (a pydantic model, a dataclass, or JSON text when the expected
    value is not a string) is compared as plain data."""

    name: str = "equals_expected"
    takes_context: ClassVar[bool] = True

    def __call__(self, run: RunResult, context: CheckContext | None = None) -> CheckResult:
        if context is None or context.expected is None:
            return fail(self.name, _NO_EXPECTED)
        expected, output = context.expected, run.output
        actual = _structured(output)
        if isinstance(actual, str) and not isinstance(expected, str):
            with contextlib.suppress(ValueError):
                actual = json.loads(actual)
        if output == expected or actual == expected:
            return ok(self.name)
        return fail(
            self.name,
            f"expected {one_line(expected, 80)!r} (the case's expected value), "
            f"got {one_line(output, 80)!r}",
        )


@dataclass(eq=False, slots=True)
class matches_expected:
    """Structured output matches the case's `expected` value as a recursive subset (as
    `matches`: extra fields ignored, list lengths exact)."""

    name: str = "matches_expected"
    takes_context: ClassVar[bool] = True

    def __call__(self, run: RunResult, context: CheckContext | None = None) -> CheckResult:
        if context is None or context.expected is None:
            return fail(self.name, _NO_EXPECTED)
        expected, output = context.expected, run.output
        if isinstance(output, str) and not isinstance(expected, str):
            try:
                output = json.loads(output)
            except ValueError:
                return fail(
                    self.name, f"expected structured output, got text {one_line(output, 80)!r}"
                )
        problem = subset_mismatch(expected, output)
        if problem is None:
            return ok(self.name)
        return fail(self.name, f"{problem} (the case's expected value)")


class stop_reason:
    """The model's last response ended for one of `reasons` (`stop`, `length`,
    `content_filter`, `tool_calls`, `refusal`)."""

    __slots__ = ("name", "reasons")

    def __init__(self, *reasons: str | Sequence[str]) -> None:
        flat: list[str] = []
        for reason in reasons:
            flat.extend([reason] if isinstance(reason, str) else list(reason))
        if not flat:
            raise ValueError("stop_reason needs at least one reason, such as 'stop'")
        self.reasons = tuple(flat)
        self.name = "stop_reason"

    def __repr__(self) -> str:
        return f"stop_reason({', '.join(map(repr, self.reasons))})"

    def __call__(self, run: RunResult) -> CheckResult:
        if run.stop_reason in self.reasons:
            return ok(self.name)
        wanted = " or ".join(repr(r) for r in self.reasons)
        if run.stop_reason == UNKNOWN_STOP_REASON:
            got = "an unknown stop reason (the model's server sent finish_reason: null)"
        elif run.stop_reason:
            got = repr(run.stop_reason)
        else:
            got = "no stop reason (the agent gave none)"
        return fail(self.name, f"expected the model to stop with {wanted}, got {got}")

"""Built-in matchers: free, deterministic checks on output, tools, turns, tokens and latency."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic

from tui_eval.agents.messages import RunResult
from tui_eval.checks.base import CheckResult, fail, ok
from tui_eval.util.text import one_line, value_text


@dataclass(eq=False, slots=True)
class contains:
    """The output contains `value` (optionally ignoring case)."""

    value: str
    ignore_case: bool = False
    name: str = "contains"

    def __call__(self, run: RunResult) -> CheckResult:
        text = value_text(run.output)
        found = self.value.casefold() in text.casefold() if self.ignore_case else self.value in text
        if found:
            return ok(self.name)
        return fail(self.name, f"expected {self.value!r} in output, got {one_line(text, 80)!r}")


@dataclass(eq=False, slots=True)
class not_contains:
    """The output does not contain `value`."""

    value: str
    ignore_case: bool = False
    name: str = "not_contains"

    def __call__(self, run: RunResult) -> CheckResult:
        text = value_text(run.output)
        haystack, needle = (
            (text.casefold(), self.value.casefold()) if self.ignore_case else (text, self.value)
        )
        at = haystack.find(needle)
        if at < 0:
            return ok(self.name)
        around = text[max(0, at - 30) : at + len(self.value) + 30]
        return fail(
            self.name, f"expected no {self.value!r} in output, found it in {one_line(around, 80)!r}"
        )


@dataclass(eq=False, slots=True)
class regex:
    """The output matches the regular expression `pattern` (searched anywhere)."""

    pattern: str
    flags: int = 0
    name: str = "regex"
    _compiled: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._compiled = re.compile(self.pattern, self.flags)

    def __call__(self, run: RunResult) -> CheckResult:
        text = value_text(run.output)
        if self._compiled.search(text):
            return ok(self.name)
        return fail(
            self.name, f"expected output to match /{self.pattern}/, got {one_line(text, 80)!r}"
        )


@dataclass(eq=False, slots=True)
class equals:
    """The output equals `value` exactly."""

    value: Any
    name: str = "equals"

    def __call__(self, run: RunResult) -> CheckResult:
        if run.output == self.value:
            return ok(self.name)
        return fail(
            self.name, f"expected {one_line(self.value, 80)!r}, got {one_line(run.output, 80)!r}"
        )


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, pydantic.BaseModel):
        return {name: getattr(value, name) for name in type(value).model_fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return None


def subset_mismatch(spec: Any, actual: Any, path: str = "") -> str | None:
    """Where `actual` fails the recursive subset `spec` (None: it matches): dicts by the
    spec's keys (extra keys ignored), lists item by item at equal length, callables as
    predicates, anything else by equality."""
    here = path or "output"
    if callable(spec) and not isinstance(spec, type):
        try:
            held = spec(actual)
        except Exception as exc:
            return f"at {here}: predicate raised {type(exc).__name__}: {exc}"
        return (
            None
            if held
            else f"at {here}: {one_line(actual, 80)!r} failed predicate {getattr(spec, '__name__', spec)!r}"
        )
    if isinstance(spec, Mapping):
        mapping = _as_mapping(actual)
        if mapping is None:
            return f"at {here}: expected an object, got {one_line(actual, 80)!r}"
        for key, sub in spec.items():
            if key not in mapping:
                return f"at {here}: missing field {key!r}"
            problem = subset_mismatch(sub, mapping[key], f"{path}.{key}" if path else str(key))
            if problem:
                return problem
        return None
    if isinstance(spec, Sequence) and not isinstance(spec, (str, bytes)):
        if not isinstance(actual, Sequence) or isinstance(actual, (str, bytes)):
            return f"at {here}: expected a list, got {one_line(actual, 80)!r}"
        if len(actual) != len(spec):
            return f"at {here}: expected {len(spec)} items, got {len(actual)}"
        for index, (sub, item) in enumerate(zip(spec, actual, strict=True)):
            problem = subset_mismatch(sub, item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if spec != actual:
        return f"at {here}: expected {one_line(spec, 80)!r}, got {one_line(actual, 80)!r}"
    return None


@dataclass(eq=False, slots=True)
class matches:
    """Structured output matches `spec` as a recursive subset.

    Example:
        >>> matches({"city": "Paris", "tags": [str.islower, "capital"]})  # doctest: +SKIP
    """

    spec: Any
    name: str = "matches"

    def __call__(self, run: RunResult) -> CheckResult:
        output = run.output
        if isinstance(output, str) and isinstance(self.spec, (Mapping, list)):
            try:
                output = json.loads(output)
            except ValueError:
                return fail(
                    self.name, f"expected structured output, got text {one_line(output, 80)!r}"
                )
        problem = subset_mismatch(self.spec, output)
        return ok(self.name) if problem is None else fail(self.name, problem)


def _called(run: RunResult) -> str:
    """The first tool calls of `run`, as `add(a=2, b=3), ...`."""
    calls = [
        f"{c.name}({', '.join(f'{k}={one_line(repr(v), 30)}' for k, v in c.arguments.items())})"
        for c in run.tool_calls[:6]
    ]
    return ", ".join(calls) or "no tools"


class tool_called:
    """A tool named `name` was called, optionally with arguments matching a subset."""

    __slots__ = ("args", "name", "tool")

    def __init__(self, name: str, /, **args: Any) -> None:
        self.tool = name
        self.args = args
        self.name = "tool_called"

    def __repr__(self) -> str:
        return f"tool_called({self.tool!r}{''.join(f', {k}={v!r}' for k, v in self.args.items())})"

    def __call__(self, run: RunResult) -> CheckResult:
        candidates = [c for c in run.tool_calls if c.name == self.tool]
        if not candidates:
            return fail(self.name, f"expected a call to {self.tool!r}, called: {_called(run)}")
        if not self.args:
            return ok(self.name)
        problems = [subset_mismatch(self.args, c.arguments, "arguments") for c in candidates]
        if any(p is None for p in problems):
            return ok(self.name)
        return fail(
            self.name, f"{self.tool!r} was called but not with {self.args!r}: {problems[0]}"
        )


@dataclass(eq=False, slots=True)
class tool_not_called:
    """No tool named `tool` was called."""

    tool: str
    name: str = "tool_not_called"

    def __call__(self, run: RunResult) -> CheckResult:
        count = run.tool_names.count(self.tool)
        if count == 0:
            return ok(self.name)
        return fail(self.name, f"expected no call to {self.tool!r}, it was called {count}×")


@dataclass(eq=False, slots=True)
class tool_sequence:
    """The called tool names equal `names` in order (or as a set when `strict_order=False`).

    An empty `names` means no tool may be called."""

    names: Sequence[str]
    strict_order: bool = True
    name: str = "tool_sequence"

    def __call__(self, run: RunResult) -> CheckResult:
        actual = run.tool_names
        expected = list(self.names)
        if actual == expected if self.strict_order else set(actual) == set(expected):
            return ok(self.name)
        how = "in this order" if self.strict_order else "as a set"
        return fail(self.name, f"expected tools {expected} {how}, called {actual}")


@dataclass(eq=False, slots=True)
class max_turns:
    """The run took at most `n` model responses."""

    n: int
    name: str = "max_turns"

    def __call__(self, run: RunResult) -> CheckResult:
        if run.turns <= self.n:
            return ok(self.name)
        return fail(self.name, f"expected at most {self.n} turns, took {run.turns}")


@dataclass(eq=False, slots=True)
class max_tokens:
    """The agent run used at most `n` tokens (input + output; the judge's are not counted).

    An agent that reports no usage fails it (unknown is not zero): return the SDK's response
    or a `RunResult` with its `usage` to have them counted."""

    n: int
    name: str = "max_tokens"

    def __call__(self, run: RunResult) -> CheckResult:
        if not run.usage.known:
            return fail(
                self.name,
                f"token usage is unknown: the agent reported none, so at most {self.n:,} "
                "tokens cannot be checked (return the SDK's response or a RunResult with usage)",
            )
        used = run.usage.total_tokens
        if used <= self.n:
            return ok(self.name)
        return fail(self.name, f"expected at most {self.n:,} tokens, used {used:,}")


@dataclass(eq=False, slots=True)
class max_latency:
    """The agent run took at most `ms` milliseconds."""

    ms: float
    name: str = "max_latency"

    def __call__(self, run: RunResult) -> CheckResult:
        if run.latency_ms <= self.ms:
            return ok(self.name)
        return fail(self.name, f"expected at most {self.ms:,.0f} ms, took {run.latency_ms:,.0f} ms")


@dataclass(eq=False, slots=True)
class no_error:
    """No tool call failed during the run (an agent that raised is already an error sample)."""

    name: str = "no_error"

    def __call__(self, run: RunResult) -> CheckResult:
        failed = [c for c in run.tool_calls if c.error is not None]
        if not failed:
            return ok(self.name)
        first = failed[0]
        return fail(
            self.name,
            f"{len(failed)} tool call(s) failed; first: {first.name}: {one_line(first.error, 80)}",
        )


@dataclass(eq=False, slots=True)
class is_instance:
    """The output is an instance of a type named `type_name` (its class or any base class
    has that name: `str`, `dict`, `int`, or a pydantic model's class name)."""

    type_name: str
    name: str = "is_instance"

    def __call__(self, run: RunResult) -> CheckResult:
        names = [klass.__name__ for klass in type(run.output).__mro__]
        if self.type_name in names:
            return ok(self.name)
        return fail(
            self.name,
            f"expected output of type {self.type_name!r}, got {type(run.output).__name__!r}: "
            f"{one_line(run.output, 60)!r}",
        )

"""The check protocol: any `(RunResult) -> CheckResult | bool | float`, sync or async, or
`(RunResult, CheckContext) -> ...` for a check that needs to know which case it checks."""

from __future__ import annotations

import contextlib
import inspect
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from tui_eval.agents.messages import RunResult, Usage
from tui_eval.util.cancellation import cancelled_from_outside
from tui_eval.util.secrets import redact
from tui_eval.util.text import one_line

CheckOutcome: TypeAlias = "CheckResult | bool | float | Awaitable[CheckResult | bool | float]"
"""What a check returns: a `CheckResult`, a bool or a score in 0..1 (or an awaitable of one)."""

Check: TypeAlias = (
    "Callable[[RunResult], CheckOutcome] | Callable[[RunResult, CheckContext], CheckOutcome]"
)
"""A callable taking the `RunResult` (and the `CheckContext`, if it takes a second argument)."""

SCORE_PASS = 0.5
"""A check that returns a bare float passes when the score is at least this."""


@dataclass(slots=True)
class JudgeVerdict:
    """One juror's verdict within a jury; `score` None: no valid verdict."""

    judge: str
    passed: bool
    score: float | None = None
    reasoning: str = ""


@dataclass(slots=True)
class CheckResult:
    """The outcome of one check on one sample.

    Attributes:
        score: 0..1; 1.0 or 0.0 for pass/fail checks.
        reason: why it failed (a judge's reasoning) in words a person can act on.
        usage: model usage the check itself spent (the judge's tokens), if any.
        threshold: the lowest passing score, for a scored check that has one (a judge).
    """

    name: str
    passed: bool
    score: float | None = None
    reason: str = ""
    usage: Usage | None = None
    threshold: float | None = None
    verdicts: list[JudgeVerdict] | None = None

    @property
    def score_text(self) -> str:
        """The score against its threshold: "score 0.80 < 0.90" ("" without both)."""
        if self.score is None or self.threshold is None:
            return ""
        sign = "≥" if self.score >= self.threshold else "<"
        return f"score {self.score:.2f} {sign} {self.threshold:.2f}"


def ok(name: str) -> CheckResult:
    """A pass of the check `name`, scored 1."""
    return CheckResult(name, True, 1.0, "")


def fail(name: str, reason: str) -> CheckResult:
    """A failure of the check `name`, scored 0, with a `reason` a person can act on."""
    return CheckResult(name, False, 0.0, reason)


@dataclass(frozen=True, slots=True)
class CheckContext:
    """The case and sample a check checks, for a check that takes a second parameter.

    Example:
        >>> def close_to_expected(run: RunResult, ctx: CheckContext) -> bool:
        ...     return abs(float(run.output) - ctx.expected) < 0.01
        >>> Case("0.1 + 0.2?", expected=0.3, checks=[close_to_expected])  # doctest: +SKIP

    Attributes:
        case_name: the case's name ("" outside a case); input, expected, metadata: its own.
        sample_index: which sample of the case this is (0, 1, ...).
    """

    case_name: str = ""
    input: Any = None
    expected: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    sample_index: int = 0


NO_CONTEXT = CheckContext()
"""The context of a check run outside a case."""


def check_name(check: Any) -> str:
    """The display name of a check: its `name` attribute, else its function name."""
    name = getattr(check, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(check, "__name__", None) or type(check).__name__


_ASYNC_CALL: dict[type, bool] = {}


def is_async_check(check: Any) -> bool:
    """Whether calling the check gives an awaitable (decided from its definition)."""
    if getattr(check, "is_async", False):
        return True
    if inspect.isfunction(check) or inspect.ismethod(check):
        return inspect.iscoroutinefunction(check)
    kind = type(check)
    known = _ASYNC_CALL.get(kind)
    if known is None:
        target = kind.__call__ if not inspect.isclass(check) else None
        known = _ASYNC_CALL[kind] = inspect.iscoroutinefunction(target)
    return known


_TAKES_CONTEXT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def takes_context(check: Any) -> bool:
    """Whether the check gets a `CheckContext`: its `takes_context` attribute, else a second
    positional parameter without default (`check(run, ctx)`, not `check(run, limit=100)`)."""
    declared = getattr(check, "takes_context", None)
    if isinstance(declared, bool):
        return declared
    kind = type(check)
    key = kind if inspect.isfunction(getattr(kind, "__call__", None)) else check  # noqa: B004
    try:
        known = _TAKES_CONTEXT.get(key)
    except TypeError:  # neither hashable nor weakly referable: look every time
        return _second_parameter_required(check)
    if known is None:
        known = _second_parameter_required(check)
        with contextlib.suppress(TypeError):
            _TAKES_CONTEXT[key] = known
    return known


def _second_parameter_required(check: Any) -> bool:
    try:
        parameters = inspect.signature(check).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].default is inspect.Parameter.empty


def normalise(name: str, value: Any) -> CheckResult:
    """What a check returned as a `CheckResult`; anything but a bool or a score in 0..1 fails."""
    if isinstance(value, CheckResult):
        if value.score is not None and not _in_unit_range(value.score):
            return _misused(name, f"a CheckResult with score {value.score!r}, outside 0..1")
        return value
    if isinstance(value, bool):
        return ok(name) if value else fail(name, f"{name} returned False")
    if isinstance(value, (int, float)):
        score = float(value)
        if not _in_unit_range(score):
            return _misused(name, f"the score {value!r}, outside 0..1")
        passed = score >= SCORE_PASS
        return CheckResult(
            name, passed, score, "" if passed else f"score {score:.2f} below {SCORE_PASS}"
        )
    shown = one_line(repr(value), 60)
    return _misused(name, f"{type(value).__name__} {shown}")


def _in_unit_range(score: float) -> bool:
    return 0.0 <= score <= 1.0  # False for NaN too


def _misused(name: str, what: str) -> CheckResult:
    return fail(
        name,
        f"check {name!r} returned {what}; a check must return a bool, a score in 0..1 "
        "or a CheckResult",
    )


def failed_by_exception(name: str, exc: BaseException) -> CheckResult:
    """The result of a check that raised: only that check fails."""
    return fail(name, redact(f"check raised {type(exc).__name__}: {exc}"))


async def run_check(
    check: Check, result: RunResult, context: CheckContext | None = None
) -> CheckResult:
    """Run one check and normalise its outcome; an exception fails only this check."""
    outcome = call_check(check, result, context)
    if isinstance(outcome, CheckResult):
        return outcome
    return await settle_check(check, outcome)


def call_check(
    check: Check,
    result: RunResult,
    context: CheckContext | None = None,
    *,
    with_context: bool | None = None,
) -> CheckResult | Awaitable[Any]:
    """Call a check exactly once: its result, or the awaitable it returned (`settle_check`)."""
    if with_context is None:
        with_context = takes_context(check)
    call: Callable[..., Any] = check
    try:
        if with_context:
            value = call(result, NO_CONTEXT if context is None else context)
        else:
            value = call(result)
    except BaseException as exc:
        if cancelled_from_outside(exc):
            raise
        return failed_by_exception(check_name(check), exc)
    if type(value) is CheckResult and 0.0 <= (value.score or 0.0) <= 1.0:
        return value
    if inspect.isawaitable(value):
        return value
    return normalise(check_name(check), value)


async def settle_check(check: Check, pending: Awaitable[Any]) -> CheckResult:
    """Await what `call_check` returned for `check` and normalise it."""
    try:
        value = await pending
    except BaseException as exc:
        if cancelled_from_outside(exc):
            raise
        return failed_by_exception(check_name(check), exc)
    return normalise(check_name(check), value)


@dataclass(frozen=True, slots=True)
class Declared:
    """Annotation metadata for a check parameter whose Python type is not what YAML writes:
    the declarative `type` (`Check`: a nested check spec) and the YAML `key`, if different.

    Example:
        >>> model: Annotated[ModelLike | None, Declared("str | None")] = None  # doctest: +SKIP
    """

    type: Any
    key: str | None = None

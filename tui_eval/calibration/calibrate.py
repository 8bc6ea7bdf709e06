"""`calibrate()`: re-judge every human-labelled output and measure judge–human agreement.

The agent is never called: labelled outputs are judged from their stored runs through the
runner's saved-runs source, so the suite's provider options, limiter, cache and `max_cost`
apply to the judges as in a run. Fault labels re-run the fault review (the rules first).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from tui_eval.agents.http.cache import CacheMode, ResponseCache
from tui_eval.agents.http.options import ProviderOptions
from tui_eval.agents.messages import Message, RunResult, Usage
from tui_eval.agents.providers import ModelLike, resolve_model
from tui_eval.agents.users import User
from tui_eval.calibration.labels import LabelRecord, LabelsFileError, labels_path, read_labels
from tui_eval.calibration.results import Calibration, JudgedLabel, ReviewedLabel, UnjudgedLabel
from tui_eval.checks.base import (
    SCORE_PASS,
    Check,
    CheckContext,
    CheckResult,
    check_name,
    is_async_check,
    normalise,
    takes_context,
)
from tui_eval.checks.faults import FAULT_CHECK, Fault, review_fault, reviewer_model, rule_fault
from tui_eval.checks.judge import JUDGE_MODEL_ENV, JudgeConfigError, llm_judge
from tui_eval.core.cases import Case
from tui_eval.core.results import SampleResult
from tui_eval.core.settings import RunSettings
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.sample_sources import SavedRuns
from tui_eval.suites import Suite, load_suites
from tui_eval.util.cancellation import cancelled_from_outside
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.secrets import redact


class CalibrationError(TuiEvalError, ValueError):
    """Calibration cannot start (no labels, an unknown check, a bad labels file or suite)."""


def check_threshold(check: Check) -> float:
    """The score a check's pass needs: a judge's `threshold`, else `SCORE_PASS`."""
    threshold = getattr(check, "threshold", None)
    return float(threshold) if isinstance(threshold, (int, float)) else SCORE_PASS


def _judge_for(check: Check, judge: Any, where: str) -> Check:
    """The check to judge with (with `judge`'s model, if given), its models resolved now: a
    bad one is a usage error before any judging, not an error on every label."""
    if judge is not None:
        if not isinstance(check, llm_judge):
            raise CalibrationError(
                f"--judge replaces an llm_judge's model, but {where} is {check!r}, not an llm_judge"
            )
        check = check.with_model(judge)
    if isinstance(check, llm_judge):
        try:
            check.resolve_models()
        except (JudgeConfigError, ValueError) as exc:
            source = "--judge" if judge is not None else where
            hint = "" if judge is not None else " (or calibrate with --judge)"
            raise CalibrationError(f"{source}: {exc}{hint}") from None
    return check


def _reviewer_for(user: User, judge: Any, where: str) -> ModelLike:
    """The fault reviewer of `where` (`judge`, if given), resolved now, as `_judge_for`."""
    if judge is not None and isinstance(judge, (list, tuple)):
        raise CalibrationError(
            "--judge: the fault reviewer is one model, not a jury (calibrate a jury of "
            "judges with --check NAME)"
        )
    model = judge if judge is not None else reviewer_model(user)
    if model is None:
        raise CalibrationError(
            f"the fault labels of {where} have no reviewer: give its user a reviewer= model, "
            f"set ${JUDGE_MODEL_ENV}, or calibrate with --judge"
        )
    try:
        resolve_model(model)
    except ValueError as exc:
        source = "--judge" if judge is not None else f"the reviewer of {where}"
        raise CalibrationError(f"{source}: {exc}") from None
    return model


class _Guarded:
    """A judge (or the fault reviewer) on one labelled output within its case's `timeout`;
    anything but a verdict is kept as `error`, never as a "fail"."""

    is_async = True
    takes_context = False
    role = "judge"
    """Who gives the verdict, in the errors' words."""

    def __init__(self, name: str, case: Case) -> None:
        self.name = name
        self.timeout = case.timeout
        self.error: str | None = None

    async def __call__(self, run: RunResult) -> CheckResult:
        try:
            with anyio.move_on_after(self.timeout):  # None: no timeout
                return await self._judge(run)
        except BaseException as exc:
            if cancelled_from_outside(exc):
                raise
            return self._failed(f"the {self.role} raised {_exception_text(exc)}")
        return self._failed(
            f"the {self.role} gave no verdict within the case's timeout of {self.timeout:g}s"
        )

    async def _judge(self, run: RunResult) -> CheckResult:
        raise NotImplementedError

    def _failed(self, error: str, usage: Usage | None = None) -> CheckResult:
        self.error = redact(error)
        return CheckResult(self.name, False, None, self.error, usage or None)


class _GuardedJudge(_Guarded):
    """The suite's judge on one labelled output."""

    def __init__(self, check: Check, case: Case) -> None:
        super().__init__(check_name(check), case)
        self.check = check
        self.context = CheckContext(case.label, case.input, case.expected, case.metadata, 0)

    async def _judge(self, run: RunResult) -> CheckResult:
        check = self.check
        if isinstance(check, llm_judge):
            answers = await check.answers(run)
            missing = [answer for answer in answers if answer.verdict is None]
            if missing:
                usage = sum((answer.usage for answer in answers), Usage())
                listed = "; ".join(f"{a.judge}: {a.reasoning}" for a in missing)
                return self._failed(f"no verdict from {listed}", usage)
            return check.decide(answers)
        function: Any = check
        call = partial(function, *((run, self.context) if takes_context(check) else (run,)))
        if is_async_check(check) or self.timeout is None:
            value = call()
        else:  # a blocking judge in a thread, so the timeout can leave it behind
            value = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        if inspect.isawaitable(value):
            value = await value
        result = normalise(self.name, value)
        return result if _is_verdict(value, result) else self._failed(result.reason)


class _GuardedReviewer(_Guarded):
    """Who failed one labelled conversation, decided as a run decides it."""

    role = "reviewer"

    def __init__(self, model: ModelLike, user: User, case: Case, record: LabelRecord) -> None:
        super().__init__(FAULT_CHECK, case)
        self.model = model
        self.user = user
        self.checks = list(record.checks or [])
        self.verdict: Fault | None = None

    async def _judge(self, run: RunResult) -> CheckResult:
        decided = rule_fault(run, self.checks)
        if decided is None:
            decided = await review_fault(self.model, run, self.checks, self.user)
            if decided is None:
                return self._failed(
                    "the reviewer's reply was not a valid verdict (a JSON object naming "
                    "the user, the agent or the environment)"
                )
        self.verdict = decided
        return CheckResult(self.name, True, None, str(decided), decided.usage)


def _is_verdict(value: Any, result: CheckResult) -> bool:
    """Whether `normalise` kept what a check returned, rather than failing a misuse."""
    if isinstance(value, CheckResult):
        return result is value
    if isinstance(value, bool):
        return True
    return isinstance(value, (int, float)) and 0.0 <= value <= 1.0


def _exception_text(exc: BaseException) -> str:
    """`Type: message`, of each exception a group holds (a jury's judges fail together)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_exception_text(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _stored_run(record: LabelRecord, case: Case) -> RunResult:
    """The run the judge reads: the stored one, else the case's input and the output."""
    if record.run is not None:
        return replace(record.run, output=record.output)
    text = case.input
    messages = [Message("user", text)] if isinstance(text, str) else list(text)
    return RunResult(output=record.output, messages=messages)


def _load_suites(suite: Suite | str | Path) -> list[Suite]:
    if isinstance(suite, Suite):
        return [suite]
    loaded = load_suites([suite])
    if loaded.errors:
        raise CalibrationError("; ".join(error.message for error in loaded.errors))
    if not loaded.suites:
        raise CalibrationError(f"no suite found in {suite}")
    return list(loaded.suites)


def _labels_of(
    suite: Suite, labels: Iterable[LabelRecord] | str | Path | None
) -> list[LabelRecord]:
    try:
        if labels is None:
            return read_labels(labels_path(suite))
        if isinstance(labels, (str, Path)):
            return read_labels(labels)
        return list(labels)
    except LabelsFileError as exc:
        raise CalibrationError(str(exc)) from None


async def calibrate(
    suite: Suite | str | Path,
    *,
    check: str | None = None,
    judge: Any = None,
    labels: Iterable[LabelRecord] | str | Path | None = None,
    cache: CacheMode | ResponseCache = "on",
    provider: ProviderOptions | None = None,
    max_cost: float | None = None,
    seed: int = 0,
) -> Calibration:
    """Re-judge every human-labelled output of `suite` and measure judge–human agreement.

    A score label passes when it reaches the check's threshold. A judge that raises, times
    out or gives no verdict puts the label in `errors`: out of every figure, and `passes()`
    is False. Fault labels calibrate the fault reviewer, in `by_check["fault"]`.

    Example:
        >>> calibration = await calibrate("suites/support.py", check="llm_judge")  # doctest: +SKIP
        >>> calibration.kappa, calibration.kappa_ci  # doctest: +SKIP
        (0.71, (0.52, 0.86))

    Args:
        suite: a `Suite`, or a suite file (every suite in it is calibrated together).
        check: only labels of the check with this name.
        judge: judge (and review faults) with this model instead of each `llm_judge`'s
            own (a list: a jury), to compare judges on the same labels.
        labels: records or a labels file (default: the suite's labels file).
        cache: the response cache mode for the judges (default on: a rerun is free).
        provider: provider options over the suite's own.
        max_cost: dollars; no new output is judged past it (default: the suite's).
        seed: the seed of κ's interval.

    Raises:
        CalibrationError: no labels, a bad labels or suite file, `judge` for a check that is
            not an `llm_judge` (or a jury for the reviewer), or no resolvable reviewer or
            judge model.
    """
    suites = _load_suites(suite)
    found = _Judging()
    seen_labels = 0
    for one in suites:
        records = _labels_of(one, labels)
        if check is not None:
            records = [r for r in records if r.check == check]
        seen_labels += len(records)
        found.fault_labels = found.fault_labels or any(r.check == FAULT_CHECK for r in records)
        await _judge_suite(one, records, judge, cache, provider, max_cost, found)
    if not seen_labels:
        where = ", ".join(str(labels or labels_path(s)) for s in suites)
        what = f"for check {check!r} " if check is not None else ""
        raise CalibrationError(f"no labels {what}in {where}")
    faults = found.faults if found.fault_labels else None
    calibration = Calibration.of(found.judged, faults=faults, seed=seed)
    calibration.skipped = found.skipped
    calibration.errors = found.errors
    reviewer = calibration.reviewer
    if reviewer is not None and reviewer is not calibration:
        reviewer.errors = [error for error in found.errors if error.record.check == FAULT_CHECK]
    calibration.judge_requests = found.requests
    calibration.cached_requests = found.cached
    calibration.cost = found.cost
    calibration.stopped = found.stopped
    return calibration


@dataclass(slots=True)
class _Judging:
    """What judging the labels of every suite found, gathered suite by suite."""

    judged: list[JudgedLabel] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    faults: list[ReviewedLabel] = field(default_factory=list)
    errors: list[UnjudgedLabel] = field(default_factory=list)
    fault_labels: bool = False
    requests: int = 0
    cached: int = 0
    cost: float | None = None
    stopped: str | None = None


async def _judge_suite(
    suite: Suite,
    records: Sequence[LabelRecord],
    judge: Any,
    cache: CacheMode | ResponseCache,
    provider: ProviderOptions | None,
    max_cost: float | None,
    into: _Judging,
) -> None:
    """Judge one suite's labels once, as a recheck of saved runs, `into` one record."""
    cases_by_name = {case.label: case for case in suite.cases}
    planned: list[tuple[LabelRecord, _GuardedJudge | _GuardedReviewer, Case]] = []
    skipped = into.skipped
    judges: dict[int, Check] = {}  # one judge (and its providers) per check of the suite
    reviewers: dict[int, ModelLike] = {}  # one reviewer per user of the suite
    for record in records:
        case = cases_by_name.get(record.case)
        if case is None:
            skipped.append(f"{suite.name}: case {record.case!r} is not in the suite any more")
            continue
        if record.check == FAULT_CHECK:
            if record.run is None or record.run.conversation is None:
                skipped.append(
                    f"{suite.name}: the fault label of case {record.case!r} holds no stored "
                    "conversation to review"
                )
                continue
            user = case.user
            if user is None:
                skipped.append(
                    f"{suite.name}: case {record.case!r} is not a conversation any more "
                    "(it has no user)"
                )
                continue
            model = reviewers.get(id(user))
            if model is None:
                where = f"case {record.case!r}"
                model = reviewers[id(user)] = _reviewer_for(user, judge, where)
            planned.append((record, _GuardedReviewer(model, user, case, record), case))
            continue
        found = next((c for c in case.checks if check_name(c) == record.check), None)
        if found is None:
            skipped.append(f"{suite.name}: case {record.case!r} has no check {record.check!r}")
            continue
        chosen = judges.get(id(found))
        if chosen is None:
            where = f"check {record.check!r} of case {record.case!r}"
            chosen = judges[id(found)] = _judge_for(found, judge, where)
        planned.append((record, _GuardedJudge(chosen, case), case))
    if not planned:
        return
    # One replayed "case" per labelled output, named by its position: the labels of one
    # case (several outputs) are judged independently, each exactly once.
    cases = [
        Case(case.input, checks=[guarded], name=str(position))
        for position, (_, guarded, case) in enumerate(planned)
    ]
    replay = {
        str(position): [SampleResult(str(position), 0, "passed", run=_stored_run(record, case))]
        for position, (record, _, case) in enumerate(planned)
    }
    evaluation = Evaluation(
        None,
        cases,
        settings=suite.settings.over(
            RunSettings(cache=cache).but(provider=provider, max_cost=max_cost)
        ),
        name=suite.name,
        source=SavedRuns(replay),
    )
    report = await evaluation.run()
    by_position = {int(result.name): result for result in report.cases}
    for position, (record, guarded, _) in enumerate(planned):
        result = by_position.get(position)
        if result is None or not result.samples or not result.samples[0].checks:
            continue  # not judged: the run stopped on max_cost first
        sample = result.samples[0]
        into.requests += sample.judge_usage.requests
        if sample.cost is not None:
            into.cost = (into.cost or 0.0) + sample.cost
        if guarded.error is not None:
            into.errors.append(UnjudgedLabel(record, guarded.error, suite.name))
        elif isinstance(guarded, _GuardedReviewer):
            if guarded.verdict is not None:
                into.faults.append(ReviewedLabel(record, guarded.verdict, suite.name))
        else:
            threshold = check_threshold(guarded.check)
            passed = record.passed(threshold)
            into.judged.append(JudgedLabel(record, passed, sample.checks[0], threshold, suite.name))
    into.cached += evaluation.cache.hits if evaluation.cache is not None else 0
    into.stopped = into.stopped or report.stopped


__all__ = [
    "CalibrationError",
    "calibrate",
    "check_threshold",
]

"""`calibrate()`: is the judge right? Re-judge every human-labelled output and measure the
agreement between judge and humans (and, for a jury, between the judges).

The agent is never called: each labelled output is judged again from its stored run, through
the runner's saved-runs source, so the suite's provider options, the shared rate limiter, the
response cache and `max_cost` apply to the judges exactly as in a run. A judge that raises,
outlasts its case's `timeout` or replies no verdict is an error of that label, reported and
failing the gate: never a verdict.
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

from tui_eval.agents.messages import Message, RunResult, Usage
from tui_eval.agents.providers.cache import CacheMode, ResponseCache
from tui_eval.agents.providers.settings import ProviderOptions
from tui_eval.calibration.labels import LabelRecord, LabelsFileError, labels_path, read_labels
from tui_eval.calibration.results import Calibration, JudgedLabel, UnjudgedLabel
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
from tui_eval.checks.judge import JudgeConfigError, llm_judge
from tui_eval.core.cases import Case
from tui_eval.core.settings import RunSettings
from tui_eval.report.report import SampleResult
from tui_eval.run.runner import Evaluation
from tui_eval.run.sample_sources import SavedRuns
from tui_eval.suites import Suite, load_suites
from tui_eval.util.cancellation import cancelled_from_outside
from tui_eval.util.secrets import redact


class CalibrationError(ValueError):
    """Calibration cannot start: no labels (for the check), an unknown check, a bad labels
    file or suite. The message says which; the CLI exits 2."""


def check_threshold(check: Check) -> float:
    """The score a check's pass needs: a judge's `threshold`, else `SCORE_PASS`."""
    threshold = getattr(check, "threshold", None)
    return float(threshold) if isinstance(threshold, (int, float)) else SCORE_PASS


def _find_check(case: Case, name: str) -> Check | None:
    return next((c for c in case.checks if check_name(c) == name), None)


def _judge_for(check: Check, judge: Any, where: str) -> Check:
    """The check to judge with (`judge`'s model instead of its own, when given), its every
    model resolved now: a spec that cannot be (`python:no_such_module:x`, a missing key) is
    a usage error before any judging, never a verdict on every label."""
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


class _GuardedJudge:
    """The check a calibration judges one labelled output with: the suite's judge within its
    case's `timeout`, with anything but a verdict kept as `error` rather than a "fail".

    Attributes:
        name: the judge's name (its results carry it).
        error: why the judge gave no verdict (None: it gave one, or was not asked).
    """

    is_async = True
    takes_context = False

    def __init__(self, check: Check, case: Case) -> None:
        self.check = check
        self.name = check_name(check)
        self.timeout = case.timeout
        self.context = CheckContext(case.label, case.input, case.expected, case.metadata, 0)
        self.error: str | None = None

    async def __call__(self, run: RunResult) -> CheckResult:
        try:
            if self.timeout is None:
                return await self._judge(run)
            with anyio.move_on_after(self.timeout):
                return await self._judge(run)
        except BaseException as exc:
            if cancelled_from_outside(exc):
                raise
            return self._failed(f"the judge raised {_exception_text(exc)}")
        return self._failed(
            f"the judge gave no verdict within the case's timeout of {self.timeout:g}s"
        )

    async def _judge(self, run: RunResult) -> CheckResult:
        check = self.check
        if isinstance(check, llm_judge):
            answers = await check.answers(run)
            missing = [answer for answer in answers if answer.verdict is None]
            if missing:
                usage = Usage()
                for answer in answers:
                    usage = usage + answer.usage
                listed = "; ".join(f"{a.judge}: {a.reasoning}" for a in missing)
                return self._failed(f"no verdict from {listed}", usage)
            return check.decide(answers)
        function: Any = check
        call = (
            partial(function, run, self.context) if takes_context(check) else partial(function, run)
        )
        if is_async_check(check) or self.timeout is None:
            value = call()
        else:  # a blocking judge in a thread, so the timeout can leave it behind
            value = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        if inspect.isawaitable(value):
            value = await value
        result = normalise(self.name, value)
        return result if _is_verdict(value, result) else self._failed(result.reason)

    def _failed(self, error: str, usage: Usage | None = None) -> CheckResult:
        self.error = redact(error)
        return CheckResult(self.name, False, None, self.error, usage or None)


def _is_verdict(value: Any, result: CheckResult) -> bool:
    """Whether what a check returned was a verdict `normalise` kept, not a misuse it turned
    into a failure (a string, None, a score outside 0..1)."""
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

    The agent is never called; each labelled output is judged once per judge (a rerun is
    answered by the response cache). A score label counts as "pass" when it reaches the
    check's threshold.

    Example:
        >>> calibration = await calibrate("suites/support.py", check="llm_judge")  # doctest: +SKIP
        >>> calibration.kappa, calibration.kappa_ci  # doctest: +SKIP
        (0.71, (0.52, 0.86))

    Args:
        suite: a `Suite`, or a suite file (every suite in it is calibrated together).
        check: only labels of the check with this name.
        judge: judge with this model instead of each `llm_judge`'s own (a spec string, a
            provider, or a list for a jury), to compare judges on the same labels.
        labels: the labels (records or a labels file); default the suite's own file,
            `<suite folder>/__labels__/<suite name>.jsonl`.
        cache: the response cache mode for the judges (default on: a rerun is free).
        provider: provider options over the suite's own.
        max_cost: dollars; judging stops starting new outputs past it (default the suite's).
        seed: the bootstrap's seed.

    A judge that raises, outlasts its case's `timeout` or replies no verdict gives no
    verdict: that label is in `errors`, out of every figure, and `passes()` is False.

    Raises:
        CalibrationError: no labels (for `check`), a bad labels or suite file, `judge`
            given for a check that is not an `llm_judge`, or a judge model that cannot be
            resolved (an unknown spec, a `python:` module that does not import, no key).
    """
    suites = _load_suites(suite)
    judged: list[JudgedLabel] = []
    skipped: list[str] = []
    errors: list[UnjudgedLabel] = []
    requests = cached = 0
    cost: float | None = None
    stopped: str | None = None
    seen_labels = 0
    for one in suites:
        records = _labels_of(one, labels)
        if check is not None:
            records = [r for r in records if r.check == check]
        seen_labels += len(records)
        result = await _judge_suite(one, records, judge, cache, provider, max_cost)
        judged += result.judged
        skipped += result.skipped
        errors += result.errors
        requests += result.requests
        cached += result.cached
        if result.cost is not None:
            cost = (cost or 0.0) + result.cost
        stopped = stopped or result.stopped
    if not seen_labels:
        where = ", ".join(str(labels or labels_path(s)) for s in suites)
        what = f"for check {check!r} " if check is not None else ""
        raise CalibrationError(f"no labels {what}in {where}")
    calibration = Calibration.of(judged, seed=seed)
    calibration.skipped = skipped
    calibration.errors = errors
    calibration.judge_requests = requests
    calibration.cached_requests = cached
    calibration.cost = cost
    calibration.stopped = stopped
    return calibration


@dataclass(slots=True)
class _SuiteJudging:
    judged: list[JudgedLabel]
    skipped: list[str]
    errors: list[UnjudgedLabel] = field(default_factory=list)
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
) -> _SuiteJudging:
    """Judge each labelled output of one suite once, as a recheck of saved runs."""
    cases_by_name = {case.label: case for case in suite.cases}
    planned: list[tuple[LabelRecord, _GuardedJudge, Case]] = []
    skipped: list[str] = []
    judges: dict[int, Check] = {}  # one judge (and its providers) per check of the suite
    for record in records:
        case = cases_by_name.get(record.case)
        if case is None:
            skipped.append(f"{suite.name}: case {record.case!r} is not in the suite any more")
            continue
        found = _find_check(case, record.check)
        if found is None:
            skipped.append(f"{suite.name}: case {record.case!r} has no check {record.check!r}")
            continue
        chosen = judges.get(id(found))
        if chosen is None:
            where = f"check {record.check!r} of case {record.case!r}"
            chosen = judges[id(found)] = _judge_for(found, judge, where)
        planned.append((record, _GuardedJudge(chosen, case), case))
    if not planned:
        return _SuiteJudging([], skipped)
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
    judged: list[JudgedLabel] = []
    errors: list[UnjudgedLabel] = []
    requests = 0
    cost: float | None = None
    for position, (record, guarded, _) in enumerate(planned):
        result = by_position.get(position)
        if result is None or not result.samples or not result.samples[0].checks:
            continue  # not judged: the run stopped on max_cost first
        sample = result.samples[0]
        requests += sample.judge_usage.requests
        if sample.cost is not None:
            cost = (cost or 0.0) + sample.cost
        if guarded.error is not None:
            errors.append(UnjudgedLabel(record, guarded.error, suite.name))
            continue
        threshold = check_threshold(guarded.check)
        judged.append(
            JudgedLabel(record, record.passed(threshold), sample.checks[0], threshold, suite.name)
        )
    hits = evaluation.cache.hits if evaluation.cache is not None else 0
    return _SuiteJudging(
        judged,
        skipped,
        errors,
        requests=requests,
        cached=hits,
        cost=cost,
        stopped=report.stopped,
    )


__all__ = [
    "Calibration",
    "CalibrationError",
    "JudgedLabel",
    "UnjudgedLabel",
    "calibrate",
    "check_threshold",
]

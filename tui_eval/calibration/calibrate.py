"""`calibrate()`: is the judge right? Re-judge every human-labelled output and measure the
agreement between judge and humans (and, for a jury, between the judges).

The agent is never called: each labelled output is judged again from its stored run, through
the runner's saved-runs source, so the suite's provider options, the shared rate limiter, the
response cache and `max_cost` apply to the judges exactly as in a run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tui_eval.agents.messages import Message, RunResult
from tui_eval.agents.providers.cache import CacheMode, ResponseCache
from tui_eval.agents.providers.settings import ProviderOptions
from tui_eval.calibration.labels import LabelRecord, LabelsFileError, labels_path, read_labels
from tui_eval.checks.base import SCORE_PASS, Check, CheckResult, check_name
from tui_eval.checks.judge import JudgeConfigError, llm_judge
from tui_eval.core.cases import Case
from tui_eval.core.settings import RunSettings
from tui_eval.report.report import SampleResult
from tui_eval.run.runner import Evaluation
from tui_eval.run.sample_sources import SavedRuns
from tui_eval.stats.agreement import (
    Confusion,
    kappa_interval,
    krippendorff_alpha,
    weighted_score_kappa,
)
from tui_eval.suites import Suite, load_suites


class CalibrationError(ValueError):
    """Calibration cannot start: no labels (for the check), an unknown check, a bad labels
    file or suite. The message says which; the CLI exits 2."""


@dataclass(frozen=True, slots=True)
class JudgedLabel:
    """One labelled output with the judge's verdict on it now.

    Attributes:
        record: the human label, as stored.
        human_passed: the human's verdict ("pass", or a score reaching the threshold).
        judge: the check's result when judged again (a jury's holds every judge's verdict).
        threshold: the check's passing score (`SCORE_PASS` for checks without one).
        suite: the suite the label belongs to.
    """

    record: LabelRecord
    human_passed: bool
    judge: CheckResult
    threshold: float
    suite: str = ""

    @property
    def agrees(self) -> bool:
        """Whether judge and human reached the same verdict."""
        return self.human_passed == self.judge.passed

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of a disagreement."""
        return {
            "suite": self.suite,
            "case": self.record.case,
            "check": self.record.check,
            "label": self.record.label,
            "human_passed": self.human_passed,
            "judge_passed": self.judge.passed,
            "judge_score": self.judge.score,
            "threshold": self.threshold,
            "reason": self.judge.reason,
            "verdicts": [
                {"judge": v.judge, "passed": v.passed, "score": v.score, "reasoning": v.reasoning}
                for v in self.judge.verdicts or []
            ],
        }


@dataclass(slots=True, kw_only=True)
class Calibration:
    """How far a judge agrees with human labels.

    Attributes:
        n: labelled outputs judged.
        agreement: the share where judge and human reached the same verdict.
        kappa: Cohen's κ of the pass/fail verdicts (NaN when undefined: one class only).
        kappa_ci: a 95% bootstrap interval for κ (seeded: reruns give the same).
        weighted_kappa: quadratic weighted κ of the human score labels against the judge's
            scores, on a grid of tenths (None without score labels).
        tpr: of the outputs humans passed, the share the judge passed.
        tnr: of the outputs humans failed, the share the judge failed.
        confusion: `{"tp", "fp", "fn", "tn"}`, judge against human (human pass = positive).
        disagreements: the labelled outputs where judge and human differ.
        by_check: the same per check (keyed by check name).
        judges_alpha: Krippendorff's α of the jurors' pass/fail verdicts (None: no jury).
        judges: each juror's own calibration against the humans, by judge name (juries).
        judged: every labelled output with its verdict, in label order.
        skipped: labels that could not be judged (their case or check is gone), and why.
        judge_requests: judge model requests made (including those the cache answered).
        cached_requests: of those, answered by the response cache.
        cost: dollars the judges spent, when priced.
        stopped: why judging stopped early (`max_cost`), if it did.
    """

    n: int
    agreement: float
    kappa: float
    kappa_ci: tuple[float, float]
    weighted_kappa: float | None
    tpr: float
    tnr: float
    confusion: dict[str, int]
    disagreements: list[JudgedLabel] = field(default_factory=list)
    by_check: dict[str, Calibration] = field(default_factory=dict)
    judges_alpha: float | None = None
    judges: dict[str, Calibration] = field(default_factory=dict)
    judged: list[JudgedLabel] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    judge_requests: int = 0
    cached_requests: int = 0
    cost: float | None = None
    stopped: str | None = None

    @classmethod
    def of(cls, judged: Sequence[JudgedLabel], *, seed: int = 0) -> Calibration:
        """The agreement statistics of these judged labels (and per check, and per juror)."""
        calibration = _statistics(judged, seed=seed)
        checks = sorted({j.record.check for j in judged})
        calibration.by_check = {
            name: _statistics([j for j in judged if j.record.check == name], seed=seed)
            for name in checks
        }
        jurors = [j for j in judged if j.judge.verdicts]
        if jurors:
            names = list(dict.fromkeys(v.judge for j in jurors for v in j.judge.verdicts or []))
            units = [
                [
                    next((v.passed for v in j.judge.verdicts or [] if v.judge == name), None)
                    for name in names
                ]
                for j in jurors
            ]
            calibration.judges_alpha = krippendorff_alpha(units)
            calibration.judges = {
                name: _statistics([_as_juror(j, name) for j in jurors], seed=seed) for name in names
            }
        return calibration

    def below(self, min_kappa: float) -> bool:
        """Whether κ fails a `--min-kappa` gate: below it, or undefined (fails closed)."""
        return math.isnan(self.kappa) or self.kappa < min_kappa

    def as_dict(self) -> dict[str, Any]:
        """The calibration as the CLI's `--json` writes it (NaN as null)."""
        document: dict[str, Any] = {
            "n": self.n,
            "agreement": _number(self.agreement),
            "kappa": _number(self.kappa),
            "kappa_ci": [_number(self.kappa_ci[0]), _number(self.kappa_ci[1])],
            "weighted_kappa": _number(self.weighted_kappa),
            "tpr": _number(self.tpr),
            "tnr": _number(self.tnr),
            "confusion": dict(self.confusion),
            "disagreements": [d.as_dict() for d in self.disagreements],
            "by_check": {name: c.as_dict() for name, c in self.by_check.items()},
            "judges_alpha": _number(self.judges_alpha),
            "judges": {name: c.as_dict() for name, c in self.judges.items()},
        }
        if self.skipped:
            document["skipped"] = list(self.skipped)
        if self.judge_requests or self.cached_requests:
            document["judge_requests"] = self.judge_requests
            document["cached_requests"] = self.cached_requests
        if self.cost is not None:
            document["cost"] = self.cost
        if self.stopped:
            document["stopped"] = self.stopped
        return document

    def summary(self) -> str:
        """A few lines for a terminal: κ with its interval, agreement, TPR/TNR, the matrix."""
        c = self.confusion
        lines = [
            f"{self.n} labelled outputs · κ {_fmt(self.kappa)} "
            f"(95% CI {_fmt(self.kappa_ci[0])}–{_fmt(self.kappa_ci[1])}) · "
            f"agreement {_pct(self.agreement)} · TPR {_pct(self.tpr)} · TNR {_pct(self.tnr)}",
            f"  judge vs human: tp {c['tp']} · fp {c['fp']} · fn {c['fn']} · tn {c['tn']}",
        ]
        if self.weighted_kappa is not None:
            lines.append(f"  weighted κ (quadratic, score labels): {_fmt(self.weighted_kappa)}")
        if self.judges_alpha is not None:
            lines.append(f"  jury: Krippendorff's α {_fmt(self.judges_alpha)}")
            for name, juror in self.judges.items():
                lines.append(
                    f"    {name}: κ {_fmt(juror.kappa)} · agreement {_pct(juror.agreement)}"
                )
        if len(self.by_check) > 1:
            for name, part in self.by_check.items():
                lines.append(f"  {name}: n {part.n} · κ {_fmt(part.kappa)}")
        return "\n".join(lines)


def _statistics(judged: Sequence[JudgedLabel], *, seed: int) -> Calibration:
    human = [j.human_passed for j in judged]
    verdicts = [j.judge.passed for j in judged]
    confusion = Confusion.of(human, verdicts)
    scored = [
        (j.record.score, j.judge.score)
        for j in judged
        if j.record.score is not None and j.judge.score is not None
    ]
    weighted = (
        weighted_score_kappa([h for h, _ in scored], [s for _, s in scored]) if scored else None
    )
    return Calibration(
        n=confusion.n,
        agreement=confusion.agreement,
        kappa=confusion.kappa,
        kappa_ci=kappa_interval(human, verdicts, seed=seed),
        weighted_kappa=weighted,
        tpr=confusion.tpr,
        tnr=confusion.tnr,
        confusion=confusion.as_dict(),
        disagreements=[j for j in judged if not j.agrees],
        judged=list(judged),
    )


def _as_juror(judged: JudgedLabel, name: str) -> JudgedLabel:
    """The label as one juror alone judged it."""
    verdict = next(v for v in judged.judge.verdicts or [] if v.judge == name)
    result = CheckResult(
        judged.judge.name, verdict.passed, verdict.score, verdict.reasoning, None, judged.threshold
    )
    return replace(judged, judge=result)


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _fmt(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    # A bootstrap bound of -3e-16 is float noise around 0: never show "-0.00".
    shown = f"{value:.2f}"
    return "0.00" if shown == "-0.00" else shown


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.0%}"


# -- calibrate ---------------------------------------------------------------------------
def check_threshold(check: Check) -> float:
    """The score a check's pass needs: a judge's `threshold`, else `SCORE_PASS`."""
    threshold = getattr(check, "threshold", None)
    return float(threshold) if isinstance(threshold, (int, float)) else SCORE_PASS


def _find_check(case: Case, name: str) -> Check | None:
    return next((c for c in case.checks if check_name(c) == name), None)


def _judge_for(check: Check, judge: Any, where: str) -> Check:
    if judge is None:
        if isinstance(check, llm_judge) and None in check.models:
            try:
                check._provider(check.models.index(None))
            except JudgeConfigError as exc:
                raise CalibrationError(f"{where}: {exc} (or calibrate with --judge)") from None
        return check
    if not isinstance(check, llm_judge):
        raise CalibrationError(
            f"--judge replaces an llm_judge's model, but {where} is {check!r}, not an llm_judge"
        )
    return check.with_model(judge)


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

    Raises:
        CalibrationError: no labels (for `check`), a bad labels or suite file, or `judge`
            given for a check that is not an `llm_judge`.
    """
    suites = _load_suites(suite)
    judged: list[JudgedLabel] = []
    skipped: list[str] = []
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
    calibration.judge_requests = requests
    calibration.cached_requests = cached
    calibration.cost = cost
    calibration.stopped = stopped
    return calibration


@dataclass(slots=True)
class _SuiteJudging:
    judged: list[JudgedLabel]
    skipped: list[str]
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
    planned: list[tuple[LabelRecord, Check, Case]] = []
    skipped: list[str] = []
    for record in records:
        case = cases_by_name.get(record.case)
        if case is None:
            skipped.append(f"{suite.name}: case {record.case!r} is not in the suite any more")
            continue
        found = _find_check(case, record.check)
        if found is None:
            skipped.append(f"{suite.name}: case {record.case!r} has no check {record.check!r}")
            continue
        where = f"check {record.check!r} of case {record.case!r}"
        planned.append((record, _judge_for(found, judge, where), case))
    if not planned:
        return _SuiteJudging([], skipped)
    # One replayed "case" per labelled output, named by its position: the labels of one
    # case (several outputs) are judged independently, each exactly once.
    cases = [
        Case(case.input, checks=[chosen], name=str(position))
        for position, (_, chosen, case) in enumerate(planned)
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
    requests = 0
    cost: float | None = None
    for position, (record, chosen, _) in enumerate(planned):
        result = by_position.get(position)
        if result is None or not result.samples or not result.samples[0].checks:
            continue  # not judged: the run stopped on max_cost first
        sample = result.samples[0]
        threshold = check_threshold(chosen)
        judged.append(
            JudgedLabel(record, record.passed(threshold), sample.checks[0], threshold, suite.name)
        )
        requests += sample.judge_usage.requests
        if sample.cost is not None:
            cost = (cost or 0.0) + sample.cost
    hits = evaluation.cache.hits if evaluation.cache is not None else 0
    return _SuiteJudging(
        judged,
        skipped,
        requests=requests,
        cached=hits,
        cost=cost,
        stopped=report.stopped,
    )


__all__ = [
    "Calibration",
    "CalibrationError",
    "JudgedLabel",
    "calibrate",
    "check_threshold",
]

"""What a calibration found: labelled outputs with the judge's verdict or error, labelled
conversations with the fault reviewer's, and the agreement figures (`Calibration`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tui_eval.calibration.labels import LabelRecord
from tui_eval.checks.base import CheckResult, JudgeVerdict
from tui_eval.checks.faults import FAULT_CHECK, PARTIES, Fault
from tui_eval.stats.agreement import (
    Confusion,
    category_kappa_interval,
    cohen_kappa,
    kappa_interval,
    krippendorff_alpha,
    labels_needed,
    weighted_score_kappa,
)
from tui_eval.util.text import counted

PRECISION = 0.1
"""The half-width of κ's interval that `Calibration.labels_needed` counts labels for."""


def _about(record: LabelRecord, suite: str) -> dict[str, Any]:
    """What a label is about, as the JSON forms of its outcomes begin."""
    return {"suite": suite, "case": record.case, "check": record.check, "label": record.label}


@dataclass(frozen=True, slots=True)
class JudgedLabel:
    """One labelled output (`record`) with the judge's verdict on it now (`judge`)."""

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
            **_about(self.record, self.suite),
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


@dataclass(frozen=True, slots=True)
class UnjudgedLabel:
    """A labelled output the judge gave no verdict on; `error` says why."""

    record: LabelRecord
    error: str
    suite: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of the error."""
        return {**_about(self.record, self.suite), "error": self.error}


@dataclass(frozen=True, slots=True)
class ReviewedLabel:
    """One labelled conversation with who is blamed now (by the rules: not the reviewer's)."""

    record: LabelRecord
    fault: Fault
    suite: str = ""

    @property
    def agrees(self) -> bool:
        """Whether the verdict names the party the human named."""
        return self.record.label == self.fault.party

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: the human's party beside the verdict's."""
        return {
            **_about(self.record, self.suite),
            "fault": self.fault.party,
            "by": self.fault.by,
            "turn": self.fault.turn,
            "reason": self.fault.reason,
        }


@dataclass(slots=True, kw_only=True)
class Calibration:
    """How far a judge (with `kind` "fault": the fault reviewer) agrees with human labels.

    Attributes:
        n: labelled outputs judged.
        kappa: Cohen's κ of the verdicts (NaN when undefined: `kappa_undefined` says why).
        kappa_ci: a seeded 95% interval for κ that holds at small counts (`kappa_interval`).
        labels_needed: about how many labels an interval of ±0.1 needs (None: κ undefined).
        weighted_kappa: quadratic weighted κ of score labels against the judge's scores.
        tpr, tnr: of the outputs humans passed (failed), the share the judge passed (failed).
        confusion: `{"tp", "fp", "fn", "tn"}`, judge against human (human pass = positive).
        by_check: the same per check name; `by_check["fault"]` is the fault reviewer's.
        judges_alpha: Krippendorff's α of a jury's verdicts (None: no jury).
        judges: each juror's own calibration, by judge name.
        skipped: labels that could not be judged (their case or check is gone), and why.
        errors: labelled outputs without a verdict: out of every figure, failing the gate.
        judge_requests, cached_requests: judge requests made, and those the cache answered.
        stopped: why judging stopped early (`max_cost`), if it did.
        kind: `"judge"` or `"fault"`: κ over the three parties, `party_confusion` (`{human's
            party: {reviewer's: count}}`) instead of an interval, TPR/TNR and `confusion`.
        rule_decided: the labelled conversations the rules decided (counted apart).
    """

    n: int
    agreement: float
    kappa: float
    kappa_ci: tuple[float, float]
    weighted_kappa: float | None
    tpr: float
    tnr: float
    confusion: dict[str, int]
    labels_needed: int | None = None
    disagreements: list[JudgedLabel] = field(default_factory=list)
    by_check: dict[str, Calibration] = field(default_factory=dict)
    judges_alpha: float | None = None
    judges: dict[str, Calibration] = field(default_factory=dict)
    judged: list[JudgedLabel] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[UnjudgedLabel] = field(default_factory=list)
    judge_requests: int = 0
    cached_requests: int = 0
    cost: float | None = None
    stopped: str | None = None
    kind: str = "judge"
    party_confusion: dict[str, dict[str, int]] | None = None
    reviewed: list[ReviewedLabel] = field(default_factory=list)
    reviewer_disagreements: list[ReviewedLabel] = field(default_factory=list)
    rule_decided: list[ReviewedLabel] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        judged: Sequence[JudgedLabel],
        *,
        faults: Sequence[ReviewedLabel] | None = None,
        seed: int = 0,
    ) -> Calibration:
        """The figures of these judged labels (per check and juror too), and of the fault
        reviewer on `faults` as `by_check["fault"]` (the figures themselves without labels)."""
        if faults is not None and not judged:
            calibration = _fault_statistics(faults, seed=seed)
            calibration.by_check = {FAULT_CHECK: _fault_statistics(faults, seed=seed)}
            return calibration
        calibration = _statistics(judged, seed=seed)
        checks = sorted({j.record.check for j in judged})
        calibration.by_check = {
            name: _statistics([j for j in judged if j.record.check == name], seed=seed)
            for name in checks
        }
        if faults is not None:
            calibration.by_check[FAULT_CHECK] = _fault_statistics(faults, seed=seed)
        jurors = [j for j in judged if j.judge.verdicts]
        if jurors:
            # Juries may differ from check to check: a judge is measured on what it judged.
            names = list(dict.fromkeys(v.judge for j in jurors for v in j.judge.verdicts or []))
            units = [
                [
                    next((v for v in j.judge.verdicts or [] if v.judge == name), None)
                    for name in names
                ]
                for j in jurors
            ]
            calibration.judges_alpha = krippendorff_alpha(
                [[v.passed if v is not None else None for v in unit] for unit in units]
            )
            calibration.judges = {
                name: _statistics(
                    [_as_juror(j, v) for j, v in zip(jurors, column, strict=True) if v is not None],
                    seed=seed,
                )
                for name, column in zip(names, zip(*units, strict=True), strict=True)
            }
        return calibration

    @property
    def reviewer(self) -> Calibration | None:
        """The fault reviewer's calibration: this one, or `by_check["fault"]` (None: none)."""
        if self.kind == "fault":
            return self
        return self.by_check.get(FAULT_CHECK)

    @property
    def kappa_undefined(self) -> str | None:
        """Why κ is undefined, in words (None when it is defined)."""
        if not math.isnan(self.kappa):
            return None
        if self.kind == "fault":
            if not self.n:
                return "no labelled conversation was reviewed"
            if len({r.record.label for r in self.reviewed}) < 2:
                return "the humans named one party only"
            return "the reviewer named one party only"
        if not self.n:
            return "no labelled output was judged"
        c = self.confusion
        if c["tp"] + c["fn"] in (0, self.n):
            return "the humans gave one verdict only"
        return "the judge gave one verdict only"

    def failing_kappas(self, min_kappa: float) -> list[str]:
        """The κs a `--min-kappa` gate fails, each on its own: below it, or undefined."""
        failing = []
        if math.isnan(self.kappa) or self.kappa < min_kappa:
            failing.append("the fault reviewer's κ" if self.kind == "fault" else "κ")
        reviewer = self.reviewer
        if reviewer is not None and reviewer is not self and reviewer.failing_kappas(min_kappa):
            failing.append("the fault reviewer's κ")
        return failing

    def passes(self, min_kappa: float | None = None) -> bool:
        """Whether it passes a CI gate: no judge error, and κ reaches `min_kappa` if given."""
        return not self.errors and (min_kappa is None or not self.failing_kappas(min_kappa))

    def as_dict(self) -> dict[str, Any]:
        """The calibration as the CLI's `--json` writes it (NaN as null)."""
        document: dict[str, Any] = {
            "n": self.n,
            "agreement": _number(self.agreement),
            "kappa": _number(self.kappa),
            "kappa_ci": [_number(self.kappa_ci[0]), _number(self.kappa_ci[1])],
            "labels_needed": self.labels_needed,
            "weighted_kappa": _number(self.weighted_kappa),
            "tpr": _number(self.tpr),
            "tnr": _number(self.tnr),
            "confusion": dict(self.confusion),
            "disagreements": [d.as_dict() for d in self.disagreements],
            "by_check": {name: c.as_dict() for name, c in self.by_check.items()},
            "judges_alpha": _number(self.judges_alpha),
            "judges": {name: c.as_dict() for name, c in self.judges.items()},
            "kind": self.kind,
        }
        if self.kind == "fault":
            document["party_confusion"] = self.party_confusion
            document["reviewer_disagreements"] = [d.as_dict() for d in self.reviewer_disagreements]
            document["rule_decided"] = [r.as_dict() for r in self.rule_decided]
        if self.skipped:
            document["skipped"] = list(self.skipped)
        if self.errors:
            document["errors"] = [error.as_dict() for error in self.errors]
        if self.judge_requests or self.cached_requests:
            document["judge_requests"] = self.judge_requests
            document["cached_requests"] = self.cached_requests
        if self.cost is not None:
            document["cost"] = self.cost
        if self.stopped:
            document["stopped"] = self.stopped
        return document

    def summary(self) -> str:
        """A few lines for a terminal: figures, the labels the judge erred on, the reviewer's."""
        if self.kind == "fault":
            return self._reviewer_summary()
        c = self.confusion
        judge_errors = [e for e in self.errors if e.record.check != FAULT_CHECK]
        lines = [
            f"{counted(self.n, 'labelled output')} · {self._kappa_text()} · "
            f"agreement {_pct(self.agreement)} · TPR {_pct(self.tpr)} · TNR {_pct(self.tnr)}",
            f"  judge vs human: tp {c['tp']} · fp {c['fp']} · fn {c['fn']} · tn {c['tn']}",
        ]
        if self.labels_needed is not None and self.labels_needed > self.n:
            lines.append(
                f"  κ ± {PRECISION:g} needs about {self.labels_needed:,} labels ({self.n:,} so far)"
            )
        if judge_errors:
            lines.append(
                f"  judge errors: {counted(len(judge_errors), 'labelled output')} not judged "
                "(never counted as verdicts)"
            )
        if self.weighted_kappa is not None:
            lines.append(f"  weighted κ (quadratic, score labels): {_fmt(self.weighted_kappa)}")
        if self.judges_alpha is not None:
            lines.append(f"  jury: Krippendorff's α {_fmt(self.judges_alpha)}")
            for name, juror in self.judges.items():
                lines.append(
                    f"    {name}: κ {_fmt(juror.kappa)} · agreement {_pct(juror.agreement)}"
                )
        judged_checks = {n: p for n, p in self.by_check.items() if p.kind == "judge"}
        if len(judged_checks) > 1:
            for name, part in judged_checks.items():
                lines.append(f"  {name}: n {part.n} · κ {_fmt(part.kappa)}")
        reviewer = self.reviewer
        if reviewer is not None:
            lines.append(reviewer._reviewer_summary())
        return "\n".join(lines)

    def _reviewer_summary(self) -> str:
        """The fault reviewer's lines (the matrix: rows the human's party, columns its own)."""
        lines = [
            f"fault reviewer: {counted(self.n, 'labelled conversation')} · {self._kappa_text()} · "
            f"agreement {_pct(self.agreement)}"
        ]
        if self.n and self.party_confusion is not None:
            lines.append(f"  {_MATRIX_CORNER:<{_ROW_WIDTH}}" + "".join(f"  {p}" for p in PARTIES))
            for human in PARTIES:
                row = self.party_confusion[human]
                counts = "".join(f"  {row[p]:>{len(p)}}" for p in PARTIES)
                lines.append(f"  {human:<{_ROW_WIDTH}}{counts}")
        if self.rule_decided:
            lines.append(
                f"  {counted(len(self.rule_decided), 'labelled conversation')} left out: "
                "the rules decided them, not the reviewer"
            )
        errors = [e for e in self.errors if e.record.check == FAULT_CHECK]
        if errors:
            lines.append(
                f"  reviewer errors: {counted(len(errors), 'labelled conversation')} not "
                "reviewed (never counted as verdicts)"
            )
        return "\n".join(lines)

    def _kappa_text(self) -> str:
        reason = self.kappa_undefined
        if reason is not None:
            return f"κ undefined ({reason})"
        low, high = self.kappa_ci
        # "to", not a dash: a bound may be negative ("-0.28 to 0.87").
        return f"κ {_fmt(self.kappa)} (95% CI {_fmt(low)} to {_fmt(high)})"


def _statistics(judged: Sequence[JudgedLabel], *, seed: int) -> Calibration:
    human = [j.human_passed for j in judged]
    verdicts = [j.judge.passed for j in judged]
    confusion = Confusion.of(human, verdicts)
    scored = [
        (j.record.score, j.judge.score)
        for j in judged
        if j.record.score is not None and j.judge.score is not None
    ]
    weighted = weighted_score_kappa(*zip(*scored, strict=True)) if scored else None
    return Calibration(
        n=confusion.n,
        agreement=confusion.agreement,
        kappa=confusion.kappa,
        kappa_ci=kappa_interval(human, verdicts, seed=seed),
        labels_needed=labels_needed(confusion, PRECISION),
        weighted_kappa=weighted,
        tpr=confusion.tpr,
        tnr=confusion.tnr,
        confusion=confusion.as_dict(),
        disagreements=[j for j in judged if not j.agrees],
        judged=list(judged),
    )


_MATRIX_CORNER = "human \\ reviewer"
_ROW_WIDTH = len(_MATRIX_CORNER)


def _fault_statistics(faults: Sequence[ReviewedLabel], *, seed: int) -> Calibration:
    """The fault reviewer's agreement over the three parties, where the rules did not
    decide; κ is NaN when either side named one party only (no chance-corrected measure)."""
    reviewed = [f for f in faults if f.fault.by != "rule"]
    human = [str(r.record.label) for r in reviewed]
    verdicts = [r.fault.party for r in reviewed]
    matrix: dict[str, dict[str, int]] = {row: dict.fromkeys(PARTIES, 0) for row in PARTIES}
    for said, found in zip(human, verdicts, strict=True):
        matrix[said][found] += 1
    n = len(reviewed)
    one_sided = len(set(human)) < 2 or len(set(verdicts)) < 2
    return Calibration(
        kind="fault",
        n=n,
        agreement=sum(r.agrees for r in reviewed) / n if n else math.nan,
        kappa=math.nan if one_sided else cohen_kappa(human, verdicts, labels=PARTIES),
        kappa_ci=category_kappa_interval(human, verdicts, labels=PARTIES, seed=seed),
        weighted_kappa=None,
        tpr=math.nan,
        tnr=math.nan,
        confusion={},
        party_confusion=matrix,
        reviewed=reviewed,
        reviewer_disagreements=[r for r in reviewed if not r.agrees],
        rule_decided=[f for f in faults if f.fault.by == "rule"],
    )


def _as_juror(judged: JudgedLabel, verdict: JudgeVerdict) -> JudgedLabel:
    """The label as one juror alone judged it."""
    result = CheckResult(
        judged.judge.name, verdict.passed, verdict.score, verdict.reasoning, None, judged.threshold
    )
    return replace(judged, judge=result)


def _number(value: float | None) -> float | None:
    """A figure for the JSON: NaN as null, float noise (-3.3e-16 for 0) rounded away."""
    if value is None or math.isnan(value):
        return None
    return round(value, 12) + 0.0


def _fmt(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    # A bound of -3e-16 is float noise around 0: never show "-0.00".
    shown = f"{value:.2f}"
    return "0.00" if shown == "-0.00" else shown


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.0%}"

"""`Diff`: the current run against a baseline, matched by case name, with a noise label."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.cells import cell_len

from tui_eval.stats import fisher_exact
from tui_eval.text import one_line, pad_cells

if TYPE_CHECKING:
    from tui_eval.report import CaseResult, Report

NOISE_P = 0.05


@dataclass(slots=True)
class CaseChange:
    """How one case moved between the baseline and the current run.

    Attributes:
        p_value: Fisher's exact test on (passed, failed) sample counts of both runs.
        significant: the change is larger than sampling noise (p < 0.05).
    """

    name: str
    baseline_passed: int
    baseline_total: int
    current_passed: int
    current_total: int
    p_value: float

    @property
    def baseline_rate(self) -> float:
        """The case's pass rate in the baseline."""
        return self.baseline_passed / self.baseline_total if self.baseline_total else 0.0

    @property
    def current_rate(self) -> float:
        """The case's pass rate now."""
        return self.current_passed / self.current_total if self.current_total else 0.0

    @property
    def significant(self) -> bool:
        """Whether the change in pass rate is larger than sampling noise."""
        return self.p_value < NOISE_P

    @property
    def noise_label(self) -> str:
        """`significant` or `could be noise`, with the p-value."""
        return (
            f"significant, p={self.p_value:.3f}"
            if self.significant
            else f"could be noise, p={self.p_value:.2f}"
        )

    @property
    def flaky(self) -> bool:
        """Whether either run had both passing and failing samples."""
        return (
            0 < self.baseline_passed < self.baseline_total
            or 0 < self.current_passed < self.current_total
        )

    def describe(self) -> str:
        """`100% → 50% (4/4 → 2/4; could be noise, p=0.43; flaky)`."""
        flaky = "; flaky" if self.flaky else ""
        return (
            f"{self.baseline_rate:.0%} → {self.current_rate:.0%} "
            f"({self.baseline_passed}/{self.baseline_total} → {self.current_passed}/{self.current_total}; "
            f"{self.noise_label}{flaky})"
        )


@dataclass(slots=True)
class Diff:
    """The current run against a baseline, case by case.

    `ok` is true when nothing regressed; improvements, added and removed cases are listed
    but do not fail it.
    """

    regressions: list[CaseChange] = field(default_factory=list)
    improvements: list[CaseChange] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No case that passed in the baseline fails now."""
        return not self.regressions

    def __str__(self) -> str:

        counts = (
            f"diff: {len(self.regressions)} regression(s), {len(self.improvements)} improvement(s), "
            f"{len(self.added)} added, {len(self.removed)} removed, {len(self.unchanged)} unchanged"
        )
        lines = [counts]
        width = max((cell_len(one_line(n, 200)) for n in self._names()), default=0)
        width = min(width, 48)
        lines += [
            f"  ✗ regressed   {pad_cells(c.name, width)}  {c.describe()}" for c in self.regressions
        ]
        lines += [
            f"  ✓ improved    {pad_cells(c.name, width)}  {c.describe()}" for c in self.improvements
        ]
        lines += [f"  + added       {pad_cells(n, width)}".rstrip() for n in self.added]
        lines += [f"  - removed     {pad_cells(n, width)}".rstrip() for n in self.removed]
        return "\n".join(lines)

    def _names(self) -> list[str]:
        return [c.name for c in self.regressions + self.improvements] + self.added + self.removed


def _by_name(report: Report, which: str) -> dict[str, CaseResult]:
    counts = Counter(case.name for case in report.cases)
    dupes = [name for name, n in counts.items() if n > 1]
    if dupes:
        raise ValueError(
            f"the {which} report has duplicate case names {dupes[:5]}; give those cases distinct name= values"
        )
    return {case.name: case for case in report.cases}


def compare_reports(current: Report, baseline: Report) -> Diff:
    """The `Diff` of `current` against `baseline` (see `Report.compare`)."""
    now = _by_name(current, "current")
    before = _by_name(baseline, "baseline")
    diff = Diff()
    for name, case in now.items():
        old = before.get(name)
        if old is None:
            diff.added.append(name)
            continue
        if old.passed == case.passed:
            diff.unchanged.append(name)
            continue
        change = CaseChange(
            name,
            old.samples_passed,
            len(old.samples),
            case.samples_passed,
            len(case.samples),
            fisher_exact(
                case.samples_passed,
                len(case.samples) - case.samples_passed,
                old.samples_passed,
                len(old.samples) - old.samples_passed,
            ),
        )
        (diff.regressions if old.passed else diff.improvements).append(change)
    diff.removed = [name for name in before if name not in now]
    return diff

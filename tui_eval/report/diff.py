"""`Diff`: the current run against a baseline, matched by case name, with a noise label."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.cells import cell_len

from tui_eval.core.results import CaseResult
from tui_eval.report.left_out import (
    WHY,
    ReportLike,
    Tally,
    counts_user_faults,
    sample_count,
    tally,
)
from tui_eval.stats.proportions import (
    fisher_exact,
    fisher_power,
    holm,
    paired_test,
    samples_needed,
)
from tui_eval.util.text import one_line, pad_cells

UNCOMPARED = f"every sample of one side left out ({WHY})"
"""Why a case in both reports is not compared (`Diff.undecided`)."""

NOISE_P = 0.05
POWER = 0.8
"""The power `too few samples` and `samples_needed` refer to."""


@dataclass(slots=True)
class CaseChange:
    """How one case moved between the baseline and the current run.

    Attributes:
        p_value: Fisher's exact test on (passed, failed) sample counts of both runs.
        adjusted_p_value: `p_value` adjusted (Holm) across every case compared.
        label: `significant` (adjusted p < 0.05), `too few samples` (under 80% power at
            `power_level` to tell a change this large from noise), or `noise`.
        power_level: the strictest Holm level, 0.05 / cases compared.
        decided: whether the comparison of this case is settled.
        hint: for a case `decide()` left undecided, roughly what would decide it.
        baseline_left_out, current_left_out: samples left out of each side's counts.
    """

    name: str
    baseline_passed: int
    baseline_total: int
    current_passed: int
    current_total: int
    p_value: float
    adjusted_p_value: float = 1.0
    label: str = "noise"
    decided: bool = False
    hint: str = ""
    power_level: float = NOISE_P
    baseline_left_out: int = 0
    current_left_out: int = 0
    _needed: int | None = field(default=None, init=False, repr=False, compare=False)
    _searched: bool = field(default=False, init=False, repr=False, compare=False)

    @property
    def samples_needed(self) -> int | None:
        """Samples per side for 80% power at `power_level` to detect the observed change
        (None: no change); searched when first read, as it takes a while."""
        if not self._searched:
            fewest = min(self.baseline_total, self.current_total)
            self._needed = samples_needed(
                self.baseline_rate,
                self.current_rate,
                alpha=self.power_level,
                power=POWER,
                at_least=fewest + 1 if self.label == "too few samples" else 2,
            )
            self._searched = True
        return self._needed

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
        """Whether the change is larger than sampling noise (Holm-adjusted)."""
        return self.adjusted_p_value < NOISE_P

    @property
    def noise_label(self) -> str:
        """The label in words, with the (Holm-adjusted) p-value or the samples it needs."""
        if self.label == "significant":
            return f"significant, p={self.adjusted_p_value:.3f}"
        if self.label == "too few samples":
            needed = (
                f"; ~{self.samples_needed} per side would tell (this case)"
                if self.samples_needed
                else ""
            )
            return f"too few samples{needed}"
        if self.label in ("noise",):
            return f"could be noise, p={self.adjusted_p_value:.2f}"
        return self.label

    @property
    def flaky(self) -> bool:
        """Whether either run had both passing and failing samples."""
        return (
            0 < self.baseline_passed < self.baseline_total
            or 0 < self.current_passed < self.current_total
        )

    def counts(self) -> str:
        """`4/4 → 2/4`, with the samples left out: `4/4 → 2/3 (1 left out)`."""
        before = sample_count(self.baseline_passed, self.baseline_total, self.baseline_left_out)
        after = sample_count(self.current_passed, self.current_total, self.current_left_out)
        return f"{before} → {after}"

    def describe(self) -> str:
        """`100% → 50% (4/4 → 2/4; could be noise, p=0.43; flaky)`."""
        flaky = "; flaky" if self.flaky else ""
        return (
            f"{self.baseline_rate:.0%} → {self.current_rate:.0%} "
            f"({self.counts()}; {self.noise_label}{flaky})"
        )


@dataclass(slots=True)
class Diff:
    """The current run against a baseline, case by case; `ok` when nothing regressed."""

    regressions: list[CaseChange] = field(default_factory=list)
    improvements: list[CaseChange] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    changes: list[CaseChange] = field(default_factory=list)
    """Every case in both reports, moved or not, with its test, adjusted p-value and label."""
    delta: float = 0.0
    """The mean paired difference of the cases' sample pass rates, current − baseline."""
    delta_ci: tuple[float, float] = (0.0, 0.0)
    """The 95% interval of `delta`, inverting `p_value`'s test (excludes 0 iff p < 0.05)."""
    p_value: float = 1.0
    """The paired test of `delta` across cases (`stats.proportions.paired_test`)."""
    definition_changed: list[str] = field(default_factory=list)
    """Cases in both reports whose definition changed: their verdicts compare different things."""
    undecided: list[str] = field(default_factory=list)
    """Cases in both reports not compared: one side has every sample left out."""

    def extend(self, other: Diff) -> None:
        """Add `other`'s cases to this diff's lists (not its run-wide statistics)."""
        self.regressions.extend(other.regressions)
        self.improvements.extend(other.improvements)
        self.added.extend(other.added)
        self.removed.extend(other.removed)
        self.unchanged.extend(other.unchanged)
        self.definition_changed.extend(other.definition_changed)
        self.undecided.extend(other.undecided)

    @property
    def ok(self) -> bool:
        """No case that passed in the baseline fails now."""
        return not self.regressions

    def __str__(self) -> str:

        lines = [self.suite_line()] if self.changes else []
        counts = (
            f"diff: {len(self.regressions)} regression(s), {len(self.improvements)} improvement(s), "
            f"{len(self.added)} added, {len(self.removed)} removed, {len(self.unchanged)} unchanged"
        )
        if self.definition_changed:
            counts += f", {len(self.definition_changed)} definition changed"
        if self.undecided:
            counts += f", {len(self.undecided)} undecided"
        lines.append(counts)
        rows = [("✗ regressed  ", c.name, c.describe()) for c in self.regressions]
        rows += [("✓ improved   ", c.name, c.describe()) for c in self.improvements]
        rows += [("+ added      ", n, "") for n in self.added]
        rows += [("- removed    ", n, "") for n in self.removed]
        rows += [("~ definition changed ", n, "") for n in self.definition_changed]
        rows += [("? undecided  ", n, f"not compared: {UNCOMPARED}") for n in self.undecided]
        width = min(max((cell_len(one_line(n, 200)) for _, n, _ in rows), default=0), 48)
        lines += [f"  {mark} {pad_cells(n, width)}  {what}".rstrip() for mark, n, what in rows]
        return "\n".join(lines)

    def suite_line(self, *, label: str = "pass rate", sep: str = ", ") -> str:
        """`pass rate 81% → 72%, Δ −9 pts [−15, −3], p=0.004`."""
        if not self.changes:
            return "no case in both runs"
        n = len(self.changes)
        before = sum(c.baseline_rate for c in self.changes) / n
        after = sum(c.current_rate for c in self.changes) / n
        low, high = self.delta_ci
        return (
            f"{label} {before:.0%} → {after:.0%}{sep}Δ {points(self.delta)} pts "
            f"[{points(low)}, {points(high)}]{sep}p={self.p_value:.3f}"
        )


SUITE_SEPARATOR = " / "
"""How a case of a report that spans several suites is named in diffs: `suite / case`."""


def case_suite(report: ReportLike, case: CaseResult) -> str:
    """The suite a case belongs to: recorded on it, else its legacy `suite / ` prefix, else
    the report's name."""
    if case.suite:
        return case.suite
    suites = report.metadata.get("suites")
    if isinstance(suites, list):
        prefix = case.name.split(SUITE_SEPARATOR, 1)[0]
        if prefix in suites and SUITE_SEPARATOR in case.name:
            return prefix
    return report.name


def case_name(report: ReportLike, case: CaseResult) -> str:
    """A case's own name (without a legacy `suite / ` prefix)."""
    suite = case_suite(report, case)
    prefix = suite + SUITE_SEPARATOR
    if not case.suite and case.name.startswith(prefix):
        return case.name[len(prefix) :]
    return case.name


def spans_suites(report: ReportLike) -> bool:
    """Whether the report holds cases of more than one suite."""
    return len({case_suite(report, case) for case in report.cases}) > 1


def _keyed(report: ReportLike, which: str, by_suite: bool) -> dict[tuple[str, str], CaseResult]:
    keyed: dict[tuple[str, str], CaseResult] = {}
    dupes: list[str] = []
    for case in report.cases:
        key = (case_suite(report, case) if by_suite else "", case_name(report, case))
        if key in keyed:
            dupes.append(_label(key))
        keyed[key] = case
    if dupes:
        raise ValueError(
            f"the {which} report has duplicate case names {dupes[:5]}; give those cases distinct name= values"
        )
    return keyed


def _label(key: tuple[str, str]) -> str:
    suite, name = key
    return f"{suite}{SUITE_SEPARATOR}{name}" if suite else name


def compare_reports(
    current: ReportLike, baseline: ReportLike, *, count_user_faults: bool | None = None
) -> Diff:
    """The `Diff` of `current` against `baseline` (see `Report.compare`).

    Cases are matched by (suite, case) when either report spans several suites, else by
    name; both sides are counted under one `count_user_faults` (None: as `current`'s run did).
    """
    policy = counts_user_faults(current) if count_user_faults is None else count_user_faults
    by_suite = spans_suites(current) or spans_suites(baseline)
    now = _keyed(current, "current", by_suite)
    before = _keyed(baseline, "baseline", by_suite)
    if by_suite and not spans_suites(baseline):
        # One suite's baseline: only that suite's cases of the current report are judged.
        suites = {suite for suite, _ in before}
        now = {key: case for key, case in now.items() if key[0] in suites}
    elif by_suite and not spans_suites(current):
        # One suite's run against a baseline of several: judged against its own suite's part.
        suites = {suite for suite, _ in now}
        before = {key: case for key, case in before.items() if key[0] in suites}
    diff = Diff()
    for key, case in now.items():
        name = _label(key)
        old = before.get(key)
        if old is None or not old.samples:  # a baseline case with no samples proves nothing
            diff.added.append(name)
            continue
        old_print, new_print = old.definition_fingerprint(), case.definition_fingerprint()
        if old_print and new_print and old_print != new_print:
            diff.definition_changed.append(name)
        then = tally(old, count_user_faults=policy)
        now_ = tally(case, count_user_faults=policy)
        if then.undecided or now_.undecided:  # one side never tested the agent
            diff.undecided.append(name)
            continue
        change = _change(name, then, now_)
        diff.changes.append(change)
        if then.verdict == now_.verdict:
            diff.unchanged.append(name)
        else:
            (diff.regressions if then.verdict else diff.improvements).append(change)
    diff.removed = [_label(key) for key in before if key not in now]
    _settle_statistics(diff)
    return diff


def _change(name: str, old: Tally, new: Tally) -> CaseChange:
    """How a case moved, by its counted samples, with Fisher's exact test."""
    return CaseChange(
        name,
        old.passed,
        old.counted,
        new.passed,
        new.counted,
        fisher_exact(new.passed, new.counted - new.passed, old.passed, old.counted - old.passed),
        baseline_left_out=old.left_out,
        current_left_out=new.left_out,
    )


def _settle_statistics(diff: Diff) -> None:
    """Label every `CaseChange` (Holm-adjusted) and fill the suite-level delta."""
    changes = diff.changes
    # Per case, for the test its label uses: Fisher at the level Holm gives the first case
    # of the family (the strictest), so the judgement holds wherever it ranks.
    level = NOISE_P / max(1, len(changes))
    for change, adjusted in zip(changes, holm([c.p_value for c in changes]), strict=True):
        change.adjusted_p_value = adjusted
        change.power_level = level
        fewest = min(change.baseline_total, change.current_total)
        if adjusted < NOISE_P:
            change.label = "significant"
        elif change.baseline_rate != change.current_rate and (
            fisher_power(change.baseline_rate, change.current_rate, fewest, level) < POWER
        ):
            change.label = "too few samples"
        else:
            change.label = "noise"
        change.decided = change.label == "significant"
    differences = [c.current_rate - c.baseline_rate for c in changes]
    diff.delta = sum(differences) / len(differences) if differences else 0.0
    diff.p_value, low, high = paired_test(differences, [_noise(c) for c in changes])
    diff.delta_ci = (low, high)


def _noise(change: CaseChange) -> float:
    """The sampling variance of a case's rate difference (rates shrunk half a sample towards
    1/2, so 0% or 100% still counts as uncertain)."""
    variance = 0.0
    for passed, total in (
        (change.baseline_passed, change.baseline_total),
        (change.current_passed, change.current_total),
    ):
        if total:
            rate = (passed + 0.5) / (total + 1)
            variance += rate * (1 - rate) / total
    return variance


def points(value: float) -> str:
    """A rate difference in percentage points, with a real minus: `−9`, `+3`, `0`."""
    whole = round(value * 100)
    return f"{whole:+d}".replace("-", "−") if whole else "0"

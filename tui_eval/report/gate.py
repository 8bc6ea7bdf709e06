"""CI gating: what fails a build (`--fail-on`), and how a run is split into shards."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from tui_eval.report.diff import Diff
from tui_eval.report.left_out import all_left_out
from tui_eval.report.quarantine import quarantined
from tui_eval.report.report import Report
from tui_eval.util.text import one_line


class FailOn(enum.Enum):
    """Conditions that fail a CI run."""

    FAILURES = "failures"
    """A case below its pass threshold."""
    REGRESSIONS = "regressions"
    """A case that passed in the baseline fails now."""
    REMOVED = "removed"
    """A baseline case is gone from the run."""
    DEFINITION_CHANGED = "definition-changed"
    """A case of the same name has a different definition than in the baseline."""


RUN_DEFAULT = frozenset({FailOn.FAILURES, FailOn.REGRESSIONS})
COMPARE_DEFAULT = frozenset({FailOn.REGRESSIONS})


def parse_fail_on(text: str) -> frozenset[FailOn]:
    """`failures,regressions` → the set of conditions.

    Raises:
        ValueError: an unknown condition, or none at all (a blank CI variable must not
            switch the gate off).
    """
    known = ", ".join(c.value for c in FailOn)
    chosen = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            chosen.add(FailOn(part))
        except ValueError:
            raise ValueError(f"unknown --fail-on value {part!r}; known: {known}") from None
    if not chosen:
        raise ValueError(f"--fail-on {text!r} names no condition; give one or more of: {known}")
    return frozenset(chosen)


def gate_failures(
    fail_on: frozenset[FailOn], report: Report | None, diff: Diff | None
) -> list[str]:
    """Why the gate fails, one reason per condition met (empty: it passes); quarantined and
    undecided cases do not gate."""
    reasons = []
    exempt = quarantined(report) if report is not None else {}
    if FailOn.FAILURES in fail_on and report is not None and not report.passed:
        failing = [
            c for c in report.cases if not c.passed and not c.undecided and c.name not in exempt
        ]
        if failing:
            reasons.append(f"{len(failing)} case(s) failed")
        elif report.cancelled:
            reasons.append("the run was cancelled")
    if diff is not None:
        regressions = [c for c in diff.regressions if c.name not in exempt]
        if FailOn.REGRESSIONS in fail_on and regressions:
            reasons.append(f"{len(regressions)} regression(s)")
        if FailOn.REMOVED in fail_on and diff.removed:
            reasons.append(f"{len(diff.removed)} baseline case(s) removed")
        if FailOn.DEFINITION_CHANGED in fail_on and diff.definition_changed:
            reasons.append(f"{len(diff.definition_changed)} case definition(s) changed")
    return reasons


def not_gating(report: Report) -> list[str]:
    """One line per case of `report` that does not gate: every sample was left out."""
    return [
        f"undecided (does not gate): {one_line(case.name, 120)} — {all_left_out(case)}"
        for case in report.cases
        if case.undecided
    ]


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard `index` (1-based) of `total`."""

    index: int
    total: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`2/3` → Shard(2, 3).

        Raises:
            ValueError: not `i/n` with 1 <= i <= n.
        """
        left, sep, right = text.partition("/")
        try:
            index, total = int(left), int(right)
        except ValueError:
            index = total = 0
        if not sep or not 1 <= index <= total:
            raise ValueError(f"--shard takes i/n with 1 <= i <= n, such as 2/3; got {text!r}")
        return cls(index, total)

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def assign_shards(keys: Sequence[tuple[str, str]], total: int) -> dict[tuple[str, str], int]:
    """The shard (1-based) of every (suite, case): a pure function of the keys, so every CI
    job computes the same split; a stable hash order means a new case reshuffles nothing."""
    ordered = sorted(
        set(keys), key=lambda key: (hashlib.sha256("\0".join(key).encode()).hexdigest(), key)
    )
    return {key: position % total + 1 for position, key in enumerate(ordered)}

"""Deciding a Diff's changed cases: the `m` of the app's Diff screen, as the core does it.

Which cases a decision samples, the request of that journaled decide run (against the
baseline shown: its file, or a previous run's report), and how the decision's verdicts
settle the changes of the Diff it started from. The app only draws the outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tui_eval.core.settings import RunSettings
from tui_eval.report.diff import CaseChange, Diff
from tui_eval.service.request import DecideRun, RunRequest
from tui_eval.util.text import one_line


def cases_to_decide(diff: Diff) -> list[str]:
    """The changed cases a decision samples: regressions, improvements, and the cases
    with too few samples to tell, by name."""
    changed = {c.name for c in diff.regressions + diff.improvements}
    changed |= {c.name for c in diff.changes if c.label == "too few samples"}
    return sorted(changed)


def decide_request(
    launch: RunRequest,
    names: Iterable[str],
    *,
    baseline_path: Path | None,
    against: Path | None,
) -> RunRequest:
    """The decide run of `names`, with the launch request's settings: against the baseline
    file at `baseline_path`, or (without one) the report file `against` — a resume reads
    the same file again. It runs in this process, case by case as the decision needs."""
    return launch.but(
        kind=DecideRun(against=str(against) if against is not None else None),
        cases=tuple(names),
        baseline=str(baseline_path) if baseline_path is not None else None,
        settings=RunSettings(fail_fast=False, executor=None),
        shard=None,
    )


def settle(diff: Diff, decided: Diff) -> list[CaseChange]:
    """Give each change of `diff` its verdict from the decision `decided` (label and
    whether it is decided); the changes settled, in `diff`'s order."""
    verdicts = {change.name: change for change in decided.changes}
    settled = []
    for change in diff.changes:
        found = verdicts.get(change.name)
        if found is not None:
            change.label, change.decided = found.label, found.decided
            settled.append(change)
    return settled


def verdicts_line(decided: Diff, width: int = 300) -> str:
    """One line of the decision's verdicts, case by case."""
    return one_line(", ".join(f"{c.name}: {c.label}" for c in decided.changes), width)

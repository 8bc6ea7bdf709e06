"""Deciding a Diff's changed cases (the `m` of the app's Diff screen); the app only draws."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tui_eval.core.settings import RunSettings
from tui_eval.report.diff import CaseChange, Diff
from tui_eval.service.request import DecideRun, RunRequest
from tui_eval.util.text import one_line


def cases_to_decide(diff: Diff) -> list[str]:
    """The changed cases a decision samples (also those with too few samples to tell)."""
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
    """The decide run of `names` with the launch request's settings, against the baseline
    file at `baseline_path`, else the report file `against`; always in this process."""
    return launch.but(
        kind=DecideRun(against=str(against) if against is not None else None),
        cases=tuple(names),
        baseline=str(baseline_path) if baseline_path is not None else None,
        settings=RunSettings(fail_fast=False, executor=None),
        shard=None,
    )


def settle(diff: Diff, decided: Diff) -> list[CaseChange]:
    """Give each change of `diff` its verdict from `decided`; returns the changes settled."""
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

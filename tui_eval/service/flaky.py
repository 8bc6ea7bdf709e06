"""A case's history across the runs of its suite, and whether it is flaky.

A case is *flaky* when its verdict changed at least twice over its last runs (once is a
regression or a fix) and the 95% Wilson interval of its pass rate over all their samples
excludes both 0 and 1."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from tui_eval.service.request import PlainRun
from tui_eval.service.store import RunHistory
from tui_eval.stats.proportions import wilson_interval

MIN_RUNS = 3
"""Runs a case needs before it can be called flaky."""
MIN_FLIPS = 2
"""Changes of verdict a flaky case shows: one is a regression or a fix."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """One run of a case: its samples that passed, of how many, and its verdict."""

    run_id: str
    started_at: float
    passed: int
    total: int
    verdict: bool


@dataclass(slots=True)
class CaseHistory:
    """A case over its suite's recorded runs, newest first.

    Attributes:
        case: the case's name.
        runs: one `RunOutcome` per run that ran the case.
    """

    case: str
    runs: list[RunOutcome] = field(default_factory=list)

    @property
    def flips(self) -> int:
        """How often the verdict changed from one run to the next."""
        verdicts = [run.verdict for run in self.runs]
        return sum(1 for a, b in itertools.pairwise(verdicts) if a != b)

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of the pass rate over every sample of its runs."""
        return wilson_interval(sum(r.passed for r in self.runs), sum(r.total for r in self.runs))

    @property
    def flaky(self) -> bool:
        """Whether its runs disagree beyond sampling noise (see the module docstring)."""
        if len(self.runs) < MIN_RUNS or self.flips < MIN_FLIPS:
            return False
        low, high = self.interval
        return low > 0.0 and high < 1.0

    def describe(self) -> str:
        """One line, its pass rate run by run, newest first, and its flips."""
        if not self.runs:
            return "no recorded run"
        rates = " · ".join(f"{run.passed / run.total:.0%}" for run in self.runs)
        return f"{len(self.runs)} run(s), newest first: {rates} · {self.flips} flip(s)"


def case_histories(
    history: RunHistory, suite: str, thresholds: dict[str, float], *, limit: int = 20
) -> dict[str, CaseHistory]:
    """Every case's history over the last `limit` finished plain runs of `suite`, from the
    runs' summaries; `thresholds` are the cases' pass thresholds (default 1.0)."""
    found: dict[str, CaseHistory] = {}
    seen = 0
    for record in history.runs():
        if (
            record.suite != suite
            or not record.finished
            or not isinstance(record.request.kind, PlainRun)
        ):
            continue
        try:
            rates = record.summary().case_rates
        except Exception:  # an unreadable run is left out of the history, not fatal
            continue
        seen += 1
        for case, (passed, total) in rates.items():
            if total == 0:
                continue
            verdict = passed / total >= thresholds.get(case, 1.0) - 1e-12
            found.setdefault(case, CaseHistory(case)).runs.append(
                RunOutcome(record.run_id, record.started_at, passed, total, verdict)
            )
        if seen >= limit:
            break
    return found

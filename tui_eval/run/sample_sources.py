"""Where a run's samples come from: `AgentRuns` calls the agent (`evaluate`), `SavedRuns`
checks the saved runs of an earlier report again without it (`recheck`, calibration)."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tui_eval.agents.sources import make_runner
from tui_eval.core.case_plan import CasePlan
from tui_eval.core.cases import Case
from tui_eval.core.results import SampleResult
from tui_eval.report.report import Report
from tui_eval.run.sample_runner import Pacer, SampleRunner


class AgentRuns:
    """Every sample is a fresh run of the agent (an `Agent`, a factory, a callable...)."""

    def __init__(self, agent: Any) -> None:
        self._call = make_runner(agent)

    def cases(self, cases: list[Case]) -> list[Case]:
        return cases

    def produce(
        self, runner: SampleRunner, index: int, sample_index: int, plan: CasePlan, pacer: Pacer
    ) -> Awaitable[SampleResult]:
        return runner.run_agent(self._call, index, sample_index, plan, pacer)


class SavedRuns:
    """The saved samples of each case are checked again instead of calling the agent."""

    def __init__(self, saved: Mapping[str, Sequence[SampleResult]]) -> None:
        self.saved = saved

    @classmethod
    def of(cls, report: Report) -> SavedRuns:
        """The saved samples of `report`."""
        return cls({case.name: case.samples for case in report.cases})

    def cases(self, cases: list[Case]) -> list[Case]:
        saved = self.saved
        return [replace(c, samples=len(saved[c.label])) for c in cases if saved.get(c.label)]

    def produce(
        self, runner: SampleRunner, index: int, sample_index: int, plan: CasePlan, pacer: Pacer
    ) -> Awaitable[SampleResult]:
        stored = self.saved[plan.case.label][sample_index]
        return runner.recheck(stored, index, sample_index, plan)


def recheck_metadata(report: Report) -> dict[str, Any]:
    """What a rechecked report records about the report it rechecked."""
    return {**report.metadata, "rechecked_from": report.started_at}

"""The runner's events: every state change of a run, as typed, cheap dataclasses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tui_eval.agents.http.limits import LimitStatus
    from tui_eval.core.cases import Case
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report

SampleState = Literal["queued", "running", "judging", "retrying", "done"]


@dataclass(slots=True)
class RunStarted:
    """The run began: every sample of every case is queued.

    Attributes:
        resumed: samples finished by an earlier, interrupted run (counted as done).
        max_cost: the run's budget (None: no budget).
    """

    name: str
    cases: list[Case]
    total_samples: int
    started_at: float
    resumed: list[SampleResult] = field(default_factory=list)
    max_cost: float | None = None


@dataclass(slots=True)
class SampleStateChanged:
    """A sample moved to `running`, `judging` (its checks run) or `retrying` (provider backoff)."""

    case_index: int
    sample_index: int
    state: SampleState


@dataclass(slots=True)
class SampleFinished:
    """A sample is done; `sample` holds its outcome."""

    case_index: int
    sample: SampleResult


@dataclass(slots=True)
class CaseFinished:
    """Every sample of a case is done."""

    case_index: int
    result: CaseResult


@dataclass(slots=True)
class RunFinished:
    """The run ended (completely, or cancelled with a partial report)."""

    report: Report


@dataclass(slots=True)
class RunStatus:
    """Twice a second while the run calls APIs: their rate limiters and the spend.

    Attributes:
        limits: one status per API quota the run used.
        spent: dollars spent so far (None: nothing priced yet).
        max_cost: the run's budget (None: no budget).
    """

    limits: list[LimitStatus]
    spent: float | None = None
    max_cost: float | None = None


Event = RunStarted | SampleStateChanged | SampleFinished | CaseFinished | RunFinished | RunStatus
EventHandler = Callable[[Event], None]

"""`RunState`: what a run looks like right now, the one fold of its events front-ends show."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from tui_eval.agents.http.limits import LimitStatus
from tui_eval.agents.messages import Usage
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.report import Report
from tui_eval.run.events import (
    CaseFinished,
    Event,
    RunFinished,
    RunStarted,
    RunStatus,
    SampleFinished,
    SampleStateChanged,
)

Clock = Callable[[], float]


@dataclass(slots=True)
class InFlight:
    """A sample being worked on now."""

    case_index: int
    sample_index: int
    state: str
    since: float


@dataclass
class RunState:
    """Counters, per-case results and in-flight samples of one run (live or loaded).

    Attributes:
        name: the suite's name.
        cases: one `CaseResult` per case, filled as samples finish.
        in_flight: samples running, judging or retrying now, by (case, sample).
        report: the final report, once the run ended.
    """

    name: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    # Counters are of samples (cases have their own `passed`, a verdict).
    samples_total: int = 0
    samples_done: int = 0
    samples_passed: int = 0
    samples_failed: int = 0
    samples_errored: int = 0
    samples_timed_out: int = 0
    samples_resumed: int = 0
    """Samples an earlier, interrupted run had finished (they do not count in the rate)."""
    samples_left_out: int = 0
    """Samples left out of the pass rates (not in the agent's failure counters)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    max_cost: float | None = None
    samples_unpriced: int = 0
    """Finished samples without a price: with any, `max_cost` cannot be held to."""
    first_unpriced: SampleResult | None = None
    samples_cached: int = 0
    limits: list[LimitStatus] = field(default_factory=list)
    """The rate limiters of the APIs the run calls, as of the last `RunStatus`."""
    started: float = 0.0
    finished: float | None = None
    in_flight: dict[tuple[int, int], InFlight] = field(default_factory=dict)
    report: Report | None = None
    read_only: bool = False
    clock: Clock = time.monotonic
    versions: list[int] = field(default_factory=list)
    """Bumped whenever a case changes, so views can cache what they drew of it."""
    _dirty: set[int] = field(default_factory=set)
    _structure_changed: bool = True
    _index: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_report(cls, report: Report, *, clock: Clock = time.monotonic) -> RunState:
        """A finished, read-only state showing a saved report."""
        state = cls(report.name, clock=clock, read_only=True)
        state.cases = report.cases
        state.samples_total = sum(max(c.planned, len(c.samples)) for c in report.cases)
        for case in report.cases:
            for sample in case.samples:
                state._count(sample)
        state.started = 0.0
        state.finished = report.duration_s
        state.report = report
        state._index = {c.name: i for i, c in enumerate(report.cases)}
        state.versions = [0] * len(report.cases)
        state._dirty = set(range(len(report.cases)))
        return state

    # -- events --------------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        """Summed usage of the finished samples (judges included)."""
        return Usage(self.input_tokens, self.output_tokens)

    def apply(self, event: Event) -> None:
        """Fold one runner event into the state (cheap: no rendering happens here)."""
        # The two per-sample events come first and stay lean: they arrive thousands of
        # times a second on a fast suite, on the app's own event loop.
        kind = type(event)
        if kind is SampleFinished:
            finished = cast(SampleFinished, event)
            index = finished.case_index
            sample = finished.sample
            self.in_flight.pop((index, sample.index), None)
            self.cases[index].samples.append(sample)
            self._count(sample)
            self.versions[index] += 1
            self._dirty.add(index)
        elif kind is SampleStateChanged:
            changed = cast(SampleStateChanged, event)
            index = changed.case_index
            key = (index, changed.sample_index)
            current = self.in_flight.get(key)
            if current is None:
                self.in_flight[key] = InFlight(
                    index, changed.sample_index, changed.state, self.clock()
                )
            else:
                current.state = changed.state
            self.versions[index] += 1
            self._dirty.add(index)
        elif isinstance(event, RunStarted):
            self.name = event.name
            self.cases = [
                CaseResult(
                    case.label,
                    [],
                    pass_threshold=case.pass_threshold,
                    planned=case.samples,
                    metadata=dict(case.metadata),
                )
                for case in event.cases
            ]
            self._index = {c.name: i for i, c in enumerate(self.cases)}
            self.versions = [0] * len(self.cases)
            for sample in event.resumed:
                position = self._index.get(sample.case_name)
                if position is not None:
                    self.cases[position].samples.append(sample)
                    self._count(sample)
            self.samples_total = event.total_samples
            self.max_cost = event.max_cost
            self.samples_resumed = len(event.resumed)
            self.started = self.clock()
            self._structure_changed = True
            self._dirty = set(range(len(self.cases)))
        elif isinstance(event, CaseFinished):
            self.versions[event.case_index] += 1
            self._dirty.add(event.case_index)
        elif isinstance(event, RunStatus):
            self.limits = event.limits
            self.max_cost = event.max_cost
        elif isinstance(event, RunFinished):
            self.limits = []
            self.report = event.report
            self.finished = self.clock() - self.started
            self.in_flight.clear()
            if event.report.priced:
                self.cost = event.report.cost
            self.versions = [v + 1 for v in self.versions]
            self._dirty = set(range(len(self.cases)))

    def _count(self, sample: SampleResult) -> None:
        self.samples_done += 1
        status = sample.status
        if status == "passed":
            self.samples_passed += 1
        elif sample.excluded:  # the user simulator's failure: not the agent's
            self.samples_left_out += 1
        elif status == "error":
            self.samples_errored += 1
        elif status == "timeout":
            self.samples_timed_out += 1
        else:
            self.samples_failed += 1
        usage = sample.usage
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if sample.cost is not None:
            self.cost = (self.cost or 0.0) + sample.cost
        else:
            self.samples_unpriced += 1
            if self.first_unpriced is None:
                self.first_unpriced = sample
        if sample.cached:
            self.samples_cached += 1

    # -- reading ---------------------------------------------------------------------------
    @property
    def budget_unenforced(self) -> bool:
        """Whether the run has a budget it cannot hold to: a sample finished unpriced."""
        return self.max_cost is not None and self.samples_unpriced > 0

    def take_dirty(self) -> set[int]:
        """The cases changed since the last call."""
        dirty, self._dirty = self._dirty, set()
        return dirty

    def take_structure_changed(self) -> bool:
        """Whether the set of cases changed (the table must be rebuilt)."""
        changed, self._structure_changed = self._structure_changed, False
        return changed

    @property
    def running(self) -> bool:
        """Whether the run is still going."""
        return self.report is None and not self.read_only

    @property
    def elapsed(self) -> float:
        """Seconds since the run started (its duration once finished)."""
        if self.finished is not None:
            return self.finished
        return self.clock() - self.started if self.started else 0.0

    @property
    def rate(self) -> float:
        """Samples finished per second by this run (a resumed run's earlier ones excluded)."""
        elapsed = self.elapsed
        return (self.samples_done - self.samples_resumed) / elapsed if elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate (None before the first sample)."""
        if not self.running:
            return 0.0
        rate = self.rate
        return (self.samples_total - self.samples_done) / rate if rate > 0 else None

    def case_status(self, index: int) -> str:
        """`queued`, `running`, `judging`, `retrying`, `passed`, `failed`, `undecided`,
        `incomplete` or `not run`."""
        case = self.cases[index]
        for (case_index, _), flight in self.in_flight.items():
            if case_index == index:
                return flight.state
        if len(case.samples) >= case.planned:
            if case.undecided:
                return "undecided"
            return "passed" if case.passed else "failed"
        if not self.running:
            return "incomplete" if case.samples else "not run"
        return "queued"

    def index_of(self, name: str) -> int | None:
        """The index of the case called `name`."""
        return self._index.get(name)

    def failing_samples(self) -> list[tuple[int, int]]:
        """(case, sample) positions of every failing sample, in table order."""
        return [
            (ci, si)
            for ci, case in enumerate(self.cases)
            for si, sample in enumerate(case.samples)
            if not sample.passed
        ]

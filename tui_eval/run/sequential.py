"""Run until decided: sample a case until a test that may be looked at after every sample
settles "regression" or "no regression", or the budget runs out.

The per-case tests live in `tui_eval.stats.case_decisions`. Error control is family-wise:
each case gets α/n (Bonferroni); "regression" and "no regression within the margin" are
disjoint claims, so each gets the case's whole share."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

import anyio

from tui_eval.core.budget import CostBudget
from tui_eval.core.cases import Case
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.core.settings import MaxCost, RunSettings, SettingKeywords, resolve
from tui_eval.report.diff import Diff
from tui_eval.report.left_out import is_left_out
from tui_eval.report.report import Report
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.events import EventHandler
from tui_eval.stats.case_decisions import (
    ALPHA,
    DEFAULT_MARGIN,
    judge_against_baseline,
    judge_pairs,
    next_batch,
)
from tui_eval.stats.two_sample import ComparisonVerdict, regression_plan

RoundRunner = Callable[
    [list[Case], dict[str, list[SampleResult]], CostBudget | None], Awaitable[Report]
]
"""Runs one round: `(cases, done, budget)` → the report of `cases` at their sample counts,
keeping the samples in `done` (by case name) and running only the missing ones."""


@dataclass(slots=True, kw_only=True)
class Decision:
    """The outcome of sampling until decided.

    Attributes:
        report: every sample of the current agent (of agent B, for an A/B run).
        diff: the comparison; each `CaseChange` says how it stands (`label`, `decided`).
        other: agent A's samples, for an A/B run.
    """

    report: Report
    diff: Diff
    other: Report | None = None


def _round_runner(
    agent: Any, settings: RunSettings, name: str | None, on_event: EventHandler | None
) -> RoundRunner:
    async def run_round(
        cases: list[Case], done: dict[str, list[SampleResult]], budget: CostBudget | None
    ) -> Report:
        evaluation = Evaluation(
            agent,
            cases,
            settings=settings.replace(samples=None, max_cost=budget),
            name=name,
            on_event=on_event,
            done=done,
        )
        return await evaluation.run()

    return run_round


async def decide(
    agent: Any,
    cases: Iterable[Case],
    baseline: Report,
    *,
    settings: RunSettings | None = None,
    alpha: float = ALPHA,
    margin: float = DEFAULT_MARGIN,
    on_event: EventHandler | None = None,
    **given: Unpack[SettingKeywords],
) -> Diff:
    """Sample each case until its comparison with `baseline` is decided.

    Every case first runs its own samples; undecided cases then get a few more at a time
    until a test says "regression" or "no regression" (within `margin` of the baseline's
    rate), or the case reaches `max_samples`, or the spend reaches `max_cost`. The chance
    that any case of an A/A run is called a regression is at most `alpha`.

    Args:
        settings: how the rounds run; any field may be `given` by name over it.
        on_event: receives the events of every round (each round is a run of its own).

    Returns:
        The `Diff` against `baseline`; each `CaseChange` has its `label`, `decided` and a
        `hint` of what budget or baseline would decide an undecided case.
    """
    chosen = resolve(settings, **given)
    decision = await decide_in_rounds(
        _round_runner(agent, chosen, None, on_event),
        list(cases),
        baseline,
        chosen,
        alpha=alpha,
        margin=margin,
    )
    return decision.diff


async def decide_in_rounds(
    run_round: RoundRunner,
    cases: list[Case],
    baseline: Report,
    settings: RunSettings,
    *,
    alpha: float,
    margin: float,
    done: Mapping[str, Sequence[SampleResult]] | None = None,
) -> Decision:
    """`decide()` over any way of running rounds; samples already in `done` (a resumed run)
    count. User-fault samples are left out of both sides' tests unless
    `settings.count_user_faults`, but still count under `max_samples` (they were paid for)."""
    max_samples, count_user_faults = settings.max_samples, settings.count_user_faults
    if not 0 < alpha < 1:
        raise ValueError(f"decide() needs 0 < alpha < 1; got alpha={alpha}")
    by_name = {case.name: case for case in baseline.cases}
    compared = [c for c in cases if c.label in by_name]
    per_case = alpha / max(1, len(compared))
    budget = _shared_budget(settings.max_cost, done)
    rounds = _Rounds(run_round, cases, budget, done)
    before = {
        case.label: _outcomes(by_name[case.label].samples, count_user_faults) for case in compared
    }
    sizes = {
        (len(before[case.label]), max(max_samples, case.samples))
        for case in compared
        if any(before[case.label])
    }
    async with anyio.create_task_group() as group:
        group.start_soon(_calibrate, sizes, per_case)
        await rounds.first()

    def verdict(case: Case, *, exhausted: bool) -> ComparisonVerdict:
        old = before[case.label]
        return judge_against_baseline(
            sum(old),
            len(old),
            _outcomes(rounds.samples(case), count_user_faults),
            alpha=per_case,
            margin=margin,
            exhausted=exhausted,
            baseline_samples=old,
            horizon=max(max_samples, case.samples),
        )

    def still_open() -> list[Case]:
        # Only a plain "undecided" case can still move: "baseline too small" never will.
        return [
            case
            for case in compared
            if len(rounds.samples(case)) < max_samples
            and verdict(case, exhausted=False).label == "undecided"
        ]

    while rounds.can_go_on():
        # The verdicts of many cases with long histories take a while: off the event loop.
        pending = await anyio.to_thread.run_sync(still_open)
        if not pending:
            break
        await rounds.more(pending, max_samples)
    current = rounds.report()
    verdicts = await anyio.to_thread.run_sync(
        lambda: {case.label: verdict(case, exhausted=True) for case in compared}
    )
    diff = _labelled_diff(current, baseline, verdicts, count_user_faults)
    return Decision(report=current, diff=diff)


async def compare_agents(
    agent_a: Any,
    agent_b: Any,
    cases: Iterable[Case],
    *,
    settings: RunSettings | None = None,
    alpha: float = ALPHA,
    margin: float = DEFAULT_MARGIN,
    on_event: EventHandler | None = None,
    **given: Unpack[SettingKeywords],
) -> Diff:
    """A/B two agents, sampling both until decided, with `decide()`'s error control.

    `agent_a` plays the baseline: `Diff.delta` is b − a. Sample i of A is paired with sample
    i of B and both run at about the same time (each side at half the concurrency), so
    drift in the API falls on both. `max_cost` bounds both sides together; `on_event`
    receives the events of B's rounds.
    """
    chosen = resolve(settings, **given)
    side = chosen.replace(concurrency=paired_concurrency(chosen.concurrency))
    decision = await compare_in_rounds(
        _round_runner(agent_a, side, None, None),
        _round_runner(agent_b, side, None, on_event),
        list(cases),
        chosen,
        alpha=alpha,
        margin=margin,
    )
    return decision.diff


async def compare_in_rounds(
    run_a: RoundRunner,
    run_b: RoundRunner,
    cases: list[Case],
    settings: RunSettings,
    *,
    alpha: float,
    margin: float,
    done_a: Mapping[str, Sequence[SampleResult]] | None = None,
    done_b: Mapping[str, Sequence[SampleResult]] | None = None,
) -> Decision:
    """`compare_agents()` over any way of running rounds; samples in `done_a`/`done_b` count."""
    max_samples, count_user_faults = settings.max_samples, settings.count_user_faults
    per_case = alpha / max(1, len(cases))
    budget = _shared_budget(settings.max_cost, done_a, done_b)
    side_a = _Rounds(run_a, cases, budget, done_a)
    side_b = _Rounds(run_b, cases, budget, done_b)
    async with anyio.create_task_group() as group:
        group.start_soon(side_a.first)
        group.start_soon(side_b.first)

    def verdict(case: Case) -> ComparisonVerdict:
        pairs = [
            (a.passed, b.passed)
            for a, b in zip(side_a.samples(case), side_b.samples(case), strict=False)
            if not is_left_out(a, count_user_faults=count_user_faults)
            and not is_left_out(b, count_user_faults=count_user_faults)
        ]
        return judge_pairs(
            [a for a, _ in pairs], [b for _, b in pairs], alpha=per_case, margin=margin
        )

    def still_open() -> list[Case]:
        return [
            case
            for case in cases
            if len(side_b.samples(case)) < max_samples and not verdict(case).decided
        ]

    def final() -> dict[str, ComparisonVerdict]:
        verdicts = {}
        for case in cases:
            found = verdict(case)
            if not found.decided:
                found = dataclasses.replace(found, label="undecided: budget")
            verdicts[case.label] = found
        return verdicts

    while side_a.can_go_on() and side_b.can_go_on():
        pending = await anyio.to_thread.run_sync(still_open)  # off the event loop
        if not pending:
            break
        # Each side's targets are read from the other's counts before either round runs.
        async with anyio.create_task_group() as group:
            group.start_soon(functools.partial(side_a.more, pending, max_samples, pair=side_b))
            group.start_soon(functools.partial(side_b.more, pending, max_samples, pair=side_a))
    verdicts = await anyio.to_thread.run_sync(final)
    report_a, report_b = side_a.report(), side_b.report()
    diff = _labelled_diff(report_b, report_a, verdicts, count_user_faults)
    return Decision(report=report_b, diff=diff, other=report_a)


def _outcomes(samples: Sequence[SampleResult], count_user_faults: bool) -> list[bool]:
    """Whether each counted sample passed, in order (left-out samples skipped)."""
    return [s.passed for s in samples if not is_left_out(s, count_user_faults=count_user_faults)]


def paired_concurrency(concurrency: int) -> int:
    """Each side's concurrency in an A/B run: half the run's (at least one)."""
    return max(1, concurrency // 2)


async def _calibrate(sizes: set[tuple[int, int]], alpha: float) -> None:
    """Calibrate the regression tests off the event loop while the first round samples."""
    for baseline_total, horizon in sorted(sizes):
        await anyio.to_thread.run_sync(regression_plan, baseline_total, horizon, alpha)


def _shared_budget(
    max_cost: MaxCost | None, *done: Mapping[str, Sequence[SampleResult]] | None
) -> CostBudget | None:
    """One budget for every round; a new one is charged for the samples already `done`."""
    if max_cost is None or isinstance(max_cost, CostBudget):
        return max_cost
    budget = CostBudget(max_cost)
    for side in done:
        for samples in (side or {}).values():
            for sample in samples:
                budget.settle(sample)
    return budget


class _Rounds:
    """One side's samples over the rounds of a decision."""

    def __init__(
        self,
        run_round: RoundRunner,
        cases: list[Case],
        budget: CostBudget | None,
        done: Mapping[str, Sequence[SampleResult]] | None,
    ) -> None:
        self.run_round = run_round
        self.cases = cases
        self.budget = budget
        self.done: dict[str, list[SampleResult]] = {k: list(v) for k, v in (done or {}).items()}
        self.last: Report | None = None
        self.first_report: Report | None = None
        self.duration = 0.0
        self.stopped: str | None = None
        self.interrupted = False

    def samples(self, case: Case) -> list[SampleResult]:
        return self.done.get(case.label, [])

    def can_go_on(self) -> bool:
        if self.interrupted or self.stopped is not None:
            return False
        if self.budget is not None and self.budget.stopped:
            self.stopped = self.budget.reason()
            return False
        return True

    async def first(self) -> None:
        """Every case at its own sample count (at least what `done` already holds)."""
        cases = [
            dataclasses.replace(case, samples=max(case.samples, len(self.samples(case))))
            for case in self.cases
        ]
        if not self.can_go_on():
            return
        await self._run(cases)

    async def more(
        self, pending: list[Case], max_samples: int, *, pair: _Rounds | None = None
    ) -> None:
        """A batch more samples of each `pending` case (first up to the pair's count)."""
        if not self.can_go_on():
            return
        cases = []
        for case in pending:
            have = len(self.samples(case))
            target = min(have + next_batch(have), max_samples)
            if pair is not None:
                target = max(target, min(len(pair.samples(case)), max_samples))
            if target > have:
                cases.append(dataclasses.replace(case, samples=target))
        if cases:
            await self._run(cases)

    async def _run(self, cases: list[Case]) -> None:
        report = await self.run_round(cases, self.done, self.budget)
        self.first_report = self.first_report or report
        self.last = report
        self.duration += report.duration_s
        for result in report.cases:
            self.done[result.name] = list(result.samples)
        if report.stopped is not None:
            self.stopped = self.budget.reason() if self.budget is not None else report.stopped
        elif report.cancelled:
            self.interrupted = True

    def report(self) -> Report:
        """Every sample so far, in the cases' order, as one report."""
        first = self.first_report or Report("eval", [])
        by_name: dict[str, CaseResult] = {}
        for source in (first, self.last or first):
            for ran in source.cases:
                by_name[ran.name] = ran
        cases = []
        for case in self.cases:
            result = by_name.get(case.label)
            samples = self.samples(case)
            if result is not None and samples:
                cases.append(dataclasses.replace(result, samples=samples, planned=len(samples)))
        return dataclasses.replace(
            first,
            cases=cases,
            duration_s=self.duration,
            cancelled=self.interrupted,
            stopped=self.stopped,
            priced=first.priced or any(s.cost is not None for c in cases for s in c.samples),
        )


def _labelled_diff(
    current: Report,
    baseline: Report,
    verdicts: dict[str, ComparisonVerdict],
    count_user_faults: bool,
) -> Diff:
    diff = current.compare(baseline, count_user_faults=count_user_faults)
    for change in diff.changes:
        found = verdicts.get(change.name)
        if found is not None:
            change.label = found.label
            change.decided = found.decided
            change.hint = found.hint
    return diff

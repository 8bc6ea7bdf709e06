"""Run until decided: sample a case until an anytime-valid test settles "regression" or
"no regression", or the budget runs out.

The tests are e-processes: under the hypothesis being tested they are dominated by a
nonnegative supermartingale starting at 1, so by Ville's inequality they reach 1/α with
probability at most α, however often they are looked at. `compare_agents()` bets on the
paired differences (Waudby-Smith & Ramdas; a mixture over a grid of stakes).
`decide()` tests the current samples against the baseline's own samples with block
e-variables on both likelihoods (`tui_eval.stats.judge_two_sample`). Error control is
family-wise over the run: each case gets α/n (Bonferroni); a regression and "no
regression within the margin" are disjoint claims, so each gets the case's whole share."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from tui_eval.budget import CostBudget
from tui_eval.cases import Case
from tui_eval.diff import CaseChange, Diff
from tui_eval.events import EventHandler
from tui_eval.report import CaseResult, Report, SampleResult
from tui_eval.run_settings import Price, RunSettings, resolve
from tui_eval.runner import Evaluation
from tui_eval.stats import judge_two_sample

STAKES = tuple(i / 10 for i in range(1, 10))
"""Fractions of the largest safe stake the mixture bets with."""
DEFAULT_MARGIN = 0.1
"""How far below the baseline's rate still counts as "no regression"."""
BATCH = 5
"""Samples added to each undecided case per round."""


@dataclass(slots=True)
class EProcess:
    """A mixture betting e-process against H0: E[payoff] <= 0, for payoffs in [low, high]
    with low < 0 (H0 holds when the payoffs' mean is at most 0).

    Attributes:
        wealth: the mixture's wealth now (starts at 1); `wealth >= 1/α` rejects H0.
    """

    low: float
    high: float
    _logs: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._logs = [0.0] * len(STAKES)

    @property
    def max_stake(self) -> float:
        """The largest stake that can never make the wealth negative: 1/|low|."""
        return 1.0 / -self.low if self.low < 0 else 1.0

    def update(self, payoff: float) -> None:
        """Bet on one more observation."""
        top = self.max_stake * 0.99
        for i, fraction in enumerate(STAKES):
            self._logs[i] += math.log1p(fraction * top * payoff)

    @property
    def wealth(self) -> float:
        """The mixture's wealth (the mean of the stakes' wealths)."""
        return sum(math.exp(v) for v in self._logs) / len(self._logs)


@dataclass(frozen=True, slots=True)
class ComparisonVerdict:
    """How a case's comparison stands."""

    label: str
    decided: bool
    hint: str = ""


def judge_against_baseline(
    baseline_passed: int,
    baseline_total: int,
    current: Sequence[bool],
    *,
    alpha: float,
    margin: float = DEFAULT_MARGIN,
    exhausted: bool = False,
    baseline_samples: Sequence[bool] | None = None,
    horizon: int = 100,
) -> ComparisonVerdict:
    """The verdict of one case of `decide()`: current samples (in order) against a fixed
    baseline, at level `alpha` for this case (already split across cases), with at most
    `horizon` current samples (the budget, fixed before sampling).

    `baseline_samples` are the baseline's outcomes in their recorded order (the test
    reveals them block by block); without them, an arrangement of the counts in a fixed
    pseudo-random order stands in.
    """
    if baseline_samples is None:
        baseline_samples = [True] * baseline_passed + [False] * (baseline_total - baseline_passed)
        random.Random(0).shuffle(baseline_samples)
    found = judge_two_sample(
        baseline_samples,
        current,
        alpha=alpha,
        margin=margin,
        horizon=max(horizon, len(current)),
        exhausted=exhausted,
    )
    return ComparisonVerdict(found.label, found.decided, found.hint)


def judge_pairs(
    a: Sequence[bool], b: Sequence[bool], *, alpha: float, margin: float = DEFAULT_MARGIN
) -> ComparisonVerdict:
    """The verdict of one case of `compare_agents()`: paired samples of A (the baseline)
    and B (the current), at level `alpha` for this case."""
    regression = EProcess(low=-1.0, high=1.0)  # H0: E[a - b] <= 0 (B not worse)
    fine = EProcess(low=margin - 1.0, high=margin + 1.0)  # H0: E[a - b] >= margin
    for x, y in zip(a, b, strict=False):
        d = float(x) - float(y)
        regression.update(d)
        fine.update(margin - d)
    threshold = 1.0 / alpha
    if regression.wealth >= threshold:
        return ComparisonVerdict("regression", True)
    if fine.wealth >= threshold:
        return ComparisonVerdict("no regression", True)
    return ComparisonVerdict("undecided", False, _pairs_hint(a, b, alpha=alpha, margin=margin))


def _pairs_hint(a: Sequence[bool], b: Sequence[bool], *, alpha: float, margin: float) -> str:
    """Roughly how many samples a side would decide a paired comparison if the rates stay
    as they are: a fixed design's count for 80% power, doubled for looking all along."""
    n = min(len(a), len(b))
    if n == 0:
        return ""
    p_a = (sum(a[:n]) + 0.5) / (n + 1)
    p_b = (sum(b[:n]) + 0.5) / (n + 1)
    drop = p_a - p_b
    # Towards a regression when B looks worse, else towards "within the margin".
    effect = drop if drop > margin / 2 else margin - drop
    variance = p_a * (1 - p_a) + p_b * (1 - p_b)
    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(0.8)
    needed = math.ceil(2 * z * z * variance / (effect * effect))
    return f"~{max(needed, n + BATCH)} samples a side would likely decide it"


def simulate_pairs(
    p_a: float, p_b: float, rng: random.Random, *, alpha: float = 0.05, max_samples: int = 100
) -> tuple[str, int]:
    """One simulated `compare_agents()` case: A and B pass with probabilities p_a and p_b,
    sampled and judged in the same rounds as the real thing. Returns the label and the
    samples a side it took (for `bench/decide_sim.py` and the error-rate tests)."""
    a: list[bool] = []
    b: list[bool] = []
    while len(b) < max_samples:
        for _ in range(min(1 if not b else BATCH, max_samples - len(b))):
            a.append(rng.random() < p_a)
            b.append(rng.random() < p_b)
        verdict = judge_pairs(a, b, alpha=alpha)
        if verdict.decided:
            return verdict.label, len(b)
    return "undecided: budget", len(b)


def simulate_decide(
    p_baseline: float,
    p_current: float,
    rng: random.Random,
    *,
    baseline_total: int = 30,
    alpha: float = 0.05,
    max_samples: int = 100,
    first: int = 1,
    batch: int = BATCH,
    margin: float = DEFAULT_MARGIN,
) -> tuple[str, int]:
    """One simulated `decide()` case: a baseline of `baseline_total` samples at
    `p_baseline`, then current samples at `p_current` drawn as `decide()` draws them
    (`first`, then `batch` at a time; `batch=1` looks after every sample), judged at level
    `alpha` for the case. Returns the label and the current samples it took."""
    baseline = [rng.random() < p_baseline for _ in range(baseline_total)]
    current: list[bool] = []
    step = first
    while True:
        current += [rng.random() < p_current for _ in range(min(step, max_samples - len(current)))]
        step = batch
        verdict = judge_against_baseline(
            sum(baseline),
            len(baseline),
            current,
            alpha=alpha,
            margin=margin,
            exhausted=len(current) >= max_samples,
            baseline_samples=baseline,
            horizon=max_samples,
        )
        if verdict.label != "undecided":
            return verdict.label, len(current)


RoundRunner = Callable[
    [list[Case], dict[str, list[SampleResult]], CostBudget | None], Awaitable[Report]
]
"""Runs one round of samples: `(cases, done, budget)` → the report of `cases` at their
sample counts, where the samples in `done` (by case name) are kept and only the missing
ones run, within `budget` (one `CostBudget` shared by every round). `decide()` runs rounds with a plain
`Evaluation`; the suite-run layer runs them journaled, so a killed run resumes."""


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
            settings=dataclasses.replace(settings, samples=None, max_cost=budget),
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
    alpha: float = 0.05,
    max_samples: int = 100,
    concurrency: int | None = None,
    price: Price | None = None,
    max_cost: float | None = None,
    margin: float = DEFAULT_MARGIN,
    on_event: EventHandler | None = None,
) -> Diff:
    """Sample each case until its comparison with `baseline` is decided.

    Every case first runs its own samples; then the cases whose comparison is undecided get
    more samples, a few at a time, until an anytime-valid test says "regression" or "no
    regression" (within `margin` of the baseline's rate), or the case reaches
    `max_samples` (counting its first samples), or the spent cost reaches `max_cost`.
    The chance that any case of an A/A run is called a regression is at most `alpha`.

    Args:
        settings: how the rounds of samples run (`RunSettings`); `concurrency`, `price`
            and `max_cost`, when given, override its fields. `max_cost` bounds the whole
            decision, its first round included.
        on_event: receives the runner's events of every round of samples, as they happen
            (each round is a run of its own: `RunStarted` ... `RunFinished`).

    Returns:
        The `Diff` against `baseline`; every `CaseChange` in `changes` says how it stands
        (`label`: regression, no regression, undecided: budget, undecided: baseline too
        small) and whether it is `decided`.
    """
    chosen = resolve(settings, concurrency=concurrency, price=price, max_cost=max_cost)
    decision = await decide_in_rounds(
        _round_runner(agent, chosen, None, on_event),
        list(cases),
        baseline,
        alpha=alpha,
        max_samples=max_samples,
        max_cost=chosen.max_cost,
        margin=margin,
    )
    return decision.diff


async def decide_in_rounds(
    run_round: RoundRunner,
    cases: list[Case],
    baseline: Report,
    *,
    alpha: float = 0.05,
    max_samples: int = 100,
    max_cost: float | CostBudget | None = None,
    margin: float = DEFAULT_MARGIN,
    done: Mapping[str, Sequence[SampleResult]] | None = None,
) -> Decision:
    """`decide()` over any way of running rounds: samples already in `done` (a resumed
    run) count, and only what is missing runs. Every round shares one `CostBudget`."""
    by_name = {case.name: case for case in baseline.cases}
    compared = [c for c in cases if c.label in by_name]
    per_case = alpha / max(1, len(compared))
    budget = _shared_budget(max_cost, done)
    rounds = _Rounds(run_round, cases, budget, done)
    await rounds.first()

    def verdict(case: Case, *, exhausted: bool) -> ComparisonVerdict:
        old = by_name[case.label]
        samples = [s.passed for s in rounds.samples(case)]
        return judge_against_baseline(
            old.samples_passed,
            len(old.samples),
            samples,
            alpha=per_case,
            margin=margin,
            exhausted=exhausted,
            baseline_samples=[s.passed for s in old.samples],
            horizon=max(max_samples, case.samples),
        )

    while rounds.can_go_on():
        # Only a plain "undecided" case can still move: "baseline too small" never will.
        pending = [
            case
            for case in compared
            if verdict(case, exhausted=False).label == "undecided"
            and len(rounds.samples(case)) < max_samples
        ]
        if not pending:
            break
        await rounds.more(pending, max_samples)
    current = rounds.report()
    diff = _labelled_diff(
        current,
        baseline,
        {case.label: verdict(case, exhausted=True) for case in compared},
    )
    return Decision(report=current, diff=diff)


async def compare_agents(
    agent_a: Any,
    agent_b: Any,
    cases: Iterable[Case],
    *,
    settings: RunSettings | None = None,
    alpha: float = 0.05,
    max_samples: int = 100,
    concurrency: int | None = None,
    price: Price | None = None,
    max_cost: float | None = None,
    margin: float = DEFAULT_MARGIN,
    on_event: EventHandler | None = None,
) -> Diff:
    """A/B two agents (two models, two prompts), sampling both until decided.

    `agent_a` plays the baseline and `agent_b` the current: `Diff.delta` is b − a, and a
    case is a "regression" when B is worse. Samples are paired per case (sample i of A with
    sample i of B); the same error control as `decide()`. `settings` (and the keywords
    over it) apply to both sides; `max_cost` bounds both together. `on_event` receives
    the events of B's rounds of samples.
    """
    chosen = resolve(settings, concurrency=concurrency, price=price, max_cost=max_cost)
    decision = await compare_in_rounds(
        _round_runner(agent_a, chosen, None, None),
        _round_runner(agent_b, chosen, None, on_event),
        list(cases),
        alpha=alpha,
        max_samples=max_samples,
        max_cost=chosen.max_cost,
        margin=margin,
    )
    return decision.diff


async def compare_in_rounds(
    run_a: RoundRunner,
    run_b: RoundRunner,
    cases: list[Case],
    *,
    alpha: float = 0.05,
    max_samples: int = 100,
    max_cost: float | CostBudget | None = None,
    margin: float = DEFAULT_MARGIN,
    done_a: Mapping[str, Sequence[SampleResult]] | None = None,
    done_b: Mapping[str, Sequence[SampleResult]] | None = None,
) -> Decision:
    """`compare_agents()` over any way of running rounds (A's, then B's, sharing one
    `CostBudget`); samples already in `done_a`/`done_b` count."""
    per_case = alpha / max(1, len(cases))
    budget = _shared_budget(max_cost, done_a, done_b)
    side_a = _Rounds(run_a, cases, budget, done_a)
    side_b = _Rounds(run_b, cases, budget, done_b)
    await side_a.first()
    await side_b.first()

    def verdict(case: Case) -> ComparisonVerdict:
        return judge_pairs(
            [s.passed for s in side_a.samples(case)],
            [s.passed for s in side_b.samples(case)],
            alpha=per_case,
            margin=margin,
        )

    while side_a.can_go_on() and side_b.can_go_on():
        pending = [
            case
            for case in cases
            if not verdict(case).decided and len(side_b.samples(case)) < max_samples
        ]
        if not pending:
            break
        await side_a.more(pending, max_samples, pair=side_b)
        await side_b.more(pending, max_samples, pair=side_a)
    verdicts = {}
    for case in cases:
        found = verdict(case)
        if not found.decided:
            found = dataclasses.replace(found, label="undecided: budget")
        verdicts[case.label] = found
    report_a, report_b = side_a.report(), side_b.report()
    return Decision(
        report=report_b, diff=_labelled_diff(report_b, report_a, verdicts), other=report_a
    )


def _shared_budget(
    max_cost: float | CostBudget | None, *done: Mapping[str, Sequence[SampleResult]] | None
) -> CostBudget | None:
    """One budget for every round; a new one has seen the samples already `done` (a
    resumed decision spent them). A `CostBudget` given is its owner's, used as it is."""
    if max_cost is None or isinstance(max_cost, CostBudget):
        return max_cost
    budget = CostBudget(max_cost)
    for side in done:
        for samples in (side or {}).values():
            for sample in samples:
                budget.observe(sample)
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
        """A batch more samples of each `pending` case (up to the pair's count first)."""
        if not self.can_go_on():
            return
        cases = []
        for case in pending:
            have = len(self.samples(case))
            target = min(have + BATCH, max_samples)
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
    current: Report, baseline: Report, verdicts: dict[str, ComparisonVerdict]
) -> Diff:
    diff = current.compare(baseline)
    for change in diff.changes:
        found = verdicts.get(change.name)
        if found is not None:
            change.label = found.label
            change.decided = found.decided
            change.hint = found.hint
    return diff


__all__ = [
    "CaseChange",
    "ComparisonVerdict",
    "Decision",
    "RoundRunner",
    "compare_agents",
    "compare_in_rounds",
    "decide",
    "decide_in_rounds",
    "judge_against_baseline",
    "judge_pairs",
    "simulate_decide",
    "simulate_pairs",
]

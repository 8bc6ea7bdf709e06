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

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

from tui_eval.budget import CostBudget
from tui_eval.cases import Case
from tui_eval.diff import CaseChange, Diff
from tui_eval.events import EventHandler
from tui_eval.report import CaseResult, Report
from tui_eval.runner import Price, evaluate
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
class Verdict:
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
) -> Verdict:
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
    return Verdict(found.label, found.decided, found.hint)


def judge_pairs(
    a: Sequence[bool], b: Sequence[bool], *, alpha: float, margin: float = DEFAULT_MARGIN
) -> Verdict:
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
        return Verdict("regression", True)
    if fine.wealth >= threshold:
        return Verdict("no regression", True)
    return Verdict("undecided", False, _pairs_hint(a, b, alpha=alpha, margin=margin))


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


async def decide(
    agent: Any,
    cases: Iterable[Case],
    baseline: Report,
    *,
    alpha: float = 0.05,
    max_samples: int = 100,
    concurrency: int = 4,
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
        on_event: receives the runner's events of every round of samples, as they happen
            (each round is a run of its own: `RunStarted` ... `RunFinished`).

    Returns:
        The `Diff` against `baseline`; every `CaseChange` in `changes` says how it stands
        (`label`: regression, no regression, undecided: budget, undecided: baseline too
        small) and whether it is `decided`.
    """
    chosen = list(cases)
    by_name = {case.name: case for case in baseline.cases}
    compared = [c for c in chosen if c.label in by_name]
    per_case = alpha / max(1, len(compared))
    budget = CostBudget.of(max_cost)  # one budget for every round
    current = await evaluate(
        agent, chosen, concurrency=concurrency, price=price, on_event=on_event, max_cost=budget
    )
    results = {case.name: case for case in current.cases}

    def verdict(case: Case, *, exhausted: bool) -> Verdict:
        old = by_name[case.label]
        samples = _passes(results, case.label)
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

    while budget is None or not budget.stopped:
        # Only a plain "undecided" case can still move: "baseline too small" never will.
        pending = [
            case
            for case in compared
            if verdict(case, exhausted=False).label == "undecided"
            and len(results[case.label].samples) < max_samples
        ]
        if not pending:
            break
        more = _next_round(pending, results, max_samples)
        extra = await evaluate(
            agent, more, concurrency=concurrency, price=price, on_event=on_event, max_cost=budget
        )
        for result in extra.cases:
            _append(results[result.name], result)
    return _labelled_diff(
        current,
        baseline,
        {case.label: verdict(case, exhausted=True) for case in compared},
    )


async def compare_agents(
    agent_a: Any,
    agent_b: Any,
    cases: Iterable[Case],
    *,
    alpha: float = 0.05,
    max_samples: int = 100,
    concurrency: int = 4,
    price: Price | None = None,
    max_cost: float | None = None,
    margin: float = DEFAULT_MARGIN,
    on_event: EventHandler | None = None,
) -> Diff:
    """A/B two agents (two models, two prompts), sampling both until decided.

    `agent_a` plays the baseline and `agent_b` the current: `Diff.delta` is b − a, and a
    case is a "regression" when B is worse. Samples are paired per case (sample i of A with
    sample i of B); the same error control as `decide()`. `on_event` receives the events
    of B's rounds of samples.
    """
    chosen = list(cases)
    per_case = alpha / max(1, len(chosen))
    budget = CostBudget.of(max_cost)  # both sides, every round
    report_a = await evaluate(
        agent_a, chosen, concurrency=concurrency, price=price, max_cost=budget
    )
    report_b = await evaluate(
        agent_b, chosen, concurrency=concurrency, price=price, on_event=on_event, max_cost=budget
    )
    side_a = {case.name: case for case in report_a.cases}
    side_b = {case.name: case for case in report_b.cases}

    def verdict(case: Case) -> Verdict:
        return judge_pairs(
            _passes(side_a, case.label),
            _passes(side_b, case.label),
            alpha=per_case,
            margin=margin,
        )

    while budget is None or not budget.stopped:
        pending = [
            case
            for case in chosen
            if not verdict(case).decided and len(side_b[case.label].samples) < max_samples
        ]
        if not pending:
            break
        more = _next_round(pending, side_b, max_samples)
        extra_a = await evaluate(
            agent_a, more, concurrency=concurrency, price=price, max_cost=budget
        )
        extra_b = await evaluate(
            agent_b, more, concurrency=concurrency, price=price, on_event=on_event, max_cost=budget
        )
        for result in extra_a.cases:
            _append(side_a[result.name], result)
        for result in extra_b.cases:
            _append(side_b[result.name], result)
    verdicts = {}
    for case in chosen:
        found = verdict(case)
        if not found.decided:
            found = replace(found, label="undecided: budget")
        verdicts[case.label] = found
    return _labelled_diff(report_b, report_a, verdicts)


def _next_round(
    pending: list[Case], results: dict[str, CaseResult], max_samples: int
) -> list[Case]:
    """The cases of the next round, each with a batch of samples within its budget."""
    return [
        replace(case, samples=min(BATCH, max_samples - len(results[case.label].samples)))
        for case in pending
    ]


def _passes(results: dict[str, CaseResult], name: str) -> list[bool]:
    """Whether each sample of case `name` passed (none: the budget stopped it from starting)."""
    result = results.get(name)
    return [s.passed for s in result.samples] if result is not None else []


def _append(target: CaseResult, extra: CaseResult) -> None:
    """Add `extra`'s samples after `target`'s, renumbered."""
    start = len(target.samples)
    for offset, sample in enumerate(extra.samples):
        sample.index = start + offset
        target.samples.append(sample)
    target.planned = len(target.samples)


def _labelled_diff(current: Report, baseline: Report, verdicts: dict[str, Verdict]) -> Diff:
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
    "Verdict",
    "compare_agents",
    "decide",
    "judge_against_baseline",
    "judge_pairs",
    "simulate_decide",
    "simulate_pairs",
]

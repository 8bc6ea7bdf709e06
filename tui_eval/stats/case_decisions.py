"""The per-case tests of run-until-decided: `decide()` against a baseline (`two_sample`),
`compare_agents()`'s paired A and B (a betting e-process), and simulations of each (for
`bench/decide_sim.py` and the error-rate tests)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from tui_eval.stats.proportions import normal_quantile
from tui_eval.stats.two_sample import ComparisonVerdict, judge_two_sample

STAKES = tuple(i / 10 for i in range(1, 10))
"""Fractions of the largest safe stake the mixture bets with."""
DEFAULT_MARGIN = 0.1
"""How far below the baseline's rate still counts as "no regression"."""
ALPHA = 0.05
"""The chance of calling any case of an A/A run a regression, by default."""
BATCH = 5
"""Samples added to each undecided case per round, at least (see `next_batch`)."""


def next_batch(have: int) -> int:
    """More samples for an undecided case next round: `BATCH`, or a tenth of `have` when
    more (dozens of rounds, not thousands, overshooting by at most a tenth)."""
    return max(BATCH, have // 10)


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

    def update(self, payoff: float, times: int = 1) -> None:
        """Bet on `times` observations of this payoff (the wealth does not depend on order)."""
        top = self.max_stake * 0.99
        for i, fraction in enumerate(STAKES):
            self._logs[i] += times * math.log1p(fraction * top * payoff)

    @property
    def wealth(self) -> float:
        """The mixture's wealth (the mean of the stakes' wealths)."""
        return sum(math.exp(v) for v in self._logs) / len(self._logs)


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
    """One `decide()` case's verdict (`judge_two_sample`); without `baseline_samples` in
    recorded order, its counts in a fixed pseudo-random order stand in."""
    if baseline_samples is None:
        baseline_samples = [True] * baseline_passed + [False] * (baseline_total - baseline_passed)
        random.Random(0).shuffle(baseline_samples)
    return judge_two_sample(
        baseline_samples,
        current,
        alpha=alpha,
        margin=margin,
        horizon=max(horizon, len(current)),
        exhausted=exhausted,
    )


def judge_pairs(
    a: Sequence[bool], b: Sequence[bool], *, alpha: float, margin: float = DEFAULT_MARGIN
) -> ComparisonVerdict:
    """One `compare_agents()` case's verdict: paired samples of A (baseline) and B."""
    regression = EProcess(low=-1.0, high=1.0)  # H0: E[a - b] <= 0 (B not worse)
    fine = EProcess(low=margin - 1.0, high=margin + 1.0)  # H0: E[a - b] >= margin
    # A pair's difference is -1, 0 or 1: bet on each value once, for all its pairs.
    differences = Counter(float(x) - float(y) for x, y in zip(a, b, strict=False))
    for d, times in differences.items():
        regression.update(d, times)
        fine.update(margin - d, times)
    threshold = 1.0 / alpha
    if regression.wealth >= threshold:
        return ComparisonVerdict("regression", True)
    if fine.wealth >= threshold:
        return ComparisonVerdict("no regression", True)
    return ComparisonVerdict("undecided", False, _pairs_hint(a, b, alpha=alpha, margin=margin))


def _pairs_hint(a: Sequence[bool], b: Sequence[bool], *, alpha: float, margin: float) -> str:
    """Roughly the samples a side to decide at these rates: 80% power, doubled for peeking."""
    n = min(len(a), len(b))
    if n == 0:
        return ""
    p_a = (sum(a[:n]) + 0.5) / (n + 1)
    p_b = (sum(b[:n]) + 0.5) / (n + 1)
    drop = p_a - p_b
    # Towards a regression when B looks worse, else towards "within the margin".
    effect = drop if drop > margin / 2 else margin - drop
    variance = p_a * (1 - p_a) + p_b * (1 - p_b)
    z = normal_quantile(1 - alpha) + normal_quantile(0.8)
    needed = math.ceil(2 * z * z * variance / (effect * effect))
    return f"~{max(needed, n + BATCH)} samples a side would likely decide it"


def simulate_pairs(
    p_a: float, p_b: float, rng: random.Random, *, alpha: float = 0.05, max_samples: int = 100
) -> tuple[str, int]:
    """One simulated `compare_agents()` case: its label and the samples a side it took."""
    a: list[bool] = []
    b: list[bool] = []
    while len(b) < max_samples:
        for _ in range(min(1 if not b else next_batch(len(b)), max_samples - len(b))):
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
    batch: int | None = None,
    margin: float = DEFAULT_MARGIN,
) -> tuple[str, int]:
    """One simulated `decide()` case: its label and the current samples it took."""
    baseline = [rng.random() < p_baseline for _ in range(baseline_total)]
    current: list[bool] = []
    step = first
    while True:
        current += [rng.random() < p_current for _ in range(min(step, max_samples - len(current)))]
        step = batch if batch is not None else next_batch(len(current))
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


__all__ = [
    "BATCH",
    "DEFAULT_MARGIN",
    "STAKES",
    "ComparisonVerdict",
    "EProcess",
    "judge_against_baseline",
    "judge_pairs",
    "next_batch",
    "simulate_decide",
    "simulate_pairs",
]

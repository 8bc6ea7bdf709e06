"""`decide()`'s test of one case: the current samples against the baseline's own samples.

Two claims, each at the case's whole α: they are disjoint, so at most one can be wrong (the
partitioning principle).

- **Regression**: the exact group-sequential test (`group_sequential`), looked at after
  every current sample up to the horizon fixed in advance. Where the horizon is longer than
  the baseline calibrates, α is split (Bonferroni): the exact test over the first looks at
  α/2, the e-process below over the whole horizon at α/2; where no exact size is
  established, the e-process alone at α (`RegressionPlan`).
- **No regression within the margin**: an e-process, a product of one e-variable per block
  (Turner, Ly & Grünwald, "Generic E-variables for exact sequential k-sample tests", 2023):
  a few baseline samples, revealed in proportion to the budget, and the current samples
  drawn meanwhile. The likelihood ratio of an alternative learned from earlier blocks
  against the reverse information projection onto the null has expectation ≤ 1 under every
  null rate, so by Ville's inequality the product reaches 1/α with probability ≤ α however
  often it is looked at.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from tui_eval.stats.group_sequential import (
    RegressionBoundary,
    calibrated_horizon,
    regression_boundary,
)
from tui_eval.stats.proportions import normal_quantile

BASELINE_PRIOR = (4.0, 1.0)
"""Pseudo-counts (passed, failed) of the baseline rate's estimate before any block."""
CURRENT_PRIOR = (1.0, 2.0)
"""Pseudo-counts of the current rate's estimate for the regression test: below the baseline's."""
FINE_PRIOR = (1.0, 1.0)
"""Pseudo-counts of both estimates for the "no regression" test."""
ORDERS = 4
"""Orders the baseline is revealed in (recorded, and fixed shuffles): the test is the mean of
their e-processes (valid as each is), less dependent on which baseline samples come first."""
SPLIT_WORK = 3_000_000
"""Where a horizon is longer than the exact test calibrates, it covers the first looks this
much work ((n0 + 1) · N · (N + 1), about a second) allows: where an obvious regression shows."""
_CLIP = 0.005


def reveal_schedule(baseline_total: int, horizon: int) -> list[tuple[int, int]]:
    """Cumulative (baseline, current) samples at each block's end: after t current samples
    ⌊n0 · t / horizon⌋ baseline samples are revealed; a block ends where that count grows."""
    return list(_schedule(baseline_total, horizon))


@lru_cache(maxsize=256)
def _schedule(baseline_total: int, horizon: int) -> tuple[tuple[int, int], ...]:
    # The j-th baseline sample is revealed at t = ⌈j · horizon / n0⌉: one step per
    # baseline sample, not per current sample (a horizon of 30,000 has 31 blocks, not
    # 30,000 steps to find them).
    blocks: list[tuple[int, int]] = []
    last = 0
    for j in range(1, baseline_total + 1):
        t = -(-j * horizon // baseline_total)
        if t >= horizon:
            break
        revealed = baseline_total * t // horizon
        if revealed > last:
            blocks.append((revealed, t))
            last = revealed
    blocks.append((baseline_total, horizon))
    return tuple(blocks)


def _null_rate(theta_b: float, theta_c: float, n_b: int, n_c: int, margin: float) -> float:
    """The baseline rate r of the null point (r, r − margin) closest to the alternative
    (θb, θc) for a block of n_b and n_c samples: where the expected log likelihood ratio is
    flat in r, so no null rate gives the block's e-variable a mean above 1."""
    if margin == 0.0:
        return (n_b * theta_b + n_c * theta_c) / (n_b + n_c)
    low, high = margin, 1.0
    for _ in range(60):
        r = (low + high) / 2
        c = r - margin
        slope = n_b * (theta_b - r) / (r * (1 - r)) + n_c * (theta_c - c) / (c * (1 - c))
        if slope > 0:
            low = r
        else:
            high = r
    return (low + high) / 2


def _clip(p: float) -> float:
    return min(1.0 - _CLIP, max(_CLIP, p))


def _passed_by(current: Sequence[bool], then: bool | None = None, upto: int = 0) -> list[int]:
    """prefix[t]: passes among the first t samples; then, up to `upto`, all `then`."""
    prefix = [0, *itertools.accumulate(1 if x else 0 for x in current)]
    if then is not None and upto > len(current):
        last = prefix[-1]
        step = 1 if then else 0
        prefix.extend(last + step * i for i in range(1, upto - len(current) + 1))
    return prefix


def _evidence(
    baseline: Sequence[bool],
    prefix: list[int],
    seen: int,
    horizon: int,
    margin: float,
    regression: bool,
) -> list[float]:
    """The log e-value after each completed block, the mean over `ORDERS` baseline orders.
    `regression` tests H0 "the current rate is at least the baseline's", else H0 "at least
    `margin` below it". Block e-values depend only on counts and are cached: a decision
    recomputes the path every round."""
    paths = []
    for order in _orders(len(baseline)):
        revealed = [0, *itertools.accumulate(1 if baseline[i] else 0 for i in order)]
        paths.append(_one_order(revealed, prefix, seen, horizon, margin, regression))
    averaged = []
    for values in zip(*paths, strict=True):
        top = max(values)
        averaged.append(top + math.log(sum(math.exp(v - top) for v in values) / len(values)))
    return averaged


@lru_cache(maxsize=64)
def _orders(n: int) -> tuple[tuple[int, ...], ...]:
    """The recorded order and ORDERS − 1 seeded shuffles (never chosen by the data)."""
    orders = [tuple(range(n))]
    for seed in range(1, ORDERS):
        order = list(range(n))
        random.Random(seed).shuffle(order)
        orders.append(tuple(order))
    return tuple(orders)


def _one_order(
    revealed: list[int],
    prefix: list[int],
    seen: int,
    horizon: int,
    margin: float,
    regression: bool,
) -> list[float]:
    """The log e-value after each block within `seen` samples, for one baseline order."""
    log_e = 0.0
    path: list[float] = []
    seen_b = seen_c = 0
    for b_end, c_end in _schedule(len(revealed) - 1, horizon):
        if c_end > seen:
            break
        log_e += _block_log_e(
            revealed[seen_b],
            seen_b,
            prefix[seen_c],
            seen_c,
            revealed[b_end] - revealed[seen_b],
            b_end - seen_b,
            prefix[c_end] - prefix[seen_c],
            c_end - seen_c,
            margin,
            regression,
        )
        seen_b, seen_c = b_end, c_end
        path.append(log_e)
    return path


@lru_cache(maxsize=1 << 16)
def _block_log_e(
    passed_b: int,
    seen_b: int,
    passed_c: int,
    seen_c: int,
    k_b: int,
    n_b: int,
    k_c: int,
    n_c: int,
    margin: float,
    regression: bool,
) -> float:
    """One block's log e-value: k_b of n_b and k_c of n_c passed in it, its estimates
    learned from passed_b of seen_b and passed_c of seen_c before it."""
    prior_b = BASELINE_PRIOR if regression else FINE_PRIOR
    prior_c = CURRENT_PRIOR if regression else FINE_PRIOR
    shift = 0.0 if regression else margin
    theta_b = _clip((passed_b + prior_b[0]) / (seen_b + prior_b[0] + prior_b[1]))
    theta_c = _clip((passed_c + prior_c[0]) / (seen_c + prior_c[0] + prior_c[1]))
    bets = theta_c < theta_b if regression else theta_b - theta_c < margin
    if not (bets and n_b and n_c):
        return 0.0
    r = _null_rate(theta_b, theta_c, n_b, n_c, shift)
    return _log_ratio(k_b, n_b - k_b, theta_b, r) + _log_ratio(k_c, n_c - k_c, theta_c, r - shift)


def _log_ratio(passed: float, failed: float, theta: float, r: float) -> float:
    """The log likelihood ratio of pass rate θ against r for these counts (or expectations)."""
    return passed * math.log(theta / r) + failed * math.log((1 - theta) / (1 - r))


def _expected_log_e(
    p_b: float, p_c: float, n_baseline: int, horizon: int, *, margin: float, regression: bool
) -> float:
    """The log e-value expected at `horizon` if samples came at rates p_b and p_c."""
    theta_b, theta_c = _clip(p_b), _clip(p_c)
    bets = theta_c < theta_b if regression else theta_b - theta_c < margin
    if not bets:
        return 0.0
    shift = 0.0 if regression else margin
    total = 0.0
    seen_b = seen_c = 0
    for b_end, c_end in reveal_schedule(n_baseline, horizon):
        n_b, n_c = b_end - seen_b, c_end - seen_c
        seen_b, seen_c = b_end, c_end
        if not (n_b and n_c):
            continue
        r = _null_rate(theta_b, theta_c, n_b, n_c, shift)
        total += n_b * _log_ratio(theta_b, 1 - theta_b, theta_b, r)
        total += n_c * _log_ratio(theta_c, 1 - theta_c, theta_c, r - shift)
    return total


@dataclass(frozen=True, slots=True)
class ComparisonVerdict:
    """Where one case's test stands: `label` (regression, no regression, undecided,
    undecided: budget or baseline too small) and, undecided, a `hint` of what would decide."""

    label: str
    decided: bool
    hint: str = ""


def judge_two_sample(
    baseline: Sequence[bool],
    current: Sequence[bool],
    *,
    alpha: float,
    margin: float,
    horizon: int,
    exhausted: bool = False,
) -> ComparisonVerdict:
    """The verdict of a case: current samples against the baseline's (both in order), at
    level `alpha`, `horizon` fixed in advance. A crossing at any look up to `len(current)`
    counts, so a round of several samples sees crossings inside it."""
    if not any(baseline):
        # Never passed in the baseline: there is nothing to fall from.
        return ComparisonVerdict("no regression", True, "never passed in the baseline")
    horizon = max(horizon, len(current), 1)
    regression = _RegressionTest(baseline, horizon, alpha)
    threshold = math.log(1 / alpha)
    prefix = _passed_by(current)

    def fine(then: bool | None) -> bool:
        passed = _passed_by(current, then, horizon) if then is not None else prefix
        seen = horizon if then is not None else len(current)
        path = _evidence(baseline, passed, seen, horizon, margin, False)
        return max(path, default=0.0) >= threshold

    if regression.crossed(current, prefix):
        return ComparisonVerdict("regression", True)
    if fine(None):
        return ComparisonVerdict("no regression", True)
    if not regression.could_cross([0], 0) and not _margin_reachable(
        tuple(baseline), horizon, margin, threshold
    ):
        # Not even a current run that failed (or passed) every sample could be told apart
        # from this baseline: more samples of the current agent cannot help.
        hint = _baseline_hint(baseline, alpha, margin)
        return ComparisonVerdict("undecided: baseline too small", False, hint)
    if exhausted or (not regression.could_cross(prefix, len(current)) and not fine(True)):
        hint = _budget_hint(baseline, current, alpha, margin, horizon, regression.plan.boundary)
        note = _margin_note(baseline, horizon, alpha, margin)
        return ComparisonVerdict("undecided: budget", False, "; ".join(filter(None, [hint, note])))
    return ComparisonVerdict("undecided", False)


@lru_cache(maxsize=1024)
def _margin_reachable(
    baseline: tuple[bool, ...], horizon: int, margin: float, threshold: float
) -> bool:
    """Whether passing every sample up to the horizon would show "no regression" (cached)."""
    path = _evidence(baseline, _passed_by([], True, horizon), horizon, horizon, margin, False)
    return max(path, default=0.0) >= threshold


@dataclass(frozen=True, slots=True)
class RegressionPlan:
    """How one case's regression claim spends its α.

    Attributes:
        boundary: the exact boundary over its own horizon (the case's, or its first looks);
            None where none is established.
        e_alpha: the level of the e-process over the case's whole horizon (0: not used).
    """

    boundary: RegressionBoundary | None
    e_alpha: float


def regression_plan(baseline_total: int, horizon: int, alpha: float) -> RegressionPlan:
    """A case's regression test; calibrating takes seconds, so `decide()` does it first."""
    if calibrated_horizon(baseline_total, horizon) >= horizon:
        boundary = regression_boundary(baseline_total, horizon, alpha)
        return RegressionPlan(boundary, 0.0 if boundary is not None else alpha)
    first = calibrated_horizon(baseline_total, horizon, SPLIT_WORK)
    if first >= 1:
        boundary = regression_boundary(baseline_total, first, alpha / 2)
        if boundary is not None:
            return RegressionPlan(boundary, alpha / 2)
    return RegressionPlan(None, alpha)


class _RegressionTest:
    """The regression side of one case, as its `RegressionPlan` says."""

    def __init__(self, baseline: Sequence[bool], horizon: int, alpha: float) -> None:
        self.baseline = baseline
        self.passed = sum(1 for x in baseline if x)
        self.horizon = horizon
        self.plan = regression_plan(len(baseline), horizon, alpha)
        e_alpha = self.plan.e_alpha
        self.threshold = math.log(1 / e_alpha) if e_alpha > 0 else math.inf

    def crossed(self, current: Sequence[bool], prefix: list[int]) -> bool:
        """Whether any look so far called a regression (`prefix`: `_passed_by`'s)."""
        boundary = self.plan.boundary
        if boundary is not None and boundary.first_crossing(self.passed, current) is not None:
            return True
        return self.threshold < math.inf and self._e_crosses(prefix, len(current))

    def could_cross(self, prefix: list[int], seen: int) -> bool:
        """Whether a later look could call a regression if every sample after `seen` failed."""
        passed = prefix[seen]
        boundary = self.plan.boundary
        if boundary is not None and boundary.can_cross(self.passed, passed, seen):
            return True
        if self.threshold == math.inf:
            return False
        failing = prefix[: seen + 1] + [passed] * (self.horizon - seen)
        return self._e_crosses(failing, self.horizon)

    def _e_crosses(self, prefix: list[int], seen: int) -> bool:
        path = _evidence(self.baseline, prefix, seen, self.horizon, 0.0, True)
        return max(path, default=0.0) >= self.threshold


def _budget_hint(
    baseline: Sequence[bool],
    current: Sequence[bool],
    alpha: float,
    margin: float,
    horizon: int,
    boundary: RegressionBoundary | None,
) -> str:
    """Roughly the budget that would decide a case at its current rates: for a regression a
    normal approximation at the last look (80% power), else the expected evidence."""
    n0 = len(baseline)
    p_b = (sum(baseline) + 0.5) / (n0 + 1)
    p_c = (sum(current) + 0.5) / (len(current) + 1) if current else p_b
    threshold = math.log(1 / alpha)
    scale = boundary.scale if boundary is not None else normal_quantile(1 - alpha)
    for budget in (horizon * 2**i for i in range(1, 8)):
        spread = math.sqrt(p_b * (1 - p_b) / n0 + p_c * (1 - p_c) / budget)
        if p_c < p_b and (p_b - p_c) / spread >= scale + _Z80:
            return f"~{budget} samples would likely decide it"
        if _expected_log_e(p_b, p_c, n0, budget, margin=margin, regression=False) >= threshold:
            return f"~{budget} samples would likely decide it"
    return _baseline_hint(baseline, alpha, margin)


_Z80 = 0.841621


def _baseline_hint(baseline: Sequence[bool], alpha: float, margin: float) -> str:
    """How many baseline samples would make the margin reachable."""
    p_b = sum(baseline) / len(baseline)
    threshold = math.log(1 / alpha)
    for size in (len(baseline) * 2**i for i in range(1, 8)):
        if _expected_log_e(p_b, p_b, size, 4 * size, margin=margin, regression=False) >= threshold:
            return f"a baseline of ~{size} samples would let it decide"
    return "the baseline is too small to decide it"


def _margin_note(baseline: Sequence[bool], horizon: int, alpha: float, margin: float) -> str:
    """The margin "no regression" can be shown within, if the one asked is out of reach."""
    reachable = reachable_margin(baseline, horizon, alpha=alpha)
    if reachable is not None and reachable <= margin + 1e-9:
        return ""
    if reachable is None:
        return f'with this baseline and {horizon} samples, "no regression" is out of reach'
    return (
        f'with this baseline and {horizon} samples, "no regression" can be shown only '
        f"within ~{round(reachable * 100)} points"
    )


def reachable_margin(
    baseline: Sequence[bool], horizon: int, *, alpha: float, step: float = 0.01
) -> float | None:
    """The smallest margin "no regression" could be shown within if the current agent passes
    at the baseline's rate (by expected evidence, in `step`s; None: none below 1)."""
    if not baseline:
        return None
    return _reachable_margin(sum(1 for x in baseline if x), len(baseline), horizon, alpha, step)


@lru_cache(maxsize=256)
def _reachable_margin(
    passed: int, total: int, horizon: int, alpha: float, step: float
) -> float | None:
    p_b = passed / total
    threshold = math.log(1 / alpha)

    def reached(i: int) -> bool:
        margin = i * step
        evidence = _expected_log_e(p_b, p_b, total, horizon, margin=margin, regression=False)
        return evidence >= threshold

    # The evidence grows with the margin: bisect on the steps.
    low, high = 0, round(1 / step)  # not reached at 0; at 1 / step means never below 1
    if not reached(high - 1):
        return None
    high -= 1
    while high - low > 1:
        middle = (low + high) // 2
        if reached(middle):
            high = middle
        else:
            low = middle
    return high * step

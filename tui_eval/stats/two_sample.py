"""`decide()`'s test of one case: the current samples against the baseline's own samples.

Two claims, each at the case's whole α: they are disjoint (a regression is a false claim
only when the current rate is at least the baseline's, "no regression within the margin"
only when it is at least `margin` below), so at most one of them can be wrong (the
partitioning principle).

- **Regression**: an exact group-sequential test (`tui_eval.stats.group_sequential`) of Fisher's
  one-sided mid-p-value, looked at after every current sample up to the horizon fixed in
  advance (`max_samples`), calibrated so that the chance of ever calling a regression when
  the current agent is no worse is at most α. Beyond the sizes it calibrates quickly, the
  e-process below stands in.
- **No regression within the margin**: an e-process, a product of e-variables, one per
  block of samples, after Turner, Ly & Grünwald ("Generic E-variables for exact sequential
  k-sample tests", 2023): a block holds a few baseline samples (revealed in their recorded
  order, in proportion to the budget) and the current samples drawn meanwhile. For an
  alternative (θb, θc) learned from earlier blocks, the block's likelihood ratio against the
  null point closest to it in the sense of Kullback–Leibler (the reverse information
  projection) has expectation ≤ 1 under *every* rate the null allows, so the running
  product is a test supermartingale: by Ville's inequality it reaches 1/α with probability
  ≤ α however often it is looked at.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from tui_eval.stats.group_sequential import RegressionBoundary, regression_boundary
from tui_eval.stats.proportions import normal_quantile

BASELINE_PRIOR = (4.0, 1.0)
"""Pseudo-counts (passed, failed) of the baseline rate's estimate before any block."""
CURRENT_PRIOR = (1.0, 2.0)
"""Pseudo-counts of the current rate's estimate for the regression test: a regression is
what it looks for, so it starts a little below the baseline's."""
FINE_PRIOR = (1.0, 1.0)
"""Pseudo-counts of both estimates for the "no regression" test."""
ORDERS = 4
"""Orders the baseline is revealed in: its recorded order and fixed shuffles of it. The
test is the mean of their e-processes (each valid, so the mean is), which depends less on
which baseline samples happen to come first."""
_CLIP = 0.005


def reveal_schedule(baseline_total: int, horizon: int) -> list[tuple[int, int]]:
    """The blocks of the two-sample test, as cumulative (baseline samples, current samples)
    at each block's end: the baseline is revealed in proportion to the current budget
    `horizon` (fixed before any sample is drawn), all of it by the last block."""
    blocks: list[tuple[int, int]] = []
    last = 0
    for t in range(1, horizon + 1):
        revealed = baseline_total if t == horizon else baseline_total * t // horizon
        if revealed > last or t == horizon:
            blocks.append((revealed, t))
            last = revealed
    return blocks


def _null_rate(theta_b: float, theta_c: float, n_b: int, n_c: int, margin: float) -> float:
    """The baseline rate r of the null point (r, r − margin) closest to the alternative
    (θb, θc) for a block of n_b baseline and n_c current samples: where the expected log
    likelihood ratio is flat in r, so no null rate gives the block's e-variable a mean
    above 1."""
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


def evidence_path(
    baseline: Sequence[bool],
    current: Sequence[bool],
    horizon: int,
    *,
    margin: float = 0.0,
    regression: bool = True,
) -> list[float]:
    """The log e-value after each completed block of the two-sample test.

    `regression=True` tests H0: the current rate is at least the baseline's (rejecting it
    calls a regression); `regression=False` tests H0: the current rate is at least
    `margin` below the baseline's (rejecting it says "no regression within the margin").
    The e-value is the mean over `ORDERS` orders of revealing the baseline.
    """
    paths = [
        _one_order(
            [baseline[i] for i in order], current, horizon, margin=margin, regression=regression
        )
        for order in _orders(len(baseline))
    ]
    averaged = []
    for values in zip(*paths, strict=True):
        top = max(values)
        averaged.append(top + math.log(sum(math.exp(v - top) for v in values) / len(values)))
    return averaged


@lru_cache(maxsize=64)
def _orders(n: int) -> tuple[tuple[int, ...], ...]:
    """The recorded order and ORDERS − 1 shuffles fixed in advance (seeded, never by the
    data), so each order of an i.i.d. baseline is itself i.i.d."""
    orders = [tuple(range(n))]
    for seed in range(1, ORDERS):
        order = list(range(n))
        random.Random(seed).shuffle(order)
        orders.append(tuple(order))
    return tuple(orders)


def _one_order(
    baseline: Sequence[bool],
    current: Sequence[bool],
    horizon: int,
    *,
    margin: float = 0.0,
    regression: bool = True,
) -> list[float]:
    prior_b = BASELINE_PRIOR if regression else FINE_PRIOR
    prior_c = CURRENT_PRIOR if regression else FINE_PRIOR
    shift = 0.0 if regression else margin
    seen_b = passed_b = seen_c = passed_c = 0
    log_e = 0.0
    path: list[float] = []
    for b_end, c_end in reveal_schedule(len(baseline), horizon):
        if c_end > len(current):
            break
        k_b = sum(1 for x in baseline[seen_b:b_end] if x)
        k_c = sum(1 for x in current[seen_c:c_end] if x)
        n_b, n_c = b_end - seen_b, c_end - seen_c
        theta_b = _clip((passed_b + prior_b[0]) / (seen_b + prior_b[0] + prior_b[1]))
        theta_c = _clip((passed_c + prior_c[0]) / (seen_c + prior_c[0] + prior_c[1]))
        bets = theta_c < theta_b if regression else theta_b - theta_c < margin
        if bets and n_b and n_c:
            r = _null_rate(theta_b, theta_c, n_b, n_c, shift)
            c = r - shift
            log_e += (
                k_b * math.log(theta_b / r)
                + (n_b - k_b) * math.log((1 - theta_b) / (1 - r))
                + k_c * math.log(theta_c / c)
                + (n_c - k_c) * math.log((1 - theta_c) / (1 - c))
            )
        seen_b, passed_b, seen_c, passed_c = b_end, passed_b + k_b, c_end, passed_c + k_c
        path.append(log_e)
    return path


def _expected_log_e(
    p_b: float, p_c: float, n_baseline: int, horizon: int, *, margin: float, regression: bool
) -> float:
    """The log e-value the test would reach at `horizon` if its estimates were the rates
    p_b and p_c and the samples came out at those rates (what budget would decide it)."""
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
        c = r - shift
        total += n_b * (
            theta_b * math.log(theta_b / r) + (1 - theta_b) * math.log((1 - theta_b) / (1 - r))
        )
        total += n_c * (
            theta_c * math.log(theta_c / c) + (1 - theta_c) * math.log((1 - theta_c) / (1 - c))
        )
    return total


@dataclass(frozen=True, slots=True)
class BaselineJudgement:
    """Where the two-sample test of one case stands: `label` (regression, no regression,
    undecided, undecided: budget, undecided: baseline too small), whether it is `decided`,
    and for an undecided case a `hint` of what would decide it."""

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
) -> BaselineJudgement:
    """The verdict of a case: current samples (in order) against the baseline's samples (in
    their recorded order), at level `alpha` for this case, with `horizon` current samples
    at most (fixed in advance). A regression crossed at any look up to `len(current)`
    counts, so a round of several samples sees crossings inside it."""
    if not any(baseline):
        # Never passed in the baseline: there is nothing to fall from.
        return BaselineJudgement("no regression", True, "never passed in the baseline")
    horizon = max(horizon, len(current), 1)
    regression = _RegressionTest(baseline, horizon, alpha)
    threshold = math.log(1 / alpha)

    def fine(samples: Sequence[bool]) -> bool:
        path = evidence_path(baseline, samples, horizon, margin=margin, regression=False)
        return max(path, default=0.0) >= threshold

    if regression.crossed(current):
        return BaselineJudgement("regression", True)
    if fine(current):
        return BaselineJudgement("no regression", True)
    if not regression.could_cross([]) and not fine([True] * horizon):
        # Not even a current run that failed (or passed) every sample could be told apart
        # from this baseline: more samples of the current agent cannot help.
        hint = _baseline_hint(baseline, alpha, margin)
        return BaselineJudgement("undecided: baseline too small", False, hint)
    rest = horizon - len(current)
    if exhausted or (not regression.could_cross(current) and not fine([*current, *[True] * rest])):
        hint = _budget_hint(baseline, current, alpha, margin, horizon, regression.boundary)
        note = _margin_note(baseline, horizon, alpha, margin)
        return BaselineJudgement("undecided: budget", False, "; ".join(filter(None, [hint, note])))
    return BaselineJudgement("undecided", False)


class _RegressionTest:
    """The regression side of one case: the calibrated group-sequential boundary, or the
    e-process where calibrating would cost too much."""

    def __init__(self, baseline: Sequence[bool], horizon: int, alpha: float) -> None:
        self.baseline = baseline
        self.passed = sum(1 for x in baseline if x)
        self.horizon = horizon
        self.threshold = math.log(1 / alpha)
        self.boundary = regression_boundary(len(baseline), horizon, alpha)

    def crossed(self, current: Sequence[bool]) -> bool:
        """Whether any look so far called a regression."""
        if self.boundary is not None:
            return self.boundary.first_crossing(self.passed, current) is not None
        return self._e_crosses(current)

    def could_cross(self, current: Sequence[bool]) -> bool:
        """Whether a later look could call a regression, if every later sample failed."""
        if self.boundary is not None:
            passed = sum(1 for x in current if x)
            return self.boundary.can_cross(self.passed, passed, len(current))
        return self._e_crosses([*current, *[False] * (self.horizon - len(current))])

    def _e_crosses(self, current: Sequence[bool]) -> bool:
        path = evidence_path(self.baseline, current, self.horizon, regression=True)
        return max(path, default=0.0) >= self.threshold


def _budget_hint(
    baseline: Sequence[bool],
    current: Sequence[bool],
    alpha: float,
    margin: float,
    horizon: int,
    boundary: RegressionBoundary | None,
) -> str:
    """Roughly what budget would decide a case, if its rates stay as they are: for the
    regression side a normal approximation at the boundary's last look (80% power), for
    "no regression" the e-process's expected evidence."""
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
    """What "no regression" can be shown within, when the margin asked for is out of reach
    with this baseline and budget (empty when it is within reach)."""
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
    """The smallest margin that "no regression" could be shown within, with this baseline
    and `horizon` current samples, if the current agent passes at the baseline's rate (the
    expected evidence, in steps of `step`; None when no margin below 1 is reachable)."""
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

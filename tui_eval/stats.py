"""Statistics for small samples: pass@k, Fisher's exact test, Wilson intervals."""

from __future__ import annotations

import bisect
import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator: 1 − C(n−c, k) / C(n, k).

    The chance that at least one of k samples drawn without replacement from n (of which
    c passed) passes.

    Raises:
        ValueError: k is not within 1..n, or c is not within 0..n.
    """
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n; got k={k} with n={n} samples")
    if not 0 <= c <= n:
        raise ValueError(f"passed count c={c} must be within 0..{n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p-value of Fisher's exact test on the table [[a, b], [c, d]].

    Here: a/b are the passed/failed samples of one run, c/d of the other.
    """
    row1, row2, col1 = a + b, c + d, a + c
    total = row1 + row2
    if total == 0 or row1 == 0 or row2 == 0 or col1 == 0 or col1 == total:
        return 1.0
    denom = math.comb(total, col1)

    def prob(x: int) -> float:
        return math.comb(row1, x) * math.comb(row2, col1 - x) / denom

    observed = prob(a)
    low, high = max(0, col1 - row2), min(row1, col1)
    # Relative tolerance as in SciPy, so ties in floating point count as "as extreme".
    return min(1.0, sum(p for x in range(low, high + 1) if (p := prob(x)) <= observed * (1 + 1e-7)))


def wilson_interval(passed: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a pass rate (95% by default); (0, 1) with no samples."""
    if n == 0:
        return 0.0, 1.0
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    return low, 1.0 if p >= 1.0 else min(1.0, centre + half)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased pass^k estimator: C(c, k) / C(n, k).

    The chance that k samples drawn without replacement from n (of which c passed) *all*
    pass — the reliability metric agent benchmarks use beside pass@k.

    Raises:
        ValueError: k is not within 1..n, or c is not within 0..n.
    """
    if not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n; got k={k} with n={n} samples")
    if not 0 <= c <= n:
        raise ValueError(f"passed count c={c} must be within 0..{n}")
    return math.comb(c, k) / math.comb(n, k)


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: the normal's).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z975 = 1.959964
Z80 = 0.841621


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (95% two-sided)."""
    if df < 1:
        return math.inf
    return _T975[df - 1] if df <= len(_T975) else Z975


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean of `values` and its 95% interval from the standard
    error of the mean (t quantiles for few values). With the values being per-case rates,
    this is the standard error clustered by case (samples of one case are not independent)."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 1.0
    mean = sum(values) / n
    if n == 1:
        return mean, 0.0, 1.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = t975(n - 1) * math.sqrt(variance / n)
    return mean, mean - half, mean + half


def clustered_rate_interval(rates: list[float], counts: list[int]) -> tuple[float, float]:
    """The 95% interval of the mean of per-case pass rates (`rates`, from `counts` samples
    each), clustered by case, that never collapses to a point.

    The variance is the larger of the clustered one (the spread of the case rates) and the
    binomial one of independent samples (design effect floored at 1): with the clustered
    variance larger, a t interval on the cases; else a Wilson interval on the samples'
    effective count, which keeps a positive width at 0% and 100%.
    """
    cases = [(r, n) for r, n in zip(rates, counts, strict=True) if n > 0]
    m = len(cases)
    if m == 0:
        return 0.0, 1.0
    mean = sum(r for r, _ in cases) / m
    effective = m * m / sum(1 / n for _, n in cases)
    binomial = mean * (1 - mean) / effective
    if m > 1:
        clustered = sum((r - mean) ** 2 for r, _ in cases) / (m - 1) / m
        if clustered > binomial:
            half = t975(m - 1) * math.sqrt(clustered)
            return max(0.0, mean - half), min(1.0, mean + half)
    return _wilson_rate(mean, effective)


def _wilson_rate(p: float, n: float, z: float = Z975) -> tuple[float, float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


EXACT_SIGN_FLIP_MAX = 16
"""Up to this many cases the paired test is an exact sign-flip permutation test."""


def paired_p_value(differences: list[float], variances: list[float] | None = None) -> float:
    """Two-sided p-value that paired `differences` (current − baseline, one per case) are
    centred on zero: an exact sign-flip permutation test for up to 16 cases, a paired t
    test (n − 1 degrees of freedom) beyond, its standard error never below the sampling
    noise of the cases' rates (`variances`, one per case, when given)."""
    return paired_test(differences, variances)[0]


def paired_test(
    differences: list[float], variances: list[float] | None = None, *, level: float = 0.95
) -> tuple[float, float, float]:
    """(p-value, low, high): the paired test of `paired_p_value` and the interval of the
    mean difference obtained by inverting that same test (the shifts it does not reject
    at 1 − `level`), so the interval excludes 0 exactly when p < 1 − `level`."""
    n = len(differences)
    if n == 0:
        return 1.0, 0.0, 0.0
    mean = sum(differences) / n
    p_at = _sign_flip(differences) if n <= EXACT_SIGN_FLIP_MAX else _t_test(differences, variances)
    alpha = 1 - level
    low = _boundary(p_at, mean, -1.0, alpha)
    high = _boundary(p_at, mean, 1.0, alpha)
    p = p_at(0.0)
    # Agreement with the p-value at 0, whatever the shape of the acceptance region.
    if p < alpha and low <= 0.0 <= high:
        if mean > 0:
            low = min(high, math.nextafter(0.0, 1.0))
        else:
            high = max(low, math.nextafter(0.0, -1.0))
    elif p >= alpha and not low <= 0.0 <= high:
        low, high = min(low, 0.0), max(high, 0.0)
    return p, low, high


def _boundary(p_at: Callable[[float], float], mean: float, end: float, alpha: float) -> float:
    """The last shift from `mean` towards `end` that the test does not reject."""
    if p_at(end) >= alpha:
        return end
    inside, outside = mean, end
    for _ in range(50):
        mid = (inside + outside) / 2
        if p_at(mid) >= alpha:
            inside = mid
        else:
            outside = mid
    return inside


def _sign_flip(differences: list[float]) -> Callable[[float], float]:
    """The exact two-sided sign-flip p-value of the differences shifted by δ, as a function
    of δ: every sign pattern's sum Σ ε·d is kept by the number of flipped signs k, since
    the shifted sum is Σ ε·d − δ·(n − 2k)."""
    n = len(differences)
    sums: list[list[float]] = [[0.0]]
    for d in differences:
        grown: list[list[float]] = [[] for _ in range(len(sums) + 1)]
        for k, values in enumerate(sums):
            grown[k].extend(v + d for v in values)
            grown[k + 1].extend(v - d for v in values)
        sums = grown
    for values in sums:
        values.sort()
    total = sum(differences)
    patterns = 1 << n

    def p_value(delta: float) -> float:
        observed = abs(total - n * delta) - 1e-12 * (1 + abs(total))
        extreme = 0
        for k, values in enumerate(sums):
            centre = delta * (n - 2 * k)
            extreme += len(values) - bisect.bisect_left(values, centre + observed)
            extreme += bisect.bisect_right(values, centre - observed)
            if observed <= 0:  # every pattern counts once
                extreme = patterns
                break
        return min(1.0, extreme / patterns)

    return p_value


def _t_test(differences: list[float], variances: list[float] | None) -> Callable[[float], float]:
    """The paired t test's two-sided p-value of the differences shifted by δ."""
    n = len(differences)
    mean = sum(differences) / n
    spread = sum((d - mean) ** 2 for d in differences) / (n - 1) / n
    floor = sum(variances) / (n * n) if variances else 0.0
    se = math.sqrt(max(spread, floor))
    if se <= 1e-12 * (1 + abs(mean)):
        # Identical differences and no noise estimate: the sign-flip answer, which for
        # identical values is exact — the patterns with all signs alike.
        nonzero = sum(1 for d in differences if d != 0.0)
        at_mean = 1.0 if nonzero == 0 else 2.0 / (1 << min(nonzero, 1000))
        return lambda delta: 1.0 if delta == mean or nonzero == 0 else at_mean
    return lambda delta: 2 * _t_upper(abs(mean - delta) / se, n - 1)


def _t_upper(t: float, df: int) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (t ≥ 0)."""
    return 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (continued fraction)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return front * h / a


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment: family-wise error control across all comparisons."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def fisher_power(p1: float, p2: float, n: int, alpha: float = 0.05) -> float:
    """The exact power of the two-sided Fisher test (as `fisher_exact`) at level `alpha`
    with n samples a side, when the sides pass with probabilities p1 and p2."""
    binom1 = [math.comb(n, k) * p1**k * (1 - p1) ** (n - k) for k in range(n + 1)]
    binom2 = [math.comb(n, k) * p2**k * (1 - p2) ** (n - k) for k in range(n + 1)]
    power = 0.0
    for total in range(2 * n + 1):
        low, high = max(0, total - n), min(n, total)
        # Given the total passed, the first side's count is hypergeometric.
        weights = [math.comb(n, x) * math.comb(n, total - x) for x in range(low, high + 1)]
        denom = sum(weights)
        ordered = sorted(weights)
        cutoff = -1.0
        tail = 0.0
        i = 0
        while i < len(ordered):  # least likely first: counts reject while their tail < alpha
            j = i
            while j < len(ordered) and ordered[j] <= ordered[i] * (1 + 1e-7):
                tail += ordered[j]
                j += 1
            if tail / denom >= alpha:
                break
            cutoff = ordered[j - 1]
            i = j
        if cutoff < 0:
            continue
        power += sum(
            binom1[low + j] * binom2[total - low - j]
            for j in range(len(weights))
            if weights[j] <= cutoff * (1 + 1e-7)
        )
    return power


def samples_needed(
    p1: float, p2: float, *, alpha: float = 0.05, power: float = 0.8, limit: int = 400
) -> int | None:
    """Samples per side (for one case) at which Fisher's exact test at level `alpha` (the
    Holm-adjusted level the label uses) has `power` to tell pass rates p1 and p2 apart:
    found by search on the exact power. Beyond `limit` a side, the normal approximation
    for two proportions (with the continuity correction) stands in. None when the rates
    do not differ."""
    if p1 == p2:
        return None
    mean = (p1 + p2) / 2
    z_alpha = _normal_quantile(1 - alpha / 2)
    z_power = _normal_quantile(power)
    spread = z_alpha * math.sqrt(2 * mean * (1 - mean)) + z_power * math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2)
    )
    approx = spread**2 / (p1 - p2) ** 2
    corrected = approx / 4 * (1 + math.sqrt(1 + 4 / (approx * abs(p1 - p2)))) ** 2
    guess = max(2, math.ceil(corrected))
    if guess > limit:
        return guess
    return _exact_samples_needed(round(p1, 6), round(p2, 6), alpha, power, limit, guess)


@lru_cache(maxsize=1024)
def _exact_samples_needed(
    p1: float, p2: float, alpha: float, power: float, limit: int, guess: int
) -> int | None:
    n = max(2, guess // 2)
    while n <= limit and fisher_power(p1, p2, n, alpha) < power:
        n += max(1, n // 8)
    if n > limit:
        return n
    # Step back to the smallest n that still has the power (power is nearly monotone).
    while n > 2 and fisher_power(p1, p2, n - 1, alpha) >= power:
        n -= 1
    return n


def _normal_quantile(q: float) -> float:
    """The standard normal quantile."""
    return statistics.NormalDist().inv_cdf(q)


# -- An anytime-valid test of a current pass rate against a fixed baseline ------------------
#
# `decide()` compares a stream of current samples with a baseline recorded earlier. The
# test is a product of e-variables, one per block of samples, after Turner, Ly & Grünwald
# ("Generic E-variables for exact sequential k-sample tests", 2023): a block holds a few
# baseline samples (revealed in their recorded order, in proportion to the budget) and the
# current samples drawn meanwhile. For an alternative (θb, θc) learned from earlier blocks,
# the block's likelihood ratio against the null point closest to it in the sense of
# Kullback–Leibler (the reverse information projection) has expectation ≤ 1 under *every*
# rate the null allows, so the running product is a test supermartingale: by Ville's
# inequality it reaches 1/α with probability ≤ α however often it is looked at. It uses the
# baseline's own likelihood (no Bonferroni split between the baseline's interval and the
# current's test), and a regression and "no regression within the margin" are disjoint
# claims, so each gets the case's whole α (the partitioning principle).

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
    at most (fixed in advance)."""
    if not any(baseline):
        # Never passed in the baseline: there is nothing to fall from.
        return BaselineJudgement("no regression", True, "never passed in the baseline")
    threshold = math.log(1 / alpha)
    horizon = max(horizon, 1)

    def crosses(samples: Sequence[bool], regression: bool) -> bool:
        path = evidence_path(baseline, samples, horizon, margin=margin, regression=regression)
        return max(path, default=0.0) >= threshold

    if crosses(current, True):
        return BaselineJudgement("regression", True)
    if crosses(current, False):
        return BaselineJudgement("no regression", True)
    rest = max(0, horizon - len(current))
    if not crosses([False] * horizon, True) and not crosses([True] * horizon, False):
        # Not even a current run that failed (or passed) every sample could be told apart
        # from this baseline: more samples of the current agent cannot help.
        return BaselineJudgement(
            "undecided: baseline too small", False, _baseline_hint(baseline, alpha, margin)
        )
    if exhausted or (
        not crosses([*current, *([False] * rest)], True)
        and not crosses([*current, *([True] * rest)], False)
    ):
        return BaselineJudgement(
            "undecided: budget", False, _budget_hint(baseline, current, alpha, margin, horizon)
        )
    return BaselineJudgement("undecided", False)


def _budget_hint(
    baseline: Sequence[bool], current: Sequence[bool], alpha: float, margin: float, horizon: int
) -> str:
    """Roughly what budget would decide a case, if its rates stay as they are."""
    p_b = sum(baseline) / len(baseline)
    p_c = (sum(current) + 0.5) / (len(current) + 1) if current else p_b
    threshold = math.log(1 / alpha)
    for budget in (horizon * 2**i for i in range(1, 8)):
        for regression in (True, False):
            if (
                _expected_log_e(
                    p_b, p_c, len(baseline), budget, margin=margin, regression=regression
                )
                >= threshold
            ):
                return f"~{budget} samples would likely decide it"
    return _baseline_hint(baseline, alpha, margin)


def _baseline_hint(baseline: Sequence[bool], alpha: float, margin: float) -> str:
    """How many baseline samples would make the margin reachable."""
    p_b = sum(baseline) / len(baseline)
    threshold = math.log(1 / alpha)
    for size in (len(baseline) * 2**i for i in range(1, 8)):
        if _expected_log_e(p_b, p_b, size, 4 * size, margin=margin, regression=False) >= threshold:
            return f"a baseline of ~{size} samples would let it decide"
    return "the baseline is too small to decide it"


def reachable_margin(
    baseline: Sequence[bool], horizon: int, *, alpha: float, step: float = 0.01
) -> float | None:
    """The smallest margin that "no regression" could be shown within, with this baseline
    and `horizon` current samples, if the current agent passes at the baseline's rate (the
    expected evidence; None when no margin below 1 is reachable)."""
    if not baseline:
        return None
    p_b = sum(baseline) / len(baseline)
    threshold = math.log(1 / alpha)
    steps = round(1 / step)
    for i in range(1, steps):
        margin = i * step
        if (
            _expected_log_e(p_b, p_b, len(baseline), horizon, margin=margin, regression=False)
            >= threshold
        ):
            return margin
    return None

"""Statistics for small samples: pass@k, Fisher's exact test, Wilson intervals."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator, 1 − C(n−c, k) / C(n, k): the chance that one of k
    samples drawn without replacement from n (c passed) passes.

    Raises:
        ValueError: k is not within 1..n, or c is not within 0..n.
    """
    _check_k("pass@k", n, c, k)
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased pass^k estimator, C(c, k) / C(n, k): the chance that k samples drawn
    without replacement from n (c passed) *all* pass.

    Raises:
        ValueError: k is not within 1..n, or c is not within 0..n.
    """
    _check_k("pass^k", n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_k(what: str, n: int, c: int, k: int) -> None:
    if not 1 <= k <= n:
        raise ValueError(f"{what} needs 1 <= k <= n; got k={k} with n={n} samples")
    if not 0 <= c <= n:
        raise ValueError(f"passed count c={c} must be within 0..{n}")


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p-value of Fisher's exact test on [[a, b], [c, d]] (passed/failed per run)."""
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
    return _wilson_rate(passed / n, n, z) if n else (0.0, 1.0)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: the normal's).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z975 = 1.959964


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (95% two-sided)."""
    if df < 1:
        return math.inf
    return _T975[df - 1] if df <= len(_T975) else Z975


def clustered_rate_interval(rates: list[float], counts: list[int]) -> tuple[float, float]:
    """The 95% interval of the mean per-case pass rate, clustered by case: Wilson on the
    effective sample count (a positive width at 0% and 100%), widened to hold the t interval
    on the cases where rates spread more than independent samples would (the t interval
    alone undercovers at 1-2 samples a case)."""
    cases = [(r, n) for r, n in zip(rates, counts, strict=True) if n > 0]
    m = len(cases)
    if m == 0:
        return 0.0, 1.0
    mean = sum(r for r, _ in cases) / m
    effective = m * m / sum(1 / n for _, n in cases)
    low, high = _wilson_rate(mean, effective)
    binomial = mean * (1 - mean) / effective
    if m > 1:
        clustered = sum((r - mean) ** 2 for r, _ in cases) / (m - 1) / m
        if clustered > binomial:
            half = t975(m - 1) * math.sqrt(clustered)
            low, high = min(low, max(0.0, mean - half)), max(high, min(1.0, mean + half))
    return low, high


def _wilson_rate(p: float, n: float, z: float = Z975) -> tuple[float, float]:
    """The Wilson interval of rate `p` over `n` (effective) samples: exact ends at 0% and 100%."""
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if p <= 0.0 else low), (1.0 if p >= 1.0 else high)


EXACT_SIGN_FLIP_MAX = 16
"""Up to this many cases the paired test is an exact sign-flip permutation test."""


def paired_test(
    differences: list[float], variances: list[float] | None = None, *, level: float = 0.95
) -> tuple[float, float, float]:
    """(p-value, low, high): the two-sided test that paired `differences` (current −
    baseline, per case) are centred on zero (an exact sign-flip permutation test up to 16
    cases, else a paired t test whose standard error is never below the cases' sampling
    noise, `variances`), and the interval of the mean difference inverting that same test,
    so it excludes 0 exactly when p < 1 − `level`."""
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
    """The exact sign-flip p-value as a function of the shift δ: each sign pattern's Σ ε·d
    is kept by its flipped-sign count k, the shifted sum being Σ ε·d − δ·(n − 2k)."""
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
    df = n - 1  # two-sided: 2 · P(T > |t|) = I_{df / (df + t²)}(df / 2, ½)
    return lambda delta: _betainc(df / 2, 0.5, df / (df + ((mean - delta) / se) ** 2))


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
    """The exact power of `fisher_exact` at `alpha`, n samples a side passing at p1 and p2."""
    if n < 1:
        return 0.0
    rejected = _fisher_rejected(n, float(alpha))
    return float(_binomial(n, p1) @ (rejected @ _binomial(n, p2)))


@lru_cache(maxsize=256)
def _fisher_rejected(n: int, alpha: float) -> NDArray[np.bool_]:
    """R[x, y]: the two-sided Fisher test at `alpha` rejects x of n against y of n. Given
    T = x + y the first count is hypergeometric, symmetric about T/2: x < T/2 (and its
    mirror) is rejected when 2 · P(X ≤ x | T) stays below α."""
    import numpy as np

    x = np.arange(n + 1)
    totals = np.arange(2 * n + 1)[:, None]
    log_fact = np.array([math.lgamma(i + 1) for i in range(n + 1)])
    log_comb = log_fact[n] - log_fact - log_fact[::-1]
    other = totals - x[None, :]
    valid = (other >= 0) & (other <= n)
    log_weight = np.where(valid, log_comb[None, :] + log_comb[np.clip(other, 0, n)], -np.inf)
    weight = np.exp(log_weight - log_weight.max(axis=1, keepdims=True))
    below = np.cumsum(weight, axis=1) / weight.sum(axis=1, keepdims=True)
    lower = valid & (2 * x[None, :] < totals) & (2 * below < alpha)
    # lower[T, x] → the table (x, T − x) and its mirror (T − x, x).
    at_total = lower[x[:, None] + x[None, :], x[:, None]]
    return np.asarray(at_total | at_total.T)


def _binomial(n: int, p: float) -> NDArray[np.float64]:
    """Bin(k; n, p) for k = 0..n."""
    import numpy as np

    if p <= 0.0 or p >= 1.0:
        point = np.zeros(n + 1)
        point[0 if p <= 0.0 else n] = 1.0
        return point
    k = np.arange(n + 1)
    log_fact = np.array([math.lgamma(i + 1) for i in range(n + 1)])
    log_comb = log_fact[n] - log_fact - log_fact[::-1]
    return np.asarray(np.exp(log_comb + k * math.log(p) + (n - k) * math.log1p(-p)))


def samples_needed(
    p1: float,
    p2: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    limit: int = 400,
    at_least: int = 2,
) -> int | None:
    """Samples per side for Fisher's test at `alpha` to tell p1 from p2 with `power` (None:
    equal): exact power searched from `at_least`; beyond `limit`, the normal approximation
    with continuity correction."""
    if p1 == p2:
        return None
    mean = (p1 + p2) / 2
    z_alpha = normal_quantile(1 - alpha / 2)
    z_power = normal_quantile(power)
    spread = z_alpha * math.sqrt(2 * mean * (1 - mean)) + z_power * math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2)
    )
    approx = spread**2 / (p1 - p2) ** 2
    corrected = approx / 4 * (1 + math.sqrt(1 + 4 / (approx * abs(p1 - p2)))) ** 2
    guess = max(2, at_least, math.ceil(corrected))
    if guess > limit:
        return guess
    return _exact_samples_needed(
        round(p1, 6), round(p2, 6), alpha, power, limit, guess, max(2, at_least)
    )


@lru_cache(maxsize=1024)
def _exact_samples_needed(
    p1: float, p2: float, alpha: float, power: float, limit: int, guess: int, at_least: int = 2
) -> int | None:
    n = max(at_least, guess // 2)
    while n <= limit and fisher_power(p1, p2, n, alpha) < power:
        n += max(1, n // 8)
    if n > limit:
        return n
    # Step back to the smallest n that still has the power (power is nearly monotone).
    while n > at_least and fisher_power(p1, p2, n - 1, alpha) >= power:
        n -= 1
    return n


def normal_quantile(q: float) -> float:
    """The standard normal distribution's `q` quantile (`normal_quantile(0.975)` ≈ 1.96)."""
    return statistics.NormalDist().inv_cdf(q)

"""Statistics for small samples: pass@k, Fisher's exact test, Wilson intervals."""

from __future__ import annotations

import math


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
    return max(0.0, centre - half), min(1.0, centre + half)


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


def paired_p_value(differences: list[float]) -> float:
    """Two-sided p-value that paired `differences` (current − baseline, one per case) are
    centred on zero: an exact sign-flip permutation test for up to 16 cases, a normal
    approximation of the paired t statistic beyond."""
    values = [d for d in differences if d != 0.0]
    n = len(values)
    if n == 0:
        return 1.0
    observed = abs(sum(values))
    if n <= 16:
        extreme = 0
        for mask in range(1 << n):
            total = sum(-v if mask >> i & 1 else v for i, v in enumerate(values))
            if abs(total) >= observed - 1e-12:
                extreme += 1
        return extreme / (1 << n)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    if sd == 0.0:
        return 0.0
    z = abs(mean) / (sd / math.sqrt(n))
    return math.erfc(z / math.sqrt(2))


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


def samples_needed(p1: float, p2: float) -> int | None:
    """Samples per side to detect pass rates p1 vs p2 (two-sided α = 0.05, 80% power), by
    the normal approximation for two proportions; None when they do not differ."""
    if p1 == p2:
        return None
    mean = (p1 + p2) / 2
    spread = Z975 * math.sqrt(2 * mean * (1 - mean)) + Z80 * math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2)
    )
    return max(2, math.ceil(spread**2 / (p1 - p2) ** 2))

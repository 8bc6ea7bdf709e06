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

"""An exact group-sequential test of "the current agent regressed" against a fixed baseline.

`decide()` looks at a case after every current sample, up to a horizon fixed in advance
(`max_samples`). With the baseline's count x of n0 and, after t current samples, s passed,
the statistic at look t is the one-sided mid-p-value of Fisher's exact test,
P(S < s | margins) + ½ P(S = s | margins) (a hypergeometric tail). The test calls a
regression at the first look t with that p-value at most a_t = 1 − Φ(c · (t/N)^(Δ − ½)),
Δ = ¼: a spending shape between O'Brien–Fleming's (Δ = 0) and Pocock's (Δ = ½). Written as
a boundary: b_t(x), the largest s that look t rejects, made nondecreasing in x.

The constant c is calibrated exactly. Under a null point where both agents pass with
probability p, the chance of ever crossing is Σ_x Bin(x; n0, p) · P(∃ t ≤ N: S_t ≤ b_t(x)),
computed by dynamic programming over the paths of S (their counts do not depend on p, so
one pass serves every p); its maximum over p (a grid on (0, 1), refined around its peaks)
is held at `SAFETY` · α by bisection on c. A current agent that passes more often than the
baseline only lowers that chance (crossing is "S small"), so the level holds over the whole
null hypothesis "the current rate is at least the baseline's", however often it is looked
at up to the horizon.

numpy is imported inside the functions that calibrate, so importing tui_eval stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tui_eval.stats.proportions import normal_quantile

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SHAPE = 0.25
"""Δ of the boundary a_t = 1 − Φ(c · (t/N)^(Δ − ½))."""
SAFETY = 0.999
"""The calibrated size is held at this fraction of α (room for rounding)."""
GRID = 160
"""Null rates p the size is computed at while calibrating, before refining around peaks."""
MAX_WORK = 12_000_000
"""The largest (n0 + 1) · N · (N + 1) calibrated exactly (a few seconds at most); beyond it
`regression_boundary` returns None and the caller uses its anytime-valid e-process."""


@dataclass(frozen=True, slots=True)
class RegressionBoundary:
    """The calibrated boundary of one (baseline size, horizon, α).

    Attributes:
        baseline_total: n0, the baseline's samples.
        horizon: N, the most current samples the test looks at (fixed in advance).
        alpha: the level it is calibrated to.
        scale: the calibrated c.
        size: the exact largest chance of a false regression over the null (≤ α).
        limits: limits[x][t − 1] = b_t(x), the largest passed count that look t calls a
            regression when x of the baseline passed (−1: none).
        reachable: reachable[x][t] = the largest b_u(x) for looks u > t (−1: none).
    """

    baseline_total: int
    horizon: int
    alpha: float
    scale: float
    size: float
    limits: tuple[tuple[int, ...], ...]
    reachable: tuple[tuple[int, ...], ...]

    def first_crossing(self, baseline_passed: int, current: Sequence[bool]) -> int | None:
        """The first look (number of current samples, in their order) at which the test
        calls a regression, or None."""
        row = self.limits[baseline_passed]
        passed = 0
        for t, sample in enumerate(current[: self.horizon], start=1):
            passed += bool(sample)
            if passed <= row[t - 1]:
                return t
        return None

    def can_cross(self, baseline_passed: int, passed: int, seen: int) -> bool:
        """Whether a look after the first `seen` current samples (of which `passed`
        passed) could still call a regression: if every later sample failed."""
        if seen >= self.horizon:
            return False
        return self.reachable[baseline_passed][seen] >= passed


def regression_boundary(
    baseline_total: int, horizon: int, alpha: float
) -> RegressionBoundary | None:
    """The calibrated boundary for a baseline of `baseline_total` samples, looks after
    each of up to `horizon` current samples, at level `alpha` (cached). None when the
    calibration would cost more than `MAX_WORK` allows."""
    if baseline_total < 1 or horizon < 1 or not 0 < alpha < 1:
        raise ValueError(
            f"a regression boundary needs a baseline, a horizon and 0 < α < 1; got "
            f"n0={baseline_total}, N={horizon}, α={alpha}"
        )
    if (baseline_total + 1) * horizon * (horizon + 1) > MAX_WORK:
        return None
    return _calibrated(baseline_total, horizon, float(f"{alpha:.10g}"))


@lru_cache(maxsize=32)
def _calibrated(n0: int, horizon: int, alpha: float) -> RegressionBoundary:
    import numpy as np

    table = _p_values(n0, horizon)
    target = SAFETY * alpha
    rates = (np.arange(GRID) + 0.5) / GRID

    def size_at(scale: float) -> tuple[float, NDArray[np.int64]]:
        limits = _limits(table, scale, horizon)
        return _size(_crossings(limits, n0, horizon), n0, rates), limits

    low, high = 0.0, normal_quantile(1 - alpha / (2 * horizon)) + 1.0
    size, limits = size_at(high)
    while size > target:  # not expected: the bound is Bonferroni over the looks, plus one
        low, high = high, high * 2
        size, limits = size_at(high)
    for _ in range(40):
        if high - low < 1e-4:
            break
        middle = (low + high) / 2
        found, candidate = size_at(middle)
        if found > target:
            low = middle
        else:
            high, size, limits = middle, found, candidate
    rows = limits.tolist()
    reach = np.maximum.accumulate(limits[:, ::-1], axis=1)[:, ::-1]
    reachable = np.concatenate([reach, np.full((n0 + 1, 1), -1)], axis=1).tolist()
    return RegressionBoundary(
        baseline_total=n0,
        horizon=horizon,
        alpha=alpha,
        scale=high,
        size=size,
        limits=tuple(tuple(r) for r in rows),
        reachable=tuple(tuple(r) for r in reachable),
    )


def _p_values(n0: int, horizon: int) -> NDArray[np.float64]:
    """table[x, t − 1, s]: the one-sided mid-p-value of Fisher's test that the current
    passes less often, with x of n0 baseline samples and s of t current samples passed
    (2 where s > t: never rejected)."""
    import numpy as np

    logfact = np.array([math.lgamma(i + 1) for i in range(n0 + horizon + 2)])
    table = np.full((n0 + 1, horizon, horizon + 1), 2.0)
    xs = np.arange(n0 + 1)
    for t in range(1, horizon + 1):
        total = n0 + t
        k = np.arange(total + 1)[:, None]  # passed in both
        x = xs[None, :]  # the baseline's share of them
        valid = (x <= k) & (n0 - x <= total - k)
        kk, xx = np.broadcast_arrays(k, x)
        log_pmf = (
            _log_comb(logfact, kk, np.minimum(xx, kk))
            + _log_comb(logfact, total - kk, np.clip(n0 - xx, 0, total - kk))
            - _log_comb(logfact, np.array(total), np.array(n0))
        )
        pmf = np.where(valid, np.exp(log_pmf), 0.0)
        # P(X' ≥ x) for the baseline's share X': the current's share is k − X' ≤ s.
        upper = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]
        mid = upper - 0.5 * pmf
        s = np.arange(t + 1)
        table[:, t - 1, : t + 1] = mid[xs[:, None] + s[None, :], xs[:, None]]
    return table


def _log_comb(logfact: Any, n: Any, k: Any) -> Any:
    return logfact[n] - logfact[k] - logfact[n - k]


def _limits(table: NDArray[np.float64], scale: float, horizon: int) -> NDArray[np.int64]:
    """b_t(x) for the constant `scale`: the largest s that look t rejects, nondecreasing
    in x (more baseline passes never make a drop harder to call)."""
    import numpy as np

    looks = np.arange(1, horizon + 1) / horizon
    levels = np.array(
        [0.5 * math.erfc(scale * f ** (SHAPE - 0.5) / math.sqrt(2)) for f in looks.tolist()]
    )
    rejected = table <= levels[None, :, None]
    s = np.arange(table.shape[2])
    limits = np.where(rejected, s[None, None, :], -1).max(axis=2)
    return np.maximum.accumulate(limits, axis=0)


@dataclass(frozen=True, slots=True)
class _Crossings:
    """Where and how the paths first cross: per crossing, the baseline count x, the look
    t, the passed count s and log(number of paths of the current samples that first cross
    there)."""

    x: Any
    t: Any
    s: Any
    log_paths: Any


def _crossings(limits: NDArray[np.int64], n0: int, horizon: int) -> _Crossings:
    """The first crossings of every current path, by dynamic programming over the passed
    count (paths counted, not weighted: one pass serves every null rate). Each baseline
    count's row is rescaled every step and its log scale kept, so nothing overflows."""
    import numpy as np

    alive = np.zeros((n0 + 1, horizon + 1))
    alive[:, 0] = 1.0
    log_scale = np.zeros(n0 + 1)
    s = np.arange(horizon + 1)
    found_x, found_t, found_s, found_log = [], [], [], []
    for t in range(1, horizon + 1):
        alive[:, 1 : t + 1] = alive[:, 1 : t + 1] + alive[:, 0:t]
        hit = s[None, :] <= limits[:, t - 1][:, None]
        crossed = np.where(hit, alive, 0.0)
        xs, ss = np.nonzero(crossed)
        if xs.size:
            found_x.append(xs)
            found_t.append(np.full(xs.size, t))
            found_s.append(ss)
            found_log.append(np.log(crossed[xs, ss]) + log_scale[xs])
            alive[hit] = 0.0
        top = alive.max(axis=1)
        top[top == 0.0] = 1.0
        alive /= top[:, None]
        log_scale += np.log(top)
    if not found_x:
        empty = np.zeros(0, dtype=np.int64)
        return _Crossings(empty, empty, empty, np.zeros(0))
    return _Crossings(
        np.concatenate(found_x),
        np.concatenate(found_t),
        np.concatenate(found_s),
        np.concatenate(found_log),
    )


def null_size(
    limits: NDArray[np.int64], n0: int, horizon: int, rates: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The chance of ever calling a regression when both agents pass with probability p,
    for each p in `rates` (exact up to rounding)."""
    return _size_curve(_crossings(limits, n0, horizon), n0, rates)


def _size_curve(found: _Crossings, n0: int, rates: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    if found.x.size == 0:
        return np.zeros(len(rates))
    p = np.clip(rates, 1e-300, 1 - 1e-16)[None, :]
    log_p, log_q = np.log(p), np.log1p(-p)
    logfact = np.array([math.lgamma(i + 1) for i in range(n0 + 1)])
    log_binom = (logfact[n0] - logfact[found.x] - logfact[n0 - found.x])[:, None]
    x, t, s = found.x[:, None], found.t[:, None], found.s[:, None]
    log_terms = (
        log_binom
        + x * log_p
        + (n0 - x) * log_q
        + found.log_paths[:, None]
        + s * log_p
        + (t - s) * log_q
    )
    return np.asarray(np.exp(log_terms).sum(axis=0))


def _size(found: _Crossings, n0: int, rates: NDArray[np.float64]) -> float:
    """The largest size over the null rates: on the grid, then on a finer grid around the
    grid's three highest local peaks (the size is a smooth polynomial in p)."""
    import numpy as np

    curve = _size_curve(found, n0, rates)
    if not curve.size:
        return 0.0
    step = rates[1] - rates[0] if len(rates) > 1 else 0.5
    peaks = [
        i
        for i in range(len(curve))
        if (i == 0 or curve[i] >= curve[i - 1])
        and (i + 1 == len(curve) or curve[i] >= curve[i + 1])
    ]
    peaks = sorted(peaks, key=lambda i: -curve[i])[:3]
    fine = np.concatenate([rates[i] + np.linspace(-step, step, 41) for i in peaks])
    fine = fine[(fine > 0) & (fine < 1)]
    return float(max(curve.max(), _size_curve(found, n0, fine).max(initial=0.0)))


__all__ = ["RegressionBoundary", "null_size", "regression_boundary"]

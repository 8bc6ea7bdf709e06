"""An exact group-sequential test of "the current agent regressed" against a fixed baseline.

`decide()` looks at a case after every current sample, up to a horizon fixed in advance
(`max_samples`). With the baseline's count x of n0 and, after t current samples, s passed,
the statistic at look t is Fisher's one-sided mid-p-value, P(S < s | margins) +
½ P(S = s | margins). A regression is called at the first look with it at most
a_t = 1 − Φ(c · (t/N)^(Δ − ½)), Δ = ¼ (between O'Brien–Fleming's Δ = 0 and Pocock's Δ = ½);
as a boundary, b_t(x) is the largest s look t rejects, made nondecreasing in x.

The constant c is calibrated exactly. When both agents pass with probability p, the chance
of ever crossing is Σ_x Bin(x; n0, p) · P(∃ t ≤ N: S_t ≤ b_t(x)). Given S_t = s every order
of the samples is equally likely whatever p is, so a dynamic programme over t and s follows,
per x, the share of the C(t, s) orders not yet crossed: one pass serves every p, and a share
in [0, 1] neither overflows nor loses the rare paths near the boundary. The chance at p is a
sum over first crossings of share · Bin(s; t, p), in logs; its maximum over p (a grid denser
near 0 and 1, refined around its peaks) is held at `SAFETY` · α by bisection on c, then
re-checked at the worst rates by an independent forward recursion on the probabilities:
if they disagree or exceed α, no boundary is returned (the caller uses its e-process). A
current agent passing more often only lowers that chance, so the level holds over the whole
null "the current rate is at least the baseline's", however often it is looked at. (numpy
is imported in the functions: `import tui_eval` stays fast.)
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
"""Null rates p = sin²(π/2 · (i + ½)/GRID) the size is computed at before refining: denser
near 0 and 1, where the peaks of long horizons are narrow."""
MAX_WORK = 12_000_000
"""The largest (n0 + 1) · N · (N + 1) calibrated exactly (a few seconds at most); beyond it
`regression_boundary` returns None (`calibrated_horizon`)."""
CHECK_TOLERANCE = 1e-7
"""How far (relative) the independent re-check of the size may differ from the calibration."""


@dataclass(frozen=True, slots=True)
class RegressionBoundary:
    """The calibrated boundary of one (baseline size, horizon, α).

    Attributes:
        horizon: N, the most current samples the test looks at (fixed in advance).
        scale: the calibrated c.
        size: the exact largest chance of a false regression over the null (≤ α).
        worst_rate: the shared pass rate at which `size` is reached (and re-checked).
        limits: limits[x][t − 1] = b_t(x), the largest passed count that look t calls a
            regression when x of the baseline passed (−1: none).
        reachable: reachable[x][t] = the largest b_u(x) for looks u > t (−1: none).
    """

    baseline_total: int
    horizon: int
    alpha: float
    scale: float
    size: float
    worst_rate: float
    limits: tuple[tuple[int, ...], ...]
    reachable: tuple[tuple[int, ...], ...]

    def first_crossing(self, baseline_passed: int, current: Sequence[bool]) -> int | None:
        """The first look (number of current samples) that calls a regression, or None."""
        row = self.limits[baseline_passed]
        passed = 0
        for t, sample in enumerate(current[: self.horizon], start=1):
            passed += bool(sample)
            if passed <= row[t - 1]:
                return t
        return None

    def can_cross(self, baseline_passed: int, passed: int, seen: int) -> bool:
        """Whether a later look could call a regression if every sample after `seen` failed."""
        if seen >= self.horizon:
            return False
        return self.reachable[baseline_passed][seen] >= passed


def regression_boundary(
    baseline_total: int, horizon: int, alpha: float
) -> RegressionBoundary | None:
    """The calibrated boundary (cached); None when it would cost more than `MAX_WORK`, or
    its size is not established (the independent re-check disagrees or exceeds α)."""
    if baseline_total < 1 or horizon < 1 or not 0 < alpha < 1:
        raise ValueError(
            f"a regression boundary needs a baseline, a horizon and 0 < α < 1; got "
            f"n0={baseline_total}, N={horizon}, α={alpha}"
        )
    if horizon > calibrated_horizon(baseline_total, horizon):
        return None
    return _calibrated(baseline_total, horizon, float(f"{alpha:.10g}"))


def calibrated_horizon(baseline_total: int, horizon: int, work: int = MAX_WORK) -> int:
    """The longest horizon, at most `horizon`, that a baseline of `baseline_total` samples
    is calibrated for within `work` ((n0 + 1) · N · (N + 1); 0 when not even one look)."""
    n0 = max(baseline_total, 0)
    work = min(work, MAX_WORK)
    longest = int((math.sqrt(1 + 4 * work / (n0 + 1)) - 1) / 2)
    while (n0 + 1) * (longest + 1) * (longest + 2) <= work:
        longest += 1
    while longest > 0 and (n0 + 1) * longest * (longest + 1) > work:
        longest -= 1
    return max(0, min(horizon, longest))


@lru_cache(maxsize=32)
def _calibrated(n0: int, horizon: int, alpha: float) -> RegressionBoundary | None:
    import numpy as np

    table = _p_values(n0, horizon)
    target = SAFETY * alpha
    rates = null_rates()

    def size_at(scale: float) -> tuple[_WorstRates, NDArray[np.int64]]:
        limits = _limits(table, scale, horizon)
        return _size(_crossings(limits, n0, horizon), n0, rates), limits

    low, high = 0.0, normal_quantile(1 - alpha / (2 * horizon)) + 1.0
    worst, limits = size_at(high)
    while worst.size > target:  # not expected: the bound is Bonferroni over the looks, plus one
        low, high = high, high * 2
        worst, limits = size_at(high)
    for _ in range(40):
        if high - low < 1e-4:
            break
        middle = (low + high) / 2
        found, candidate = size_at(middle)
        if found.size > target:
            low = middle
        else:
            high, worst, limits = middle, found, candidate
    # The figure is established only if the probabilities themselves, computed forward
    # without the path shares, give the same size at the worst rates found.
    checked = null_size_forward(limits, n0, horizon, np.array(worst.rates))
    expected = np.array(worst.sizes)
    if checked.max(initial=0.0) > alpha or np.any(
        np.abs(checked - expected) > CHECK_TOLERANCE * np.maximum(checked, expected) + 1e-300
    ):
        return None
    size = max(worst.size, float(checked.max(initial=0.0)))
    worst_rate = worst.rates[int(np.argmax(checked))] if worst.rates else 0.5
    rows = limits.tolist()
    reach = np.maximum.accumulate(limits[:, ::-1], axis=1)[:, ::-1]
    reachable = np.concatenate([reach, np.full((n0 + 1, 1), -1)], axis=1).tolist()
    return RegressionBoundary(
        baseline_total=n0,
        horizon=horizon,
        alpha=alpha,
        scale=high,
        size=size,
        worst_rate=worst_rate,
        limits=tuple(tuple(r) for r in rows),
        reachable=tuple(tuple(r) for r in reachable),
    )


def _p_values(n0: int, horizon: int) -> NDArray[np.float64]:
    """table[x, t − 1, s]: the one-sided mid-p-value of Fisher's test, x of n0 baseline and
    s of t current samples passed (2 where s > t: never rejected)."""
    import numpy as np

    logfact = np.array([math.lgamma(i + 1) for i in range(n0 + horizon + 2)])
    table = np.full((n0 + 1, horizon, horizon + 1), 2.0)
    xs = np.arange(n0 + 1)
    for t in range(1, horizon + 1):
        total = n0 + t
        s = np.arange(t + 1)
        k = np.arange(total + 1)[:, None]  # passed in both
        # Given k, either share is hypergeometric: follow the shorter side's (the work is
        # (n0 + t) · min(n0, t) a look, not (n0 + t) · n0 for a large baseline).
        if t <= n0:
            j = s[None, :]  # the current's share: P(S < s) + ½ P(S = s)
            pmf = _hypergeometric(logfact, k, j, t, n0)
            mid = np.cumsum(pmf, axis=1) - 0.5 * pmf
            table[:, t - 1, : t + 1] = mid[xs[:, None] + s[None, :], s[None, :]]
        else:
            x = xs[None, :]  # the baseline's: P(X ≥ x) − ½ P(X = x), the same value
            pmf = _hypergeometric(logfact, k, x, n0, t)
            mid = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1] - 0.5 * pmf
            table[:, t - 1, : t + 1] = mid[xs[:, None] + s[None, :], xs[:, None]]
    # Nondecreasing in s (each step adds ½(P(s) + P(s + 1)) ≥ 0); made so against rounding,
    # so the rejected counts of every look are a run from 0.
    np.maximum.accumulate(table, axis=2, out=table)
    return table


def _hypergeometric(logfact: Any, k: Any, share: Any, size: int, other: int) -> Any:
    """P(a group of `size` holds `share` of k passes | k among size + other), per k, share."""
    import numpy as np

    kk, jj = np.broadcast_arrays(k, share)
    valid = (jj <= kk) & (kk - jj <= other) & (jj <= size)
    j = np.where(valid, jj, 0)
    rest = np.where(valid, kk - jj, 0)
    total = size + other
    log_pmf = (
        _log_comb(logfact, np.full_like(j, size), j)
        + _log_comb(logfact, np.full_like(rest, other), rest)
        - _log_comb(logfact, np.full_like(kk, total), np.where(valid, kk, 0))
    )
    return np.where(valid, np.exp(np.where(valid, log_pmf, 0.0)), 0.0)


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
    # The p-values grow with s (`_p_values`): the rejected counts are the first ones.
    limits = np.count_nonzero(table <= levels[None, :, None], axis=2) - 1
    return np.maximum.accumulate(limits, axis=0)


@dataclass(frozen=True, slots=True)
class _Crossings:
    """Per first crossing: baseline count x, look t, passed s, log(current paths crossing)."""

    x: Any
    t: Any
    s: Any
    log_paths: Any


def _crossings(limits: NDArray[np.int64], n0: int, horizon: int) -> _Crossings:
    """The first crossings of the current samples' paths, for every baseline count at once.

    `alive[x, s]` after t samples is the share of the C(t, s) orders not yet across b(x)
    (independent of p). A path at s came from s (a fail, t − s of the orders) or s − 1 (a
    pass, s of them): the new share ((t − s) · alive[s] + s · alive[s − 1]) / t stays in
    [0, 1]."""
    import numpy as np

    alive = np.zeros((n0 + 1, horizon + 1))
    alive[:, 0] = 1.0
    s = np.arange(horizon + 1)
    log_fact = np.array([math.lgamma(i + 1) for i in range(horizon + 1)])
    found_x, found_t, found_s, found_log = [], [], [], []
    for t in range(1, horizon + 1):
        up = s[1 : t + 1] / t
        alive[:, 1 : t + 1] = alive[:, 1 : t + 1] * (1.0 - up) + alive[:, 0:t] * up
        column = limits[:, t - 1]
        top = int(column.max())
        if top < 0:
            continue
        near = alive[:, : top + 1]
        hit = s[None, : top + 1] <= column[:, None]
        xs, ss = np.nonzero(np.where(hit, near, 0.0))
        if xs.size:
            found_x.append(xs)
            found_t.append(np.full(xs.size, t))
            found_s.append(ss)
            log_comb = log_fact[t] - log_fact[ss] - log_fact[t - ss]
            found_log.append(np.log(near[xs, ss]) + log_comb)
            near[hit] = 0.0
    if not found_x:
        empty = np.zeros(0, dtype=np.int64)
        return _Crossings(empty, empty, empty, np.zeros(0))
    return _Crossings(
        np.concatenate(found_x),
        np.concatenate(found_t),
        np.concatenate(found_s),
        np.concatenate(found_log),
    )


def null_rates(count: int = GRID) -> NDArray[np.float64]:
    """The grid of null rates the size is maximised over: sin²(π/2 · (i + ½)/count)."""
    import numpy as np

    return np.asarray(np.sin(np.pi / 2 * (np.arange(count) + 0.5) / count) ** 2)


def null_size(
    limits: NDArray[np.int64], n0: int, horizon: int, rates: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The chance of ever calling a regression when both pass with probability p, per p."""
    return _size_curve(_crossings(limits, n0, horizon), n0, rates)


def _size_curve(found: _Crossings, n0: int, rates: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ over first crossings (x, t, s) of Bin(x; n0, p) · share · Bin(s; t, p) at each p,
    in logs; for a large baseline only x within `_SPREAD` standard deviations of n0 · p."""
    import numpy as np

    if found.x.size == 0:
        return np.zeros(len(rates))
    p = np.clip(np.asarray(rates, dtype=float), 1e-300, 1 - 1e-16)
    log_p, log_q = np.log(p), np.log1p(-p)
    logfact = np.array([math.lgamma(i + 1) for i in range(n0 + 1)])
    order = np.argsort(found.x, kind="stable")
    x, t, s = found.x[order], found.t[order], found.s[order]
    coefficient = (logfact[n0] - logfact[x] - logfact[n0 - x]) + found.log_paths[order]
    passes = (x + s).astype(float)
    fails = (n0 - x + t - s).astype(float)
    if n0 <= _WINDOWED:
        log_terms = (
            coefficient[:, None]
            + passes[:, None] * log_p[None, :]
            + fails[:, None] * log_q[None, :]
        )
        return np.asarray(np.exp(log_terms).sum(axis=0))
    spread = _SPREAD * np.sqrt(n0 * p * (1 - p)) + 1
    starts = np.searchsorted(x, np.floor(n0 * p - spread), side="left")
    ends = np.searchsorted(x, np.ceil(n0 * p + spread), side="right")
    curve = np.zeros(len(p))
    for i in range(len(p)):
        part = slice(starts[i], ends[i])
        log_terms = coefficient[part] + passes[part] * log_p[i] + fails[part] * log_q[i]
        curve[i] = np.exp(log_terms).sum()
    return curve


_WINDOWED = 400
"""Baselines larger than this sum only the baseline counts near n0 · p (`_size_curve`)."""
_SPREAD = 14.0
"""Standard deviations of the baseline's count kept at each p: beyond, Bin(x; n0, p) is
below e^(−14²/2) ≈ 1e−43 of its peak."""


@dataclass(frozen=True, slots=True)
class _WorstRates:
    """The largest size found (`size`), and the rates and sizes of the highest peaks."""

    size: float
    rates: tuple[float, ...]
    sizes: tuple[float, ...]


def _size(found: _Crossings, n0: int, rates: NDArray[np.float64]) -> _WorstRates:
    """The largest size over the null rates: on the grid, then finer around its three
    highest local peaks (the size is a smooth polynomial in p)."""
    import numpy as np

    curve = _size_curve(found, n0, rates)
    if not curve.size or curve.max() <= 0.0:
        return _WorstRates(0.0, (), ())
    peaks = [
        i
        for i in range(len(curve))
        if (i == 0 or curve[i] >= curve[i - 1])
        and (i + 1 == len(curve) or curve[i] >= curve[i + 1])
    ]
    peaks = sorted(peaks, key=lambda i: -curve[i])[:3]
    best_rates, best_sizes = [], []
    for i in peaks:
        low = rates[i - 1] if i > 0 else rates[i] / 2
        high = rates[i + 1] if i + 1 < len(rates) else (rates[i] + 1) / 2
        fine = np.linspace(low, high, 41)
        sizes = _size_curve(found, n0, fine)
        j = int(np.argmax(sizes))
        best_rates.append(float(fine[j]) if sizes[j] >= curve[i] else float(rates[i]))
        best_sizes.append(max(float(sizes[j]), float(curve[i])))
    return _WorstRates(max(best_sizes), tuple(best_rates), tuple(best_sizes))


def null_size_forward(
    limits: NDArray[np.int64], n0: int, horizon: int, rates: NDArray[np.float64]
) -> NDArray[np.float64]:
    """`null_size` computed independently (the calibration's check): a forward recursion on
    the passed count's probabilities at each rate ((n0 + 1) · N² per rate)."""
    import numpy as np

    rates = np.asarray(rates, dtype=float)
    rows = [x for x in range(n0 + 1) if limits[x].max() >= 0]
    if not rows or not rates.size:
        return np.zeros(len(rates))
    p = rates[None, :, None]
    q = 1.0 - p
    bounds = limits[rows]
    alive = np.zeros((len(rows), len(rates), horizon + 1))
    alive[:, :, 0] = 1.0
    crossed = np.zeros((len(rows), len(rates)))
    s = np.arange(horizon + 1)
    for t in range(1, horizon + 1):
        grown = alive[:, :, : t + 1] * q
        grown[:, :, 1:] += alive[:, :, :t] * p
        alive[:, :, : t + 1] = grown
        column = bounds[:, t - 1]
        top = int(column.max())
        if top >= 0:
            hit = (s[None, : top + 1] <= column[:, None])[:, None, :]
            near = alive[:, :, : top + 1]
            crossed += np.where(hit, near, 0.0).sum(axis=2)
            near[np.broadcast_to(hit, near.shape)] = 0.0
    logfact = np.array([math.lgamma(i + 1) for i in range(n0 + 1)])
    x = np.array(rows)[:, None]
    log_weights = (
        (logfact[n0] - logfact[x] - logfact[n0 - x])
        + x * np.log(rates)[None, :]
        + (n0 - x) * np.log1p(-rates)[None, :]
    )
    return np.asarray((np.exp(log_weights) * crossed).sum(axis=0))

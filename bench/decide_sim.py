"""Error rates and power of run-until-decided under continuous monitoring (seeded).

    python bench/decide_sim.py [--trials 1000] [--what pairs|decide|exact|horizons|all]

`compare_agents()` (pairs): A/A, both agents pass with the same probability p, looked at
after every batch; any "regression" call is a false one. A/B: 0.9 → 0.6. In the family
table: one case and 20 cases (A at 0.9, B at 0.6 on one, 0.9/0.9 on 19), A/A looked at
after every pair, beside fixed-n Fisher on 100 samples a side.

`decide()`: a 30-sample baseline at 0.9; the current agent at 0.6 (a regression) or 0.9
(A/A), up to 100 samples. One case at α = 0.05, and 20 cases (one regressed, 19
unchanged; each case's test at α/20). Detection is judged in decide()'s rounds (1, then
5 at a time); A/A false regressions are looked at after *every* sample (the regression
test's first crossing over all 100). Beside each, a fixed-n one-sided Fisher test at the
same level on the same samples: the baseline against all 100 current samples.

`exact`: the same figures for decide()'s regression test computed exactly (dynamic
programming over the paths), beside fixed-n one-sided Fisher and the Neyman–Pearson bound
(no test at that level, sequential or not, can have more power against 0.9 → 0.6 while
keeping its level at every null point p = p).

`horizons`: the exact size of the regression test at long horizons (up to 2,448 looks),
recomputed here by a forward recursion on the probabilities over a grid of shared rates
dense near 0 and 1 plus the calibration's reported worst rate, beside the calibrated size
and the time the calibration took; and what the test is where the horizon is longer than
it calibrates (the exact part's looks and α, the e-process's α).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time

import numpy as np

from tui_eval.stats.case_decisions import (
    EProcess,
    judge_against_baseline,
    next_batch,
    simulate_pairs,
)
from tui_eval.stats.group_sequential import (
    calibrated_horizon,
    null_rates,
    null_size,
    null_size_forward,
    regression_boundary,
)
from tui_eval.stats.proportions import fisher_exact, samples_needed
from tui_eval.stats.two_sample import regression_plan

BASELINE, BUDGET = 30, 100


def decide_case(
    baseline: list[bool], current: list[bool], alpha: float, batch: int | None = None
) -> tuple[str, int]:
    """decide()'s verdict on pre-drawn samples, looked at after 1, then after each round
    as decide() grows them (`next_batch`), or every `batch` when given."""
    n = 1
    while True:
        verdict = judge_against_baseline(
            sum(baseline),
            len(baseline),
            current[:n],
            alpha=alpha,
            exhausted=n >= len(current),
            baseline_samples=baseline,
            horizon=len(current),
        )
        if verdict.label != "undecided":
            return verdict.label, n
        n = min(len(current), n + (batch if batch is not None else next_batch(n)))


def ever_called_a_regression(baseline: list[bool], current: list[bool], alpha: float) -> bool:
    """Whether the regression test crosses at any sample of `current` (looking after every
    sample; an upper bound on decide()'s false regressions, which also stops a case once it
    is decided otherwise)."""
    boundary = regression_boundary(len(baseline), len(current), alpha)
    assert boundary is not None
    return boundary.first_crossing(sum(baseline), current) is not None


def one_sided_fisher(x: int, n0: int, s: int, t: int) -> float:
    """P(S ≤ s | margins): the one-sided Fisher p-value that the current passes less often."""
    total, passed = n0 + t, x + s
    denom = math.comb(total, t)
    low = max(0, passed - n0)
    return (
        sum(math.comb(passed, k) * math.comb(total - passed, t - k) for k in range(low, s + 1))
        / denom
    )


def fisher_rejects(baseline: list[bool], current: list[bool], alpha: float) -> bool:
    """Two-sided fixed-n Fisher (compare_agents()'s column: it tests both ways)."""
    b, c = sum(baseline), sum(current)
    return fisher_exact(c, len(current) - c, b, len(baseline) - b) < alpha


def fisher_finds_a_drop(baseline: list[bool], current: list[bool], alpha: float) -> bool:
    """One-sided fixed-n Fisher (decide()'s column: it tests for a drop only)."""
    return one_sided_fisher(sum(baseline), len(baseline), sum(current), len(current)) <= alpha


def draw(rng: random.Random, p_b: float, p_c: float) -> tuple[list[bool], list[bool]]:
    return [rng.random() < p_b for _ in range(BASELINE)], [
        rng.random() < p_c for _ in range(BUDGET)
    ]


def pairs(trials: int) -> None:
    rng = random.Random(2026)
    print("| compare_agents(), one case | trials | called a regression | median samples |")
    print("|---|---:|---:|---:|")
    for p in (0.2, 0.5, 0.8, 0.95):
        outcomes = [simulate_pairs(p, p, rng) for _ in range(trials)]
        false = sum(label == "regression" for label, _ in outcomes) / trials
        used = statistics.median(n for _, n in outcomes)
        print(f"| A/A p={p} | {trials} | {false:.1%} (α = 5%) | {used:g} |")
    outcomes = [simulate_pairs(0.9, 0.6, rng) for _ in range(trials)]
    found = [n for label, n in outcomes if label == "regression"]
    print(
        f"| A/B 0.9 → 0.6 | {trials} | {len(found) / trials:.1%} detected | "
        f"{statistics.median(found):g} (fixed n at 80% power: {samples_needed(0.9, 0.6)}) |"
    )


def decide(trials: int, cases: int) -> None:
    rng = random.Random(2025 + cases)
    alpha = 0.05 / cases
    detected = fisher_detected = false_family = fisher_false_family = too_small = 0
    used: list[int] = []
    for _ in range(trials):
        baseline, current = draw(rng, 0.9, 0.6)
        label, n = decide_case(baseline, current, alpha)
        detected += label == "regression"
        too_small += label == "undecided: baseline too small"
        used.append(n)
        fisher_detected += fisher_finds_a_drop(baseline, current, alpha)
        false = fisher_false = False
        for _ in range(cases):  # an A/A run of as many cases
            baseline, current = draw(rng, 0.9, 0.9)
            false |= ever_called_a_regression(baseline, current, alpha)
            fisher_false |= fisher_finds_a_drop(baseline, current, alpha)
        false_family += false
        fisher_false_family += fisher_false
    print(
        f"| decide(), {cases} case(s) | {trials} | {detected / trials:.1%} "
        f"(median {statistics.median(used):g} samples; baseline too small {too_small / trials:.1%}) "
        f"| {fisher_detected / trials:.1%} | {false_family / trials:.1%} "
        f"| {fisher_false_family / trials:.1%} |"
    )


def too_small(trials: int) -> None:
    """0.9 → 0.7 with a 100-sample baseline (0.7 is below its lower bound, ~0.81): how
    often decide() (one case, α = 0.05) says "baseline too small"."""
    rng = random.Random(2027)
    labels = []
    for _ in range(trials):
        baseline = [rng.random() < 0.9 for _ in range(100)]
        current = [rng.random() < 0.7 for _ in range(BUDGET)]
        labels.append(decide_case(baseline, current, 0.05)[0])
    counts = {label: labels.count(label) / trials for label in sorted(set(labels))}
    print(
        f"0.9 → 0.7, 100-sample baseline, {trials} trials: "
        + ", ".join(f"{label} {share:.1%}" for label, share in counts.items())
    )


def aa_near_the_worst_rate(trials: int) -> None:
    """decide()'s regression test on A/A runs at p = 0.3 (near the rate where its size
    peaks), every case looked at after every sample, beside the exact family-wise figure."""
    rng = random.Random(2028)
    for cases in (1, 20):
        alpha = 0.05 / cases
        boundary = regression_boundary(BASELINE, BUDGET, alpha)
        assert boundary is not None
        false = 0
        for _ in range(trials):
            false += any(
                boundary.first_crossing(
                    sum(rng.random() < 0.3 for _ in range(BASELINE)),
                    [rng.random() < 0.3 for _ in range(BUDGET)],
                )
                is not None
                for _ in range(cases)
            )
        size = float(null_size(np.array(boundary.limits), BASELINE, BUDGET, np.array([0.3]))[0])
        print(
            f"A/A at p = 0.3, {cases} case(s), every sample, {trials} trials: {false / trials:.1%} "
            f"called a regression (exact: {1 - (1 - size) ** cases:.2%})"
        )


def log_binomial(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1)
    logfact = np.array([math.lgamma(i + 1) for i in range(n + 1)])
    with np.errstate(divide="ignore"):
        return logfact[n] - logfact[k] - logfact[n - k] + k * np.log(p) + (n - k) * np.log1p(-p)


def exact_power(limits: np.ndarray, p_b: float, p_c: float) -> float:
    """P(decide()'s regression test crosses within the horizon) at rates (p_b, p_c)."""
    n0, horizon = limits.shape[0] - 1, limits.shape[1]
    total = 0.0
    for x, weight in enumerate(np.exp(log_binomial(n0, p_b))):
        alive = np.zeros(horizon + 2)
        alive[0] = 1.0
        crossed = 0.0
        for t in range(1, horizon + 1):
            alive[1:] = alive[1:] * (1 - p_c) + alive[:-1] * p_c
            alive[0] *= 1 - p_c
            limit = limits[x, t - 1]
            if limit >= 0:
                crossed += alive[: limit + 1].sum()
                alive[: limit + 1] = 0.0
        total += weight * crossed
    return total


def fisher_table(alpha: float) -> np.ndarray:
    """Where fixed-n one-sided Fisher on (x of 30, y of 100) finds a drop."""
    return np.array(
        [
            [one_sided_fisher(x, BASELINE, y, BUDGET) <= alpha for y in range(BUDGET + 1)]
            for x in range(BASELINE + 1)
        ]
    )


def neyman_pearson_bound(alpha: float) -> float:
    """The most power any level-α test on 30 + 100 samples can have against (0.9, 0.6): for
    each null point (p, p) the most powerful (randomised) test of that point alone; the
    least of those powers bounds every test valid at all of them."""
    alternative = np.exp(
        log_binomial(BASELINE, 0.9)[:, None] + log_binomial(BUDGET, 0.6)[None, :]
    ).ravel()
    worst = 1.0
    for p in np.linspace(0.3, 0.99, 139):
        null = np.exp(log_binomial(BASELINE, p)[:, None] + log_binomial(BUDGET, p)[None, :]).ravel()
        order = np.argsort(-alternative / np.maximum(null, 1e-300))
        c0, c1 = np.cumsum(null[order]), np.cumsum(alternative[order])
        k = int(np.searchsorted(c0, alpha))
        before0, before1 = (c0[k - 1], c1[k - 1]) if k else (0.0, 0.0)
        power = before1 + (alpha - before0) / null[order][k] * alternative[order][k]
        worst = min(worst, power)
    return worst


def exact() -> None:
    print(
        "| 0.9 → 0.6, n0 = 30, ≤ 100 samples (exact) | α per case | decide()'s regression test "
        "| fixed-n one-sided Fisher | Neyman–Pearson bound | A/A family-wise at p = 0.9 "
        "| A/A family-wise, worst p |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    rates = np.linspace(0.001, 0.999, 999)
    alternative = np.exp(log_binomial(BASELINE, 0.9)[:, None] + log_binomial(BUDGET, 0.6)[None, :])
    for cases in (1, 20):
        alpha = 0.05 / cases
        boundary = regression_boundary(BASELINE, BUDGET, alpha)
        assert boundary is not None
        limits = np.array(boundary.limits)
        size = float(null_size(limits, BASELINE, BUDGET, rates).max())
        family = 1 - (1 - size) ** cases
        at_09 = 1 - (1 - float(null_size(limits, BASELINE, BUDGET, np.array([0.9]))[0])) ** cases
        fisher = float((alternative * fisher_table(alpha)).sum())
        print(
            f"| {cases} case(s) | {alpha:g} | {exact_power(limits, 0.9, 0.6):.1%} | {fisher:.1%} "
            f"| {neyman_pearson_bound(alpha):.1%} | {at_09:.2%} | {family:.2%} |"
        )


def horizons() -> None:
    print(
        "| n0 | looks N | α | calibrated size | recomputed worst size | ÷ α | worst rate "
        "| calibration |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n0, horizon, alpha in [
        (1, 400, 0.05 / 20),
        (1, 1000, 0.05 / 20),
        (1, 1600, 0.05 / 20),
        (1, 2000, 0.05),
        (1, 2448, 0.05 / 20),
        (2, 1600, 0.05 / 20),
        (30, 600, 0.05 / 20),
        (5000, 40, 0.05),
    ]:
        start = time.perf_counter()
        boundary = regression_boundary(n0, horizon, alpha)
        took = time.perf_counter() - start
        if boundary is None:
            print(f"| {n0} | {horizon} | {alpha:g} | not established: the e-process | | | | |")
            continue
        limits = np.array(boundary.limits)
        rates = np.unique(
            np.concatenate([null_rates(64), boundary.worst_rate * np.linspace(0.5, 1.5, 21)])
        )
        rates = rates[(rates > 0) & (rates < 1)]
        sizes = null_size_forward(limits, n0, horizon, rates)
        print(
            f"| {n0} | {horizon} | {alpha:g} | {boundary.size:.5f} | {sizes.max():.5f} "
            f"| {sizes.max() / alpha:.3f} | {rates[int(np.argmax(sizes))]:.4f} | {took:.1f} s |"
        )
    print()
    print("| n0 | max_samples | exact part: looks, α | e-process α |")
    print("|---:|---:|---:|---:|")
    for n0, horizon in [(1, 30_000), (30, 1_000), (30, 30_000), (100, 2_000), (400, 400)]:
        alpha = 0.05
        plan = regression_plan(n0, horizon, alpha)
        exact = (
            f"{plan.boundary.horizon}, {plan.boundary.alpha:g}"
            if plan.boundary is not None
            else "none"
        )
        whole = calibrated_horizon(n0, horizon) >= horizon
        print(f"| {n0} | {horizon} | {exact}{' (all)' if whole else ''} | {plan.e_alpha:g} |")


def pairs_ever_called_a_regression(a: list[bool], b: list[bool], alpha: float) -> bool:
    """compare_agents()'s regression e-process looked at after every pair of samples."""
    bet = EProcess(low=-1.0, high=1.0)
    for x, y in zip(a, b, strict=True):
        bet.update(float(x) - float(y))
        if bet.wealth >= 1 / alpha:
            return True
    return False


def pairs_family(trials: int, cases: int) -> None:
    """compare_agents(): A at 0.9, B at 0.6 on one case, 0.9/0.9 on the others."""
    rng = random.Random(2024 + cases)
    alpha = 0.05 / cases
    detected = fisher_detected = false_family = fisher_false_family = 0
    used: list[int] = []
    for _ in range(trials):
        label, n = simulate_pairs(0.9, 0.6, rng, alpha=alpha)
        detected += label == "regression"
        used.append(n)
        a = [rng.random() < 0.9 for _ in range(BUDGET)]
        b = [rng.random() < 0.6 for _ in range(BUDGET)]
        fisher_detected += fisher_rejects(a, b, alpha)
        false = fisher_false = False
        for _ in range(max(1, cases - 1)):
            a = [rng.random() < 0.9 for _ in range(BUDGET)]
            b = [rng.random() < 0.9 for _ in range(BUDGET)]
            false |= pairs_ever_called_a_regression(a, b, alpha)
            fisher_false |= fisher_rejects(a, b, alpha)
        false_family += false
        fisher_false_family += fisher_false
    print(
        f"| compare_agents(), {cases} case(s) | {trials} | {detected / trials:.1%} "
        f"(median {statistics.median(used):g} samples) | {fisher_detected / trials:.1%} "
        f"| {false_family / trials:.1%} | {fisher_false_family / trials:.1%} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument(
        "--what", choices=["pairs", "decide", "exact", "horizons", "all"], default="all"
    )
    args = parser.parse_args()
    if args.what in ("pairs", "all"):
        pairs(args.trials)
        print()
    if args.what in ("horizons", "all"):
        horizons()
        print()
    if args.what in ("exact", "all"):
        exact()
        print()
        aa_near_the_worst_rate(args.trials * 20)
        print()
    if args.what in ("decide", "all"):
        print(
            "| 0.9 → 0.6, ≤ 100 samples (decide(): 30-sample baseline) | trials | detected "
            "| fixed-n Fisher detects | A/A false regressions (family, every sample) "
            "| fixed-n Fisher A/A |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        decide(args.trials, 1)
        decide(args.trials, 20)
        pairs_family(args.trials, 1)
        pairs_family(max(1, args.trials // 5), 20)
        print()
        too_small(max(1, args.trials // 5))


if __name__ == "__main__":
    main()

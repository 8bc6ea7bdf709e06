"""Error rates and power of run-until-decided under continuous monitoring (seeded).

    python bench/decide_sim.py [--trials 1000] [--what pairs|decide|all]

`compare_agents()` (pairs): A/A, both agents pass with the same probability p, looked at
after every batch; any "regression" call is a false one. A/B: 0.9 → 0.6. In the family
table: one case and 20 cases (A at 0.9, B at 0.6 on one, 0.9/0.9 on 19), A/A looked at
after every pair, beside fixed-n Fisher on 100 samples a side.

`decide()`: a 30-sample baseline at 0.9; the current agent at 0.6 (a regression) or 0.9
(A/A), up to 100 samples. One case at α = 0.05, and 20 cases (one regressed, 19
unchanged; each case's test at α/20). Detection is judged in decide()'s rounds (1, then
5 at a time); A/A false regressions are looked at after *every* sample (the test's
largest e-value over the run). Beside each, a
fixed-n Fisher test (two-sided, same level) on the same samples: the baseline against all
100 current samples.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from tui_eval.sequential import EProcess, judge_against_baseline, simulate_pairs
from tui_eval.stats import evidence_path, fisher_exact, samples_needed

BASELINE, BUDGET = 30, 100


def decide_case(
    baseline: list[bool], current: list[bool], alpha: float, batch: int
) -> tuple[str, int]:
    """decide()'s verdict on pre-drawn samples, looked at after 1, then every `batch`."""
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
        n = min(len(current), n + batch)


def ever_called_a_regression(baseline: list[bool], current: list[bool], alpha: float) -> bool:
    """Whether the regression test crosses 1/α at any sample of `current`: the e-value
    after each block is the same whenever it is looked at, so the largest over the whole
    run is what looking after every sample can see (an upper bound on decide()'s false
    regressions, which also stops a case once it is decided otherwise)."""
    path = evidence_path(baseline, current, len(current), regression=True)
    return max(path, default=0.0) >= math.log(1 / alpha)


def fisher_rejects(baseline: list[bool], current: list[bool], alpha: float) -> bool:
    b, c = sum(baseline), sum(current)
    return fisher_exact(c, len(current) - c, b, len(baseline) - b) < alpha


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
        label, n = decide_case(baseline, current, alpha, batch=5)
        detected += label == "regression"
        too_small += label == "undecided: baseline too small"
        used.append(n)
        fisher_detected += fisher_rejects(baseline, current, alpha)
        false = fisher_false = False
        for _ in range(max(1, cases - 1)):  # the unchanged cases (one A/A case for cases=1)
            baseline, current = draw(rng, 0.9, 0.9)
            false |= ever_called_a_regression(baseline, current, alpha)
            fisher_false |= fisher_rejects(baseline, current, alpha)
        false_family += false
        fisher_false_family += fisher_false
    print(
        f"| decide(), {cases} case(s) | {trials} | {detected / trials:.1%} "
        f"(median {statistics.median(used):g} samples; baseline too small {too_small / trials:.1%}) "
        f"| {fisher_detected / trials:.1%} | {false_family / trials:.1%} "
        f"| {fisher_false_family / trials:.1%} |"
    )


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
    parser.add_argument("--what", choices=["pairs", "decide", "all"], default="all")
    args = parser.parse_args()
    if args.what in ("pairs", "all"):
        pairs(args.trials)
        print()
    if args.what in ("decide", "all"):
        print(
            "| 0.9 → 0.6, ≤ 100 samples (decide(): 30-sample baseline) | trials | detected "
            "| fixed-n Fisher detects | A/A false regressions (family, every sample) "
            "| fixed-n Fisher A/A |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        decide(args.trials, 1)
        decide(max(1, args.trials // 5), 20)
        pairs_family(args.trials, 1)
        pairs_family(max(1, args.trials // 5), 20)


if __name__ == "__main__":
    main()

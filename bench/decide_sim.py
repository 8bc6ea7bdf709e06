"""Error rates of run-until-decided under continuous monitoring (a seeded simulation).

    python bench/decide_sim.py [--trials 1000]

A/A: both agents pass with the same probability p; the comparison is looked at after every
batch of samples, as `compare_agents()` does, and any "regression" call is a false one.
A/B: 0.9 → 0.6; the share of trials that call the regression within 100 samples, and the
median samples used, beside what a fixed-n design of 80% power needs for the same rates.
"""

from __future__ import annotations

import argparse
import random
import statistics

from tui_eval.sequential import simulate_pairs
from tui_eval.stats import samples_needed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(2026)
    print("| run | trials | called a regression | median samples |")
    print("|---|---:|---:|---:|")
    for p in (0.2, 0.5, 0.8, 0.95):
        outcomes = [simulate_pairs(p, p, rng) for _ in range(args.trials)]
        false = sum(label == "regression" for label, _ in outcomes) / args.trials
        used = statistics.median(n for _, n in outcomes)
        print(f"| A/A p={p} | {args.trials} | {false:.1%} (α = 5%) | {used:g} |")
    outcomes = [simulate_pairs(0.9, 0.6, rng) for _ in range(args.trials)]
    found = [n for label, n in outcomes if label == "regression"]
    print(
        f"| A/B 0.9 → 0.6 | {args.trials} | {len(found) / args.trials:.1%} detected | "
        f"{statistics.median(found):g} (fixed n at 80% power: {samples_needed(0.9, 0.6)}) |"
    )


if __name__ == "__main__":
    main()

"""How long grouping failed samples into failure modes takes: 100,000 failed samples.

python bench/failure_modes_bench.py [--rounds 5]

Three shapes, 1,000 cases × 100 failed samples each: every reason differing only in its
numbers (one mode), reasons of 50 distinct shapes, and half the cases with passing samples
to depart from (a tool trajectory compared per failed sample). Prints the best and the
median of `--rounds` runs (process CPU seconds), each on a fresh report.
"""

from __future__ import annotations

import argparse
import statistics
import time

from tui_eval import CheckResult, Report, RunResult, ToolCall
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.failure_modes import failure_modes

WORDS = [f"{a}{b}" for a in ("alpha", "beta", "gamma", "delta", "omega") for b in "klmnpqrstv"]
"""50 words that differ in letters, not numbers: 50 shapes of reason."""


def failed(case: str, index: int, reason: str, calls: list[ToolCall]) -> SampleResult:
    check = CheckResult("llm_judge", False, 0.2, reason)
    return SampleResult(case, index, "failed", checks=[check], run=RunResult("x", tool_calls=calls))


def report(shape: str) -> Report:
    cases = []
    for c in range(1000):
        samples = []
        for i in range(100):
            if shape == "one":
                reason = f"scored {i % 5} because {c * 31 + i} is off by {i}%"
            else:
                word = WORDS[(c + i) % len(WORDS)]
                reason = f"{word}: scored {i % 5} because {c * 31 + i} is off"
            samples.append(failed(f"case {c}", i, reason, [ToolCall("search", {"q": i})]))
        if shape == "departures" and c % 2:
            samples.append(
                SampleResult(
                    f"case {c}",
                    100,
                    "passed",
                    run=RunResult("x", tool_calls=[ToolCall("book", {})]),
                )
            )
        cases.append(CaseResult(f"case {c}", samples))
    return Report(shape, cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| shape | modes | best (s) | median (s) |\n|---|---:|---:|---:|")
    for shape in ("one", "fifty", "departures"):
        times, modes = [], 0
        for _ in range(args.rounds):
            built = report(shape)
            start = time.process_time()
            modes = len(failure_modes(built))
            times.append(time.process_time() - start)
        print(f"| {shape} | {modes} | {min(times):.3f} | {statistics.median(times):.3f} |")


if __name__ == "__main__":
    main()

"""`Report.compare` of two 2,000-case × 5-sample reports whose cases pass at rates spread
over 0–100% (seeded), in a fresh process: nothing cached from an earlier compare.

Prints `COMPARE PRINT`: seconds for `current.compare(baseline)`, then for `str(diff)`,
which reads `samples_needed` of every regressed or improved "too few samples" case.
"""

from __future__ import annotations

import random
import time

from tui_eval import Report
from tui_eval.core.results import CaseResult, SampleResult

CASES, SAMPLES = 2_000, 5


def report(seed: int, shift: float) -> Report:
    rng = random.Random(seed)
    cases = []
    for i in range(CASES):
        rate = min(1.0, (i % 10) / 10 + shift)
        samples = [
            SampleResult(f"c{i}", j, "passed" if rng.random() < rate else "failed")
            for j in range(SAMPLES)
        ]
        cases.append(CaseResult(f"c{i}", samples, planned=SAMPLES, pass_threshold=0.6))
    return Report("compare", cases)


baseline, current = report(1, 0.0), report(2, 0.05)
start = time.perf_counter()
diff = current.compare(baseline)
compared = time.perf_counter() - start
start = time.perf_counter()
str(diff)
printed = time.perf_counter() - start
print(f"{compared:.4f} {printed:.4f}")

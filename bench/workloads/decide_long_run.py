"""One `decide()` case with a long horizon: its wall time and the event loop's longest stall.

    python bench/workloads/decide_long_run.py MAX_SAMPLES fail|RATE [BASELINE]

The baseline passed all of its BASELINE samples (30 by default); the current agent is a
plain (sync) function that fails every sample (`fail`) or passes with probability RATE
(seeded). Prints the seconds, the label, the current samples it took, the longest time the
event loop went without running a 10 ms ticker, and the hint.
"""

from __future__ import annotations

import random
import sys
import time

import anyio

from tui_eval import Case, Report, decide, equals
from tui_eval.core.results import CaseResult, SampleResult

horizon, mode = int(sys.argv[1]), sys.argv[2]
baseline_total = int(sys.argv[3]) if len(sys.argv) > 3 else 30
samples = [SampleResult("q", i, "passed") for i in range(baseline_total)]
baseline = Report("eval", [CaseResult("q", samples, planned=baseline_total)])
rng = random.Random(1)


def agent(question: str) -> str:
    if mode == "fail":
        return "no"
    return "ok" if rng.random() < float(mode) else "no"


async def main() -> None:
    worst = 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not done:
            await anyio.sleep(0.01)
            now = time.perf_counter()
            worst = max(worst, now - last - 0.01)
            last = now

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        start = time.perf_counter()
        diff = await decide(
            agent, [Case("q", checks=[equals("ok")])], baseline, max_samples=horizon
        )
        took = time.perf_counter() - start
        done = True
    change = diff.changes[0]
    print(
        f"{took:.2f}s label={change.label} samples={change.current_total} "
        f"stall={worst:.2f}s hint={change.hint}"
    )


anyio.run(main)

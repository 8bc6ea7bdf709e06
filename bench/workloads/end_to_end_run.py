"""Workload A as most scripts call it: `asyncio.run(evaluate(...))`, timed from outside.

Prints `inner END_TO_END`: the time `evaluate()` itself took, and the wall time of the
whole `asyncio.run` call returning the report (loop start-up and teardown included).
"""

from __future__ import annotations

import asyncio
import time

from common import WORKLOADS

from tui_eval import Case, equals, evaluate

cases_n, samples, _, concurrency = WORKLOADS["A"]


async def agent(question: str) -> str:
    return question.replace("question", "answer")


cases = [
    Case(f"question {i}", checks=[equals(f"answer {i}")], samples=samples) for i in range(cases_n)
]
inner: list[float] = []


async def main() -> object:
    start = time.perf_counter()
    report = await evaluate(agent, cases, concurrency=concurrency)
    inner.append(time.perf_counter() - start)
    return report


start = time.perf_counter()
report = asyncio.run(main())
end_to_end = time.perf_counter() - start
print(f"{inner[0]:.4f} {end_to_end:.4f}")

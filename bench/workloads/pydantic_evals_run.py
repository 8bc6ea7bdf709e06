"""Workload A or B on pydantic-evals (run in its own virtualenv)."""

from __future__ import annotations

import asyncio

from common import Timer, emit, parse
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EqualsExpected


async def main() -> None:
    name, n, samples, latency, concurrency = parse()

    async def task(question: str) -> str:
        if latency:
            await asyncio.sleep(latency)
        return question.replace("question", "answer")

    dataset = Dataset(
        name=f"workload-{name}",
        cases=[
            Case(name=f"case {i}", inputs=f"question {i}", expected_output=f"answer {i}")
            for i in range(n)
        ],
        evaluators=[EqualsExpected()],
    )
    with Timer() as timer:
        report = await dataset.evaluate(
            task, max_concurrency=concurrency, progress=False, repeat=samples
        )
    passed = sum(1 for case in report.cases if all(a.value for a in case.assertions.values()))
    emit("pydantic-evals", name, timer.wall, len(report.cases), passed)


asyncio.run(main())

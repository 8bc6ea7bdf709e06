"""Workload A or B on tui-eval: `python tui_eval_run.py A`."""

from __future__ import annotations

import asyncio

import anyio
from common import Timer, emit, parse

from tui_eval import Case, equals, evaluate


async def main() -> None:
    name, n, samples, latency, concurrency = parse()

    async def agent(question: str) -> str:
        if latency:
            await asyncio.sleep(latency)  # the same agent code as the peers'

        return question.replace("question", "answer")

    cases = [
        Case(f"question {i}", checks=[equals(f"answer {i}")], samples=samples) for i in range(n)
    ]
    with Timer() as timer:
        report = await evaluate(agent, cases, concurrency=concurrency)
    emit("tui-eval", name, timer.wall, len(report.samples), sum(s.passed for s in report.samples))


anyio.run(main)

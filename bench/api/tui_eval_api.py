"""The rate-limit scenario on tui-eval, on its defaults: an Agent on the loopback API."""

from __future__ import annotations

import asyncio

from common import Timer, emit, parse

from tui_eval import Agent, Case, equals, evaluate
from tui_eval.agents.providers.openai import OpenAIProvider


async def main() -> None:
    args = parse()
    agent = Agent(OpenAIProvider("bench", base_url=args.url))
    cases = [
        Case(f"question {i}", checks=[equals(f"answer {i}")], name=f"case {i}")
        for i in range(args.cases)
    ]
    with Timer() as timer:
        report = await evaluate(agent, cases, concurrency=args.concurrency)
    passed = sum(1 for case in report.cases for s in case.samples if s.passed)
    errors = [s.error for case in report.cases for s in case.samples if s.error]
    if errors:
        import sys

        print(f"{len(errors)} errors, first: {errors[0]}", file=sys.stderr)
    emit("tui-eval", timer.wall, len(report.samples), passed, timer.cpu)


asyncio.run(main())

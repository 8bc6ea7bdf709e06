"""The rate-limit scenario on pydantic-evals, on its defaults: a pydantic-ai agent as the task."""

from __future__ import annotations

import asyncio

from common import Timer, emit, parse
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EqualsExpected


async def main() -> None:
    args = parse()
    model = OpenAIChatModel("bench", provider=OpenAIProvider(base_url=args.url, api_key="x"))
    agent = Agent(model)

    async def task(question: str) -> str:
        return (await agent.run(question)).output

    dataset = Dataset(
        name="rate-limit",
        cases=[
            Case(name=f"case {i}", inputs=f"question {i}", expected_output=f"answer {i}")
            for i in range(args.cases)
        ],
        evaluators=[EqualsExpected()],
    )
    with Timer() as timer:
        report = await dataset.evaluate(task, max_concurrency=args.concurrency, progress=False)
    passed = sum(1 for case in report.cases if all(a.value for a in case.assertions.values()))
    emit("pydantic-evals", timer.wall, args.cases, passed, timer.cpu)


asyncio.run(main())

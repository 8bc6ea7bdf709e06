"""The Ray benchmark's suites: one sample; 20,000 instant samples; 10,000 of 0.5 s each.

They are configured here rather than through the environment, so every run of the
benchmark has the same allowed environment and takes the workers the last one left.
"""

import anyio

from tui_eval import Case, Suite, contains


def suite(name: str, latency: float, cases: int, samples: int) -> Suite:
    async def agent(prompt: str) -> str:
        if latency:
            await anyio.sleep(latency)
        return prompt.replace("question", "answer")

    return Suite(
        name,
        agent=agent,
        cases=[
            Case(
                f"question {i}", checks=[contains(f"answer {i}")], name=f"case {i}", samples=samples
            )
            for i in range(cases)
        ],
    )


one = suite("ray-bench-one", 0.0, 1, 1)
instant = suite("ray-bench-instant", 0.0, 2000, 10)
latency = suite("ray-bench-latency", 0.5, 1000, 10)

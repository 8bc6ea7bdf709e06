"""A scripted tool-using agent, run offline: no API key needed."""

from __future__ import annotations

import anyio

from tui_eval import Agent
from tui_eval.testing import ScriptedProvider, call, text


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def main() -> None:
    agent = Agent(ScriptedProvider([call("add", {"a": 2, "b": 3}), text("2 + 3 = 5")]), tools=[add])
    result = await agent.run("What is 2 + 3?")
    print(
        f"output: {result.output!r}  tools: {result.tool_names}  turns: {result.turns}  tokens: {result.usage.total_tokens}"
    )


if __name__ == "__main__":
    anyio.run(main)

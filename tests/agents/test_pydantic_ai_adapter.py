"""A pydantic-ai agent, run offline with its own FunctionModel, evaluated by tui-eval."""

from __future__ import annotations

import pytest

from tui_eval import Case, contains, evaluate, tool_called

pydantic_ai = pytest.importorskip("pydantic_ai")

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

pytestmark = pytest.mark.anyio


def scripted(messages, info: AgentInfo) -> ModelResponse:
    """Call `add` first; answer once the tool result is in."""
    returned = [p for m in messages for p in m.parts if type(p).__name__ == "ToolReturnPart"]
    if not returned:
        return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c1")])
    return ModelResponse(parts=[TextPart(f"2 + 3 = {returned[0].content}")])


def make_agent() -> pydantic_ai.Agent:
    agent = pydantic_ai.Agent(FunctionModel(scripted), system_prompt="Use the add tool.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


async def test_pydantic_ai_agent_through_evaluate():
    cases = [
        Case("What is 2 + 3?", checks=[tool_called("add", a=2, b=3), contains("= 5")], samples=2)
    ]
    report = await evaluate(make_agent(), cases)
    assert report.passed, str(report)
    run = report.cases[0].samples[0].run
    assert run.output == "2 + 3 = 5" and run.tool_names == ["add"] and run.tool_calls[0].result == 5
    assert run.turns == 2 and run.usage.requests == 2 and run.usage.total_tokens > 0
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "assistant"]

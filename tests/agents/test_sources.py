from __future__ import annotations

import pytest

from tui_eval.agents import Agent, RunResult
from tui_eval.agents.run_spec import RunSpec
from tui_eval.agents.sources import AgentSourceError, make_runner
from tui_eval.testing import AgentTestClient, ScriptedProvider, text

pytestmark = pytest.mark.anyio


async def test_agent_source():
    run = make_runner(Agent(ScriptedProvider([text("hi")])))
    result = await run(RunSpec("hello"))
    assert result.output == "hi" and result.latency_ms > 0


async def test_agent_source_with_case_model_clones():
    base = Agent(ScriptedProvider([]))
    run = make_runner(base)
    result = await run(RunSpec("hello", model=ScriptedProvider([text("from case model")])))
    assert result.output == "from case model"


async def test_factory_called_per_sample():
    built = []

    def factory() -> Agent:
        built.append(1)
        return Agent(ScriptedProvider([text("fresh")]))

    run = make_runner(factory)
    for _ in range(3):
        assert (await run(RunSpec("x"))).output == "fresh"
    assert len(built) == 3


async def test_async_callable_bare_value_is_wrapped():
    async def answer(question: str) -> dict:
        return {"q": question}

    result = await make_runner(answer)(RunSpec("why"))
    assert isinstance(result, RunResult)
    assert result.output == {"q": "why"}
    assert result.messages[0].content == "why"
    assert result.latency_ms > 0


async def test_object_with_run_method():
    class MyAgent:
        async def run(self, message: str) -> RunResult:
            return RunResult(output=message[::-1])

    result = await make_runner(MyAgent())(RunSpec("abc"))
    assert result.output == "cba"


async def test_test_client_is_a_source():
    client = AgentTestClient()
    client.mock.queue_response(text("42").completion)
    assert (await make_runner(client)(RunSpec("6*7"))).output == "42"


async def test_duck_typed_framework_response():
    class Call:
        name = "web_search"
        arguments = {"q": "x"}

    class Response:
        content = "done"
        tool_calls = [Call()]

    class Client:
        async def run(self, message: str) -> Response:
            return Response()

    result = await make_runner(Client())(RunSpec("go"))
    assert result.output == "done" and result.tool_names == ["web_search"]


async def test_case_model_needs_an_agent():
    async def fn(q: str) -> str:
        return q

    with pytest.raises(AgentSourceError, match="needs an Agent"):
        await make_runner(fn)(RunSpec("x", model=ScriptedProvider([])))


def test_not_an_agent():
    with pytest.raises(AgentSourceError, match="cannot run 42"):
        make_runner(42)

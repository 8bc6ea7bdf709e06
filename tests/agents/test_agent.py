from __future__ import annotations

import pydantic
import pytest

from tui_eval.agents import Agent, MaxTurnsExceeded, OutputValidationError, RunContext, Usage
from tui_eval.testing import ScriptedProvider, ScriptExhausted, call, text

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def lookup(city: str) -> str:
    """Look up a city's country."""
    return {"Paris": "France"}.get(city, "unknown")


async def test_two_tool_run_records_everything():
    provider = ScriptedProvider(
        [
            call("add", {"a": 2, "b": 3}, usage=Usage(10, 5)),
            text("2 + 3 = 5", usage=Usage(20, 4)),
        ]
    )
    agent = Agent(provider, tools=[add, lookup], instructions="Be exact.")
    result = await agent.run("What is 2 + 3?")

    assert result.output == "2 + 3 = 5"
    assert result.tool_names == ["add"]
    assert result.tool_calls[0].result == 5
    assert result.tool_calls[0].error is None
    assert result.turns == 2
    assert result.usage == Usage(30, 9, 2)
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert result.messages[3].content == "5"
    assert result.messages[3].tool_call_id == result.tool_calls[0].id
    assert result.latency_ms > 0
    # The model saw the tool result on its second turn.
    assert provider.requests[1][-1].content == "5"


async def test_async_tool_and_schema_from_signature():
    agent = Agent(
        ScriptedProvider([call("lookup", {"city": "Paris"}), text("France")]), tools=[add, lookup]
    )
    result = await agent.run("Where is Paris?")
    assert result.tool_calls[0].result == "France"
    schema = {t.name: t.definition for t in agent.tools}
    assert schema["add"].parameters["required"] == ["a", "b"]
    assert schema["add"].parameters["properties"]["a"]["type"] == "integer"
    assert schema["lookup"].description == "Look up a city's country."


async def test_usage_is_estimated_when_script_gives_none():
    result = await Agent(ScriptedProvider([text("hello world")])).run("hi")
    assert result.usage.requests == 1
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


class City(pydantic.BaseModel):
    name: str
    population: int


async def test_structured_output_is_validated():
    agent = Agent(
        ScriptedProvider([text('{"name": "Paris", "population": 2100000}')]), output_type=City
    )
    result = await agent.run("Describe Paris")
    assert result.output == City(name="Paris", population=2100000)


async def test_structured_output_in_code_fence_is_accepted():
    agent = Agent(
        ScriptedProvider([text('```json\n{"name": "Oslo", "population": 700000}\n```')]),
        output_type=City,
    )
    assert (await agent.run("Oslo")).output.name == "Oslo"


async def test_invalid_structured_output_says_what_failed():
    agent = Agent(
        ScriptedProvider([text('{"name": "Paris", "population": "many"}')]), output_type=City
    )
    with pytest.raises(OutputValidationError) as info:
        await agent.run("Describe Paris")
    message = str(info.value)
    assert "City" in message and "population" in message and "integer" in message
    assert info.value.partial is not None and info.value.partial.turns == 1


async def test_not_json_structured_output():
    agent = Agent(ScriptedProvider([text("Paris is big")]), output_type=City)
    with pytest.raises(OutputValidationError, match="Paris is big"):
        await agent.run("Describe Paris")


async def test_exhausted_script_is_a_clear_error():
    agent = Agent(ScriptedProvider([call("add", {"a": 1, "b": 1})]), tools=[add])
    with pytest.raises(ScriptExhausted, match="script exhausted after 1 responses"):
        await agent.run("1 + 1?")


async def test_unknown_tool_is_recorded_and_sent_back():
    provider = ScriptedProvider([call("divide", {"a": 1}), text("sorry")])
    result = await Agent(provider, tools=[add]).run("1 / 0?")
    assert result.output == "sorry"
    assert result.tool_calls[0].error == "unknown tool 'divide' (available: add)"
    assert "unknown tool 'divide'" in provider.requests[1][-1].content


async def test_invalid_tool_arguments_are_recorded():
    provider = ScriptedProvider([call("add", {"a": "two", "b": 3}), text("oops")])
    result = await Agent(provider, tools=[add]).run("two + 3?")
    error = result.tool_calls[0].error
    assert (
        error is not None and "invalid arguments for tool 'add'" in error and "field 'a':" in error
    )
    assert provider.requests[1][-1].content.startswith("Error: invalid arguments")


async def test_raising_tool_is_recorded_and_run_goes_on():
    def explode(reason: str) -> str:
        raise RuntimeError(f"boom: {reason}")

    provider = ScriptedProvider([call("explode", {"reason": "disk"}), text("the tool failed")])
    result = await Agent(provider, tools=[explode]).run("go")
    assert result.output == "the tool failed"
    assert result.tool_calls[0].error == "RuntimeError: boom: disk"
    assert provider.requests[1][-1].content == "Error: RuntimeError: boom: disk"


async def test_max_turns_exceeded_is_a_clear_error():
    provider = ScriptedProvider([call("add", {"a": 1, "b": 1})] * 5)
    with pytest.raises(MaxTurnsExceeded, match="max_turns=3") as info:
        await Agent(provider, tools=[add], max_turns=3).run("loop")
    assert info.value.partial is not None and info.value.partial.tool_names == ["add"] * 3


async def test_run_max_turns_override():
    provider = ScriptedProvider([call("add", {"a": 1, "b": 1}), text("2")])
    with pytest.raises(MaxTurnsExceeded, match="max_turns=1"):
        await Agent(provider, tools=[add]).run("1+1", max_turns=1)


async def test_deps_reach_tools_through_context():
    def secret(ctx: RunContext, key: str) -> str:
        return ctx.deps[key]

    def plain(deps: dict, key: str) -> str:
        return deps[key] + "!"

    agent = Agent(
        ScriptedProvider([call("secret", {"key": "k"}), call("plain", {"key": "k"}), text("done")]),
        tools=[secret, plain],
    )
    result = await agent.run("go", deps={"k": "v"})
    assert [c.result for c in result.tool_calls] == ["v", "v!"]
    assert "ctx" not in agent.tools[0].definition.parameters["properties"]
    assert "deps" not in agent.tools[1].definition.parameters["properties"]


async def test_clone_uses_another_model_and_keeps_tools():
    agent = Agent(ScriptedProvider([text("first")]), tools=[add], instructions="hi")
    twin = agent.clone(model=ScriptedProvider([text("second")]))
    assert (await twin.run("x")).output == "second"
    assert (await agent.run("x")).output == "first"
    assert [t.name for t in twin.tools] == ["add"]


async def test_factory_gives_fresh_scripts():
    factory = ScriptedProvider.factory([text("again")])
    for _ in range(3):
        assert (await Agent(factory).run("x")).output == "again"


async def test_queue_response_appends():
    from tui_eval.agents import Completion

    provider = ScriptedProvider()
    provider.queue_response(Completion(content="42", usage=Usage(10, 2)))
    result = await Agent(provider).run("6 * 7?")
    assert result.output == "42" and result.usage == Usage(10, 2, 1)


async def test_callable_step_sees_the_conversation():
    from tui_eval.agents import Completion

    provider = ScriptedProvider([lambda messages: Completion(content=messages[-1].content.upper())])
    assert (await Agent(provider).run("shout")).output == "SHOUT"

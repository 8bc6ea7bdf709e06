"""A pydantic-ai agent, run offline with its own FunctionModel, evaluated by tui-eval."""

from __future__ import annotations

import pytest

from tests.lazy import lazy
from tui_eval import Case, contains, evaluate, tool_called

pydantic_ai = lazy("pydantic_ai")
messages_ = lazy("pydantic_ai.messages")
function = lazy("pydantic_ai.models.function")

pytestmark = pytest.mark.anyio


def scripted(messages, info: function.AgentInfo) -> messages_.ModelResponse:
    """Call `add` first; answer once the tool result is in."""
    returned = [p for m in messages for p in m.parts if type(p).__name__ == "ToolReturnPart"]
    if not returned:
        return messages_.ModelResponse(
            parts=[messages_.ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c1")]
        )
    return messages_.ModelResponse(parts=[messages_.TextPart(f"2 + 3 = {returned[0].content}")])


def make_agent() -> pydantic_ai.Agent:
    agent = pydantic_ai.Agent(function.FunctionModel(scripted), system_prompt="Use the add tool.")

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


# -- issue 26: the adapter's gaps, against pydantic-ai itself -------------------------

from tests.agents.wire_server import Reply, WireServer, openai_call, openai_text  # noqa: E402
from tui_eval import Message, no_error  # noqa: E402


def weather_agent(model, **options) -> pydantic_ai.Agent:
    agent = pydantic_ai.Agent(model, **options)
    attempts = []

    @agent.tool_plain
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        attempts.append(city)
        if city == "retry-me" and len(attempts) == 1:
            raise pydantic_ai.ModelRetry("city not found, try again")
        if city == "explode":
            raise RuntimeError("weather service down")
        return {"city": city, "temp_c": 21}

    return agent


def calls_weather(city: str):
    def respond(messages, info: function.AgentInfo) -> messages_.ModelResponse:
        returned = [
            p
            for m in messages
            for p in m.parts
            if type(p).__name__ in ("ToolReturnPart", "RetryPromptPart")
        ]
        if len(returned) < (2 if city == "retry-me" else 1):
            return messages_.ModelResponse(
                parts=[
                    messages_.ToolCallPart(
                        "get_weather", {"city": city}, tool_call_id=f"c{len(returned)}"
                    )
                ]
            )
        return messages_.ModelResponse(parts=[messages_.TextPart("done")])

    return respond


async def test_a_retried_tool_call_is_a_failed_call_and_results_are_values():
    agent = weather_agent(
        function.FunctionModel(calls_weather("retry-me")), instructions="Be brief."
    )
    report = await evaluate(agent, [Case("Weather?", checks=[no_error()])])
    sample = report.cases[0].samples[0]
    first, second = sample.run.tool_calls
    assert first.error is not None and "city not found, try again" in first.error
    assert second.error is None and second.result == {"city": "retry-me", "temp_c": 21}
    assert not sample.passed
    tool_texts = [m.content for m in sample.run.messages if m.role == "tool"]
    assert tool_texts[-1] == '{"city": "retry-me", "temp_c": 21}'  # JSON, not a repr
    # `instructions=` is the run's system message.
    assert sample.run.messages[0].role == "system" and sample.run.messages[0].content == "Be brief."


async def test_a_raising_tool_keeps_the_trajectory_up_to_the_failure():
    agent = weather_agent(function.FunctionModel(calls_weather("explode")))
    report = await evaluate(agent, [Case("Weather?")])
    sample = report.cases[0].samples[0]
    assert sample.status == "error" and "weather service down" in (sample.error or "")
    assert sample.run is not None and sample.run.tool_names == ["get_weather"]
    assert sample.run.tool_calls[0].arguments == {"city": "explode"}


async def test_a_conversation_keeps_its_system_and_assistant_turns():
    seen = []

    def respond(messages, info: function.AgentInfo) -> messages_.ModelResponse:
        seen.extend(
            (type(p).__name__, getattr(p, "content", None)) for m in messages for p in m.parts
        )
        return messages_.ModelResponse(parts=[messages_.TextPart("Lima")])

    conversation = [
        Message("system", "You answer geography questions."),
        Message("user", "Capital of France?"),
        Message("assistant", "Paris."),
        Message("user", "And of Peru?"),
    ]
    report = await evaluate(
        pydantic_ai.Agent(function.FunctionModel(respond)), [Case(conversation)]
    )
    assert report.passed, str(report)
    assert seen == [
        ("SystemPromptPart", "You answer geography questions."),
        ("UserPromptPart", "Capital of France?"),
        ("TextPart", "Paris."),
        ("UserPromptPart", "And of Peru?"),
    ]
    roles = [m.role for m in report.cases[0].samples[0].run.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]


async def test_an_openai_compatible_case_model_is_resolved_by_tui_eval():
    agent = weather_agent(function.FunctionModel(calls_weather("never used")))
    with WireServer() as server:
        for body in (openai_call("get_weather", {"city": "Tokyo"}), openai_text("21 °C in Tokyo")):
            # The OpenAI client pydantic-ai uses checks the full response shape.
            server.reply(Reply(200, {**body, "object": "chat.completion", "created": 0}))
        case = Case(
            "Weather in Tokyo?",
            checks=[tool_called("get_weather", city="Tokyo"), contains("21 °C")],
            model=f"openai-compatible:test-model@{server.url}",
        )
        report = await evaluate(agent, [case])
        assert report.passed, str(report)
        assert server.requests[0].body["model"] == "test-model"
    run = report.cases[0].samples[0].run
    assert run.usage.total_tokens == 34 and run.stop_reason == "stop"


# -- issue 35, items 11 and 12 ----------------------------------------------------------

HISTORY = [
    Message("user", "Weather in Lima?"),
    Message(
        "assistant", None, [__import__("tui_eval").ToolCall("get_weather", {"city": "Lima"}, "h1")]
    ),
    Message("tool", '{"city": "Lima", "temp_c": 18}', tool_call_id="h1"),
    Message("assistant", "18 °C in Lima."),
    Message("user", "And in Tokyo?"),
]


async def test_a_conversation_s_history_is_not_counted_as_this_run_s_work():

    def respond(messages, info: function.AgentInfo) -> messages_.ModelResponse:
        if any(type(p).__name__ == "ToolReturnPart" for p in messages[-1].parts):
            return messages_.ModelResponse(parts=[messages_.TextPart("21 °C in Tokyo.")])
        call = messages_.ToolCallPart("get_weather", {"city": "Tokyo"}, tool_call_id="c1")
        return messages_.ModelResponse(parts=[call])

    agent = weather_agent(function.FunctionModel(respond))
    report = await evaluate(agent, [Case(HISTORY)])
    run = report.cases[0].samples[0].run
    assert run.turns == 2 and run.usage.requests == 2
    assert [(c.name, c.arguments) for c in run.tool_calls] == [("get_weather", {"city": "Tokyo"})]
    # The history stays in the trajectory, before the run's own messages.
    assert [m.role for m in run.messages][:5] == ["user", "assistant", "tool", "assistant", "user"]


async def streamed(messages, info: function.AgentInfo):
    """`scripted`, streamed: call `add` first; answer once the tool result is in."""
    returned = [p for m in messages for p in m.parts if type(p).__name__ == "ToolReturnPart"]
    if not returned:
        yield {0: function.DeltaToolCall("add", '{"a": 2, "b": 3}', tool_call_id="c1")}
    else:
        yield "2 + 3 = "
        yield str(returned[0].content)


def streaming_agent() -> pydantic_ai.Agent:
    agent = pydantic_ai.Agent(function.FunctionModel(scripted, stream_function=streamed))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


async def test_plain_functions_returning_a_run_stream_or_iter_run_are_converted():
    agent = streaming_agent()

    async def ran(prompt: str):
        return await agent.run(prompt)

    async def streams(prompt: str):
        async with agent.run_stream(prompt) as result:
            await result.get_output()
        return result

    async def iterates(prompt: str):
        async with agent.iter(prompt) as run:
            async for _node in run:
                pass
        return run

    checks = [tool_called("add", a=2, b=3), contains("= 5")]
    for source in (ran, streams, iterates):
        report = await evaluate(source, [Case("What is 2 + 3?", checks)])
        assert report.passed, f"{source.__name__}: {report}"
        run = report.cases[0].samples[0].run
        assert run.output == "2 + 3 = 5", source.__name__
        assert run.tool_calls[0].result == 5 and run.turns == 2, source.__name__
        assert run.usage.requests == 2 and run.usage.total_tokens > 0, source.__name__

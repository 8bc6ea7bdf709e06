"""An OpenAI Agents SDK agent against a loopback OpenAI-compatible server, evaluated by
tui-eval: through `wrap`, and as the raw `RunResult` a plain function returns."""

from __future__ import annotations

import pytest

from tests.agents.wire_server import Reply, WireServer, openai_call, openai_text
from tests.lazy import lazy
from tui_eval import Case, contains, evaluate, no_error, not_contains, tool_called
from tui_eval.agents.adapters.openai_agents import wrap

agents = lazy("agents")
openai = lazy("openai")

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _no_tracing_upload():
    agents.set_tracing_disabled(True)


def make_agent(url: str, *, failing: bool = False) -> agents.Agent:
    @agents.function_tool
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        if failing:
            raise RuntimeError("weather service down")
        return {"city": city, "temp_c": 21}

    model = agents.OpenAIChatCompletionsModel(
        model="test-model", openai_client=openai.AsyncOpenAI(base_url=url, api_key="k")
    )
    return agents.Agent(name="weather", instructions="Be brief.", model=model, tools=[get_weather])


def one_tool_then_answer(server: WireServer) -> None:
    server.reply(
        Reply(200, openai_call("get_weather", {"city": "Tokyo"}, prompt=40, completion=9)),
        Reply(200, openai_text("It is 21 °C in Tokyo.", prompt=60, completion=11)),
    )


CHECKS = [tool_called("get_weather", city="Tokyo"), contains("21 °C"), no_error()]


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrap", "the SDK agent itself"])
async def test_wrapped_agent_gives_its_trajectory_usage_and_output(wrapped):
    with WireServer() as server:
        one_tool_then_answer(server)
        agent = make_agent(server.url)
        report = await evaluate(
            wrap(agent) if wrapped else agent, [Case("Weather in Tokyo?", CHECKS)]
        )
    assert report.passed, str(report)
    run = report.cases[0].samples[0].run
    assert run.output == "It is 21 °C in Tokyo."
    (weather,) = run.tool_calls
    assert weather.arguments == {"city": "Tokyo"} and weather.result == {
        "city": "Tokyo",
        "temp_c": 21,
    }
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.requests) == (100, 20, 2)
    assert run.turns == 2
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "assistant"]


async def test_a_plain_function_returning_the_sdk_result_is_converted_not_serialised():
    with WireServer() as server:
        one_tool_then_answer(server)
        agent = make_agent(server.url)

        async def my_agent(prompt: str):
            return await agents.Runner.run(agent, prompt)

        # The echoed prompt must not make a contains() check pass falsely.
        cases = [Case("Weather in Tokyo?", [*CHECKS, not_contains("Weather in Tokyo?")])]
        report = await evaluate(my_agent, cases)
    assert report.passed, str(report)
    run = report.cases[0].samples[0].run
    assert run.output == "It is 21 °C in Tokyo." and run.tool_names == ["get_weather"]
    assert run.tool_calls[0].arguments == {"city": "Tokyo"}
    assert run.usage.total_tokens == 120


async def test_a_tool_that_raises_is_a_failed_call():
    with WireServer() as server:
        one_tool_then_answer(server)
        report = await evaluate(
            wrap(make_agent(server.url, failing=True)), [Case("Tokyo?", [no_error()])]
        )
    sample = report.cases[0].samples[0]
    assert not sample.passed
    assert sample.run.tool_calls[0].error == "RuntimeError: weather service down"


# -- issue 35, item 10: facts the SDK's result drops ------------------------------------


def agent_with(url: str, **tool_options) -> agents.Agent:
    @agents.function_tool(**tool_options)
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        raise RuntimeError("weather service down")

    model = agents.OpenAIChatCompletionsModel(
        model="test-model", openai_client=openai.AsyncOpenAI(base_url=url, api_key="k")
    )
    return agents.Agent(name="weather", model=model, tools=[get_weather])


async def test_the_stop_reason_is_the_last_model_response_s():
    with WireServer() as server:
        one_tool_then_answer(server)
        report = await evaluate(wrap(make_agent(server.url)), [Case("Weather in Tokyo?")])
    assert report.cases[0].samples[0].run.stop_reason == "stop"


async def test_a_tool_raising_through_the_sdk_keeps_the_trajectory_up_to_it():
    with WireServer() as server:
        one_tool_then_answer(server)
        agent = agent_with(server.url, failure_error_function=None)
        report = await evaluate(wrap(agent), [Case("Weather in Tokyo?", [no_error()])])
    sample = report.cases[0].samples[0]
    assert not sample.passed and "weather service down" in (sample.error or "")
    (weather,) = sample.run.tool_calls
    assert weather.arguments == {"city": "Tokyo"}
    assert "weather service down" in (weather.error or "")
    assert (sample.run.usage.input_tokens, sample.run.usage.output_tokens) == (40, 9)
    assert sample.run.turns == 1


async def test_a_tool_that_raised_is_failed_even_with_a_custom_error_function():
    with WireServer() as server:
        one_tool_then_answer(server)
        agent = agent_with(server.url, failure_error_function=lambda ctx, exc: "try later")
        report = await evaluate(wrap(agent), [Case("Weather in Tokyo?", [no_error()])])
    sample = report.cases[0].samples[0]
    assert not sample.passed
    (weather,) = sample.run.tool_calls
    assert "weather service down" in (weather.error or "")
    assert [m.content for m in sample.run.messages if m.role == "tool"] == ["try later"]


async def test_the_caller_s_own_run_hooks_still_run():
    seen = []

    class Hooks(agents.RunHooks):
        async def on_llm_end(self, context, agent, response):
            seen.append("llm")

        async def on_tool_start(self, context, agent, tool):
            seen.append(tool.name)

    with WireServer() as server:
        one_tool_then_answer(server)
        report = await evaluate(wrap(make_agent(server.url), hooks=Hooks()), [Case("Tokyo?")])
    assert report.cases[0].samples[0].run.stop_reason == "stop"
    assert seen == ["llm", "get_weather", "llm"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ([{"type": "reasoning"}, {"type": "function_call"}], "tool_calls"),
        ([{"type": "web_search_call"}, {"type": "message", "status": "completed"}], "stop"),
        ([{"type": "message", "status": "incomplete", "content": []}], "length"),
        ([{"type": "message", "content": [{"type": "refusal", "refusal": "No."}]}], "refusal"),
        ([{"type": "reasoning"}], None),
    ],
)
def test_the_stop_reason_is_read_from_the_last_output_item(output, expected):
    from types import SimpleNamespace

    from tui_eval.agents.adapters.openai_agents import from_result

    result = SimpleNamespace(new_items=[], raw_responses=[SimpleNamespace(output=output)])
    assert from_result(result, "hi", 0.0).stop_reason == expected

"""A LangGraph ReAct agent (LangChain's ChatOpenAI) against a loopback OpenAI-compatible
server, evaluated by tui-eval: through `wrap`, and as raw results of a plain function."""

from __future__ import annotations

import warnings

import pytest

from tests.agents.wire_server import Reply, WireServer, openai_call, openai_text
from tests.lazy import lazy
from tui_eval import Case, Message, contains, evaluate, no_error, not_contains, tool_called
from tui_eval.agents.adapters.langgraph import wrap

prebuilt = lazy("langgraph.prebuilt")
langchain_openai = lazy("langchain_openai")
tools = lazy("langchain_core.tools")

pytestmark = pytest.mark.anyio


def make_graph(url: str):
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in 1.0
        warnings.simplefilter("ignore")
        create_react_agent = prebuilt.create_react_agent

    @tools.tool
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "temp_c": 21}

    @tools.tool
    def get_forecast(city: str) -> str:
        """Tomorrow's forecast."""
        raise tools.ToolException("forecast service down")

    get_forecast.handle_tool_error = True
    llm = langchain_openai.ChatOpenAI(model="test-model", base_url=url, api_key="k")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(llm, [get_weather, get_forecast], prompt="Be brief.")


def one_tool_then_answer(server: WireServer) -> None:
    server.reply(
        Reply(200, openai_call("get_weather", {"city": "Tokyo"}, prompt=40, completion=9)),
        Reply(200, openai_text("It is 21 °C in Tokyo.", prompt=60, completion=11)),
    )


CHECKS = [tool_called("get_weather", city="Tokyo"), contains("21 °C"), no_error()]


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrap", "the graph itself"])
async def test_wrapped_graph_gives_its_trajectory_usage_and_output(wrapped):
    with WireServer() as server:
        one_tool_then_answer(server)
        graph = make_graph(server.url)
        report = await evaluate(
            wrap(graph) if wrapped else graph, [Case("Weather in Tokyo?", CHECKS)]
        )
    assert report.passed, str(report)
    run = report.cases[0].samples[0].run
    assert run.output == "It is 21 °C in Tokyo." and run.stop_reason == "stop"
    (weather,) = run.tool_calls
    assert weather.arguments == {"city": "Tokyo"} and weather.result == {
        "city": "Tokyo",
        "temp_c": 21,
    }
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.requests) == (100, 20, 2)
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "assistant"]


async def test_plain_functions_returning_graph_state_or_ai_message_are_converted():
    with WireServer() as server:
        graph = make_graph(server.url)

        async def returns_state(prompt: str):
            return await graph.ainvoke({"messages": [("user", prompt)]})

        async def returns_last_message(prompt: str):
            state = await graph.ainvoke({"messages": [("user", prompt)]})
            return state["messages"][-1]

        cases = [Case("Weather in Tokyo?", [*CHECKS, not_contains("Weather in Tokyo?")])]
        one_tool_then_answer(server)
        state_report = await evaluate(returns_state, cases)
        one_tool_then_answer(server)
        message_report = await evaluate(returns_last_message, [Case("Weather in Tokyo?")])
    assert state_report.passed, str(state_report)
    run = state_report.cases[0].samples[0].run
    assert run.output == "It is 21 °C in Tokyo." and run.tool_names == ["get_weather"]
    assert run.tool_calls[0].arguments == {"city": "Tokyo"} and run.usage.total_tokens == 120
    alone = message_report.cases[0].samples[0].run
    assert alone.output == "It is 21 °C in Tokyo." and alone.usage.total_tokens == 71


async def test_a_tool_error_message_is_a_failed_call():
    with WireServer() as server:
        server.reply(
            Reply(200, openai_call("get_forecast", {"city": "Tokyo"})),
            Reply(200, openai_text("No forecast.")),
        )
        report = await evaluate(wrap(make_graph(server.url)), [Case("Forecast?", [no_error()])])
    sample = report.cases[0].samples[0]
    assert not sample.passed
    assert sample.run.tool_calls[0].error == "forecast service down"


# -- issue 35, item 11 -----------------------------------------------------------------


async def test_a_conversation_s_history_is_not_counted_as_this_run_s_work():
    history = [
        Message("user", "Weather in Lima?"),
        Message("assistant", "18 °C in Lima."),
        Message("user", "Weather in Tokyo?"),
    ]
    with WireServer() as server:
        one_tool_then_answer(server)
        graph = make_graph(server.url)

        async def returns_state(conversation):
            messages = [(m.role, m.content) for m in conversation]
            return await graph.ainvoke({"messages": messages})

        wrapped = await evaluate(wrap(graph), [Case(history, CHECKS)])
        one_tool_then_answer(server)
        plain = await evaluate(returns_state, [Case(history, CHECKS)])
    for report in (wrapped, plain):
        assert report.passed, str(report)
        run = report.cases[0].samples[0].run
        assert run.turns == 2 and run.usage.requests == 2 and run.tool_names == ["get_weather"]
        assert [m.role for m in run.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
        ]


async def test_a_tool_raising_through_the_tool_node_keeps_the_calls_and_usage():
    @tools.tool
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        raise RuntimeError("weather service down")

    with WireServer() as server:
        one_tool_then_answer(server)
        llm = langchain_openai.ChatOpenAI(model="test-model", base_url=server.url, api_key="k")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = prebuilt.create_react_agent(llm, [get_weather])
        report = await evaluate(wrap(graph), [Case("Weather in Tokyo?", [no_error()])])
    sample = report.cases[0].samples[0]
    assert sample.status == "error" and "weather service down" in (sample.error or "")
    (weather,) = sample.run.tool_calls
    assert weather.arguments == {"city": "Tokyo"}
    assert weather.error == "RuntimeError: weather service down"
    assert (sample.run.usage.input_tokens, sample.run.usage.output_tokens) == (40, 9)
    assert sample.run.turns == 1


# -- interrupts: a graph that asks the human, answered by the conversation's next turn -------
def confirming_graph(checkpointer: object) -> object:
    """Asks before refunding (LangGraph's `interrupt`), then acts on the answer."""
    graph_module = lazy("langgraph.graph")
    types = lazy("langgraph.types")
    messages = lazy("langchain_core.messages")

    def refund(state: dict) -> dict:
        answer = types.interrupt(f"Refund order #12 for $25? ({len(state['messages'])} msgs)")
        text = "Refunded." if str(answer).lower().startswith("y") else "Kept as it is."
        return {"messages": [messages.AIMessage(text)]}

    builder = graph_module.StateGraph(graph_module.MessagesState)
    builder.add_node("refund", refund)
    builder.add_edge(graph_module.START, "refund")
    builder.add_edge("refund", graph_module.END)
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.anyio
async def test_an_interrupt_is_the_turns_reply_and_the_next_message_resumes_it():
    from tui_eval import ScriptedUser

    saver = lazy("langgraph.checkpoint.memory").InMemorySaver()
    agent = wrap(confirming_graph(saver))
    case = Case(
        "", user=ScriptedUser(["refund my order", "yes please"]), checks=[contains("Refunded")]
    )
    report = await evaluate(agent, [case])
    sample = report.samples[0]
    assert sample.passed, sample.error or sample.checks
    turns = sample.run.conversation.turns
    assert [t.reply for t in turns] == ["Refund order #12 for $25? (1 msgs)", "Refunded."]
    assert sample.run.stop_reason != "interrupt"  # the last turn finished
    # The question is in the transcript, as the agent's message, and the answer resumed
    # the same node (it was not sent as a new message: the node saw one message).
    texts = [(m.role, m.content) for m in sample.run.messages]
    assert ("assistant", "Refund order #12 for $25? (1 msgs)") in texts
    assert ("user", "yes please") in texts


@pytest.mark.anyio
async def test_a_run_that_ends_in_an_interrupt_says_so():
    saver = lazy("langgraph.checkpoint.memory").InMemorySaver()
    result = await wrap(confirming_graph(saver)).run("refund my order")
    assert result.output == "Refund order #12 for $25? (1 msgs)"
    assert result.stop_reason == "interrupt"


@pytest.mark.anyio
async def test_a_mapping_input_answers_an_interrupt_as_it_is():
    graph_module = lazy("langgraph.graph")
    types = lazy("langgraph.types")
    messages = lazy("langchain_core.messages")
    answers: list[object] = []

    def ask(state: dict) -> dict:
        answers.append(types.interrupt("Which size?"))
        return {"messages": [messages.AIMessage("Noted.")]}

    builder = graph_module.StateGraph(graph_module.MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(graph_module.START, "ask")
    builder.add_edge("ask", graph_module.END)
    saver = lazy("langgraph.checkpoint.memory").InMemorySaver()
    agent = wrap(builder.compile(checkpointer=saver), config={"configurable": {"thread_id": "t"}})
    assert (await agent.run("a mug")).stop_reason == "interrupt"
    assert (await agent.run({"size": "large"})).output == "Noted."
    assert answers == [{"size": "large"}]

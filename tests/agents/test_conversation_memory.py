"""Conversations with framework agents that keep their own memory (issue 37): a LangGraph
graph with a checkpointer and an OpenAI Agents SDK agent with a session, each against a
loopback OpenAI-compatible server, talking with a three-line scripted user.

tui-eval sends such an agent only the user's latest message, with the conversation's
thread id; the agent reads the turns before from its own memory (the server sees them in
its requests, once each), and each turn's record holds that turn's work alone: its tool
calls, its tokens and its price."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from tests.agents.chat_server import MODEL, ChatServer, completion
from tests.agents.wire_server import Reply
from tests.lazy import lazy
from tui_eval import Case, ScriptedUser, SimulatedUser, evaluate, tool_called
from tui_eval.agents.adapters import langgraph as langgraph_adapter
from tui_eval.agents.adapters import openai_agents as agents_adapter
from tui_eval.agents.conversation import keeps_memory
from tui_eval.agents.messages import Message, Usage
from tui_eval.agents.sources import make_runner

agents = lazy("agents")
openai = lazy("openai")
prebuilt = lazy("langgraph.prebuilt")
checkpoint = lazy("langgraph.checkpoint.memory")
langchain_openai = lazy("langchain_openai")
lc_tools = lazy("langchain_core.tools")

pytestmark = pytest.mark.anyio

LINES = ["Weather in Tokyo?", "And in Lima?", "Thanks, bye."]
TEMPS = {"Tokyo": 21, "Lima": 18}
OUTPUT = 7
"""Completion tokens of every response; its prompt tokens are 100 a message it was sent,
so a turn billed for the history before it would show."""


def prompt_tokens(body: dict[str, Any]) -> int:
    return 100 * len(body["messages"])


def weather_desk(body: dict[str, Any]) -> Reply:
    """Looks the weather up for a user's question about a city; answers from the tool's
    result; says goodbye to anything else."""
    messages = body["messages"]
    last, tokens = messages[-1], {"prompt": prompt_tokens(body), "output": OUTPUT}
    if last["role"] == "tool":
        city = next(c for c in TEMPS if c in str(last["content"]))
        return Reply(body=completion(f"It is {TEMPS[city]} °C in {city}.", **tokens))
    city = next((c for c in TEMPS if c in str(last.get("content") or "")), None)
    if city is None:
        return Reply(body=completion("Goodbye!", **tokens))
    call_id = f"call_{len(messages)}"
    return Reply(body=completion(call=("get_weather", {"city": city}), call_id=call_id, **tokens))


def price(prompt: int, output: int) -> float:
    usage = PriceUsage(input_tokens=prompt, output_tokens=output)
    return float(calc_price(usage, MODEL, provider_id="openai").total_price)


def langgraph_agent(url: str, *, memory: bool = True) -> Any:
    @lc_tools.tool
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "temp_c": TEMPS[city]}

    llm = langchain_openai.ChatOpenAI(model=MODEL, base_url=url, api_key="sk-test")
    saver = checkpoint.InMemorySaver() if memory else None
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in 1.0
        warnings.simplefilter("ignore")
        graph = prebuilt.create_react_agent(
            llm, [get_weather], prompt="Be brief.", checkpointer=saver
        )
    return langgraph_adapter.wrap(graph)


def sdk_agent(url: str, *, memory: bool = True) -> Any:
    agents.set_tracing_disabled(True)

    @agents.function_tool
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "temp_c": TEMPS[city]}

    model = agents.OpenAIChatCompletionsModel(
        model=MODEL, openai_client=openai.AsyncOpenAI(base_url=url, api_key="sk-test")
    )
    agent = agents.Agent(name="desk", instructions="Be brief.", model=model, tools=[get_weather])
    return agents_adapter.wrap(agent, memory=memory)


FRAMEWORKS = {"langgraph + checkpointer": langgraph_agent, "openai-agents + session": sdk_agent}


def user_lines(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_an_agent_with_its_own_memory_gets_each_turn_alone(framework):
    with ChatServer(weather_desk) as server:
        agent = FRAMEWORKS[framework](server.url)
        assert keeps_memory(make_runner(agent))
        case = Case(user=ScriptedUser(LINES), checks=[tool_called("get_weather", city="Lima")])
        report = await evaluate(agent, [case])
    sample = report.samples[0]
    assert sample.passed, (sample.error, sample.checks)
    conversation = sample.run.conversation
    assert conversation.ended_by == "user"
    assert [t.user for t in conversation.turns] == LINES
    assert [t.reply for t in conversation.turns] == [
        "It is 21 °C in Tokyo.",
        "It is 18 °C in Lima.",
        "Goodbye!",
    ]

    # The agent read the earlier turns from its own memory: each request holds every user
    # line so far exactly once (tui-eval sent only the latest; sending the history too
    # would have doubled it).
    assert [user_lines(body) for body in server.requests] == [
        LINES[:1],
        LINES[:1],
        LINES[:2],
        LINES[:2],
        LINES[:3],
    ]
    assert "It is 21 °C in Tokyo." in str(server.requests[2]["messages"])

    # One trajectory per turn: its own tool calls, tokens and price, not the sums so far.
    turns = conversation.turns
    assert [[(c.name, c.arguments) for c in t.tool_calls] for t in turns] == [
        [("get_weather", {"city": "Tokyo"})],
        [("get_weather", {"city": "Lima"})],
        [],
    ]
    assert turns[0].tool_calls[0].result == {"city": "Tokyo", "temp_c": 21}
    billed = [prompt_tokens(body) for body in server.requests]
    per_turn = [billed[0:2], billed[2:4], billed[4:5]]
    assert [t.usage for t in turns] == [Usage(sum(p), OUTPUT * len(p), len(p)) for p in per_turn]
    for turn, prompts in zip(turns, per_turn, strict=True):
        assert turn.cost == pytest.approx(sum(price(p, OUTPUT) for p in prompts), rel=1e-9)
    assert sample.run.usage == Usage(sum(billed), OUTPUT * 5, 5)
    assert [c.name for c in sample.run.tool_calls] == ["get_weather", "get_weather"]
    assert sample.cost == pytest.approx(sum(t.cost for t in turns), rel=1e-9)

    # The conversation's record is the whole exchange, in order, each message once.
    assert [m.role for m in sample.run.messages if m.role != "system"] == [
        "user", "assistant", "tool", "assistant",
        "user", "assistant", "tool", "assistant",
        "user", "assistant",
    ]  # fmt: skip
    # The conversation's memory went with it.
    assert memory_left(agent) == 0


def memory_left(agent: Any) -> int:
    """Threads (LangGraph checkpoints) or sessions (Agents SDK) the wrapped agent keeps."""
    if isinstance(agent, langgraph_adapter.GraphAgent):
        return len(
            {c.config["configurable"]["thread_id"] for c in agent.graph.checkpointer.list(None)}
        )
    return len(agent._sessions)


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_conversations_and_samples_do_not_share_memory(framework):
    with ChatServer(weather_desk) as server:
        agent = FRAMEWORKS[framework](server.url)
        cases = [
            Case(user=ScriptedUser(LINES[:1]), name="one", samples=2),
            Case("Weather in Lima?", name="a single input"),
        ]
        report = await evaluate(agent, cases, concurrency=1)
    assert all(s.status == "passed" for s in report.samples), [s.error for s in report.samples]
    # Every first request of a conversation or sample starts with nobody's history.
    firsts = [body for body in server.requests if body["messages"][-1]["role"] == "user"]
    assert [user_lines(body) for body in firsts] == [
        ["Weather in Tokyo?"],
        ["Weather in Tokyo?"],
        ["Weather in Lima?"],
    ]
    assert memory_left(agent) == 0  # nobody continues a sample's thread: it went too


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_case_s_history_reaches_the_agent_s_memory_once(framework):
    history = [
        Message("user", "Weather in Oslo?"),
        Message("assistant", "It is 4 °C in Oslo."),
        Message("user", "And in Lima?"),
    ]
    with ChatServer(weather_desk) as server:
        agent = FRAMEWORKS[framework](server.url)
        report = await evaluate(agent, [Case(history, user=ScriptedUser(["Thanks, bye."]))])
    sample = report.samples[0]
    assert sample.passed, sample.error
    assert [t.user for t in sample.run.conversation.turns] == ["And in Lima?", "Thanks, bye."]
    every_user_line = ["Weather in Oslo?", "And in Lima?"]
    assert [user_lines(body) for body in server.requests] == [
        every_user_line,
        every_user_line,
        [*every_user_line, "Thanks, bye."],
    ]
    assert "It is 4 °C in Oslo." in str(server.requests[0]["messages"])


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_an_agent_a_factory_builds_keeps_its_memory_for_the_conversation(framework):
    with ChatServer(weather_desk) as server:
        built: list[Any] = []

        def factory() -> Any:
            built.append(FRAMEWORKS[framework](server.url))
            return built[-1]

        report = await evaluate(factory, [Case(user=ScriptedUser(LINES[:2]))])
    sample = report.samples[0]
    assert sample.passed, sample.error
    assert len(built) == 1  # one agent for the whole conversation
    assert [user_lines(body) for body in server.requests][2:] == [LINES[:2], LINES[:2]]
    assert [len(t.tool_calls) for t in sample.run.conversation.turns] == [1, 1]
    assert memory_left(built[0]) == 0


async def test_sessions_come_from_memory_one_per_conversation():
    made: list[Any] = []

    def session(thread: str) -> Any:
        made.append(agents.SQLiteSession(thread))
        return made[-1]

    with ChatServer(weather_desk) as server:
        agent = sdk_agent(server.url, memory=session)
        report = await evaluate(agent, [Case(user=ScriptedUser(LINES[:2]), samples=2)])
    assert all(s.passed for s in report.samples), [s.error for s in report.samples]
    assert len(made) == 2 and made[0].session_id != made[1].session_id
    assert len(await made[0].get_items()) == 8  # two turns: user, call, output, answer each
    assert agent._sessions == {}  # let go, but not cleared: the caller's sessions


def test_one_session_for_every_sample_is_refused():
    with pytest.raises(TypeError, match="share one memory between every sample"):
        agents_adapter.wrap(object(), session=object())
    with pytest.raises(TypeError, match="memory must be True, False or a function"):
        agents_adapter.wrap(object(), memory="yes")


def test_a_graph_given_as_itself_keeps_its_memory_too():
    graph = langgraph_agent("http://127.0.0.1:9/v1").graph
    assert keeps_memory(make_runner(graph))
    assert not keeps_memory(make_runner(langgraph_agent("http://127.0.0.1:9/v1", memory=False)))


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_without_memory_the_agent_is_sent_the_whole_conversation(framework):
    with ChatServer(weather_desk) as server:
        agent = FRAMEWORKS[framework](server.url, memory=False)
        assert not keeps_memory(make_runner(agent))
        report = await evaluate(agent, [Case(user=ScriptedUser(LINES[:2]))])
    sample = report.samples[0]
    assert sample.passed, sample.error
    assert [user_lines(body) for body in server.requests][2:] == [LINES[:2], LINES[:2]]
    assert [len(t.tool_calls) for t in sample.run.conversation.turns] == [1, 1]


graph_builder = lazy("langgraph.graph")
lc_messages = lazy("langchain_core.messages")


def unmetered_graph() -> Any:
    """A graph with a checkpointer whose "model" tui-eval cannot see (no HTTP): the usage
    its messages report, priced by the model they name, is all there is."""

    def respond(state: Any) -> Any:
        seen = len(state["messages"])
        reply = lc_messages.AIMessage(
            f"reply to {seen} messages",
            usage_metadata={
                "input_tokens": 100 * seen,
                "output_tokens": OUTPUT,
                "total_tokens": 100 * seen + OUTPUT,
            },
            response_metadata={"model_name": MODEL, "model_provider": "openai"},
        )
        return {"messages": [reply]}

    builder = graph_builder.StateGraph(graph_builder.MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(graph_builder.START, "respond")
    return builder.compile(checkpointer=checkpoint.InMemorySaver())


pai = lazy("pydantic_ai")
pai_function = lazy("pydantic_ai.models.function")
pai_messages = lazy("pydantic_ai.messages")
pai_usage = lazy("pydantic_ai.usage")


def unmetered_pydantic_ai() -> Any:
    """A pydantic-ai agent whose model tui-eval cannot see (a function), keeping no memory:
    it is sent the whole conversation each turn."""

    def respond(messages: list[Any], info: Any) -> Any:
        seen = len(messages)
        return pai_messages.ModelResponse(
            parts=[pai_messages.TextPart(f"reply to {seen} messages")],
            usage=pai_usage.RequestUsage(input_tokens=100 * seen, output_tokens=OUTPUT),
            model_name=MODEL,
            provider_name="openai",
        )

    return pai.Agent(pai_function.FunctionModel(respond, model_name=MODEL))


UNMETERED = {
    "langgraph, its own memory": lambda: langgraph_adapter.wrap(unmetered_graph()),
    "pydantic-ai, sent the conversation": unmetered_pydantic_ai,
}


@pytest.mark.parametrize("agent", UNMETERED)
@pytest.mark.parametrize("user", ["scripted", "simulated"])
async def test_each_turn_of_an_agent_tui_eval_cannot_meter_is_priced(agent, user, monkeypatch):
    """Reported usage is priced turn by turn, and a simulated user's requests (which do
    pass through tui-eval) do not make the agent's look metered."""

    def simulated(body: dict[str, Any]) -> Reply:
        said = sum(1 for m in body["messages"] if m["role"] == "assistant")
        line = LINES[said] if said < len(LINES) else "###STOP###"
        return Reply(body=completion(line, prompt=50, output=5))

    with ChatServer(simulated) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        if user == "scripted":
            the_user: Any = ScriptedUser(LINES)
        else:
            the_user = SimulatedUser("You ask about the weather.", model=f"openai:{MODEL}")
        report = await evaluate(UNMETERED[agent](), [Case(user=the_user)])
    sample = report.samples[0]
    assert sample.passed, sample.error
    turns = sample.run.conversation.turns
    # The agent reads 1, 3 and 5 messages when it answers turns 1, 2 and 3.
    assert [t.reply for t in turns] == [f"reply to {n} messages" for n in (1, 3, 5)]
    assert [t.usage for t in turns] == [Usage(100 * n, OUTPUT, 1) for n in (1, 3, 5)]
    for turn, seen in zip(turns, (1, 3, 5), strict=True):
        assert turn.cost == pytest.approx(price(100 * seen, OUTPUT), rel=1e-9)
    user_cost = sample.run.conversation.user_cost or 0.0
    assert (user_cost > 0) == (user == "simulated")
    assert sample.cost == pytest.approx(sum(t.cost for t in turns) + user_cost, rel=1e-9)

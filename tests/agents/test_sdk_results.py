"""Plain functions that call an SDK themselves: what they return is converted with its
trajectory and usage, missing usage is unknown (never 0), and a conversation input can be
handed to the SDK through `to_openai` / `to_anthropic`."""

from __future__ import annotations

import openai
import pytest
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider as PydanticOpenAIProvider

import tui_eval
from tui_eval import Case, Message, RunResult, ToolCall, Usage, evaluate, max_tokens, stop_reason
from tui_eval.agents.messages import to_anthropic, to_openai
from tui_eval.agents.run_spec import RunSpec
from tui_eval.agents.sources import make_runner

from .wire_server import Reply, WireServer, openai_call, openai_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def server():
    with WireServer() as running:
        yield running


def sdk_client(server: WireServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=server.url + "/v1", api_key="sk-test", http_client=tui_eval.http_client()
    )


# -- item 13: the raw openai SDK ------------------------------------------------------------
async def test_function_returning_a_chat_completion_is_converted(server):
    server.reply(Reply(body=openai_call("add", {"a": 2, "b": 3}, prompt=12, completion=7)))

    async def agent(question: str):
        return await sdk_client(server).chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": question}]
        )

    result = await make_runner(agent)(RunSpec("What is 2 + 3?"))
    assert result.tool_names == ["add"] and result.tool_calls[0].arguments == {"a": 2, "b": 3}
    assert result.usage == Usage(12, 7, 1) and result.usage.known
    assert result.stop_reason == "tool_calls" and result.turns == 1
    assert result.messages[0] == Message("user", "What is 2 + 3?")
    assert result.messages[-1].role == "assistant" and result.messages[-1].tool_calls


async def test_function_returning_a_completion_text_and_model(server):
    server.reply(Reply(body=openai_text("5", prompt=10, completion=1)))

    async def agent(question: str):
        return await sdk_client(server).chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": question}]
        )

    result = await make_runner(agent)(RunSpec("What is 2 + 3?"))
    assert result.output == "5" and result.stop_reason == "stop"
    assert result.model == "test-model"


async def test_function_returning_the_message_keeps_its_calls_but_not_a_usage(server):
    server.reply(Reply(body=openai_call("add", {"a": 1, "b": 1})))

    async def agent(question: str):
        response = await sdk_client(server).chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": question}]
        )
        return response.choices[0].message

    result = await make_runner(agent)(RunSpec("1 + 1?"))
    assert result.tool_names == ["add"] and result.tool_calls[0].arguments == {"a": 1, "b": 1}
    assert not result.usage.known  # a message carries no usage


def responses_body(status: str = "completed") -> dict:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "test-model",
        "status": status,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Let me add.", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_r",
                "name": "add",
                "arguments": '{"a": 2, "b": 3}',
                "status": "completed",
            },
        ],
        "usage": {
            "input_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 4,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 19,
        },
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


async def test_function_returning_a_responses_api_response_is_converted(server):
    server.reply(Reply(body=responses_body()), Reply(body=responses_body("incomplete")))

    async def agent(question: str):
        return await sdk_client(server).responses.create(model="test-model", input=question)

    result = await make_runner(agent)(RunSpec("What is 2 + 3?"))
    assert server.requests[0].path == "/v1/responses"
    assert result.output == "Let me add." and result.model == "test-model"
    assert result.tool_names == ["add"] and result.tool_calls[0].arguments == {"a": 2, "b": 3}
    assert result.tool_calls[0].id == "call_r"
    assert result.usage == Usage(15, 4, 1) and result.stop_reason == "tool_calls"
    cut = await make_runner(agent)(RunSpec("again"))
    assert cut.stop_reason == "length"


async def test_a_plain_string_has_unknown_usage_and_max_tokens_says_so():
    def agent(question: str) -> str:
        return "an answer"

    report = await evaluate(agent, [Case("q", checks=[max_tokens(10)])])
    check = report.cases[0].samples[0].checks[0]
    assert not check.passed
    assert "unknown" in check.reason and "usage" in check.reason


def test_usage_stays_compatible_and_unknown_spreads():
    assert Usage(10, 2, 1) == Usage(input_tokens=10, output_tokens=2, requests=1)
    assert Usage().known and Usage(1, 2, 3).known
    assert not Usage.unknown().known
    assert not (Usage(10, 2, 1) + Usage.unknown()).known
    assert (Usage(10, 2, 1) + Usage(1, 1, 1)).known


def test_max_tokens_passes_on_known_usage_within_the_limit():
    assert max_tokens(20)(RunResult("x", usage=Usage(10, 2, 1))).passed
    assert max_tokens(20)(RunResult("x", usage=Usage())).passed  # a known zero is zero


# -- item 12: pydantic-ai's AgentRunResult returned by a plain function ----------------------
async def test_function_returning_a_pydantic_ai_result_is_converted(server):
    strict = {"object": "chat.completion", "created": 0}  # pydantic-ai validates them
    server.reply(
        Reply(body={**openai_call("add", {"a": 2, "b": 3}, prompt=12, completion=7), **strict}),
        Reply(body={**openai_text("2 + 3 = 5", prompt=20, completion=6), **strict}),
    )
    model = OpenAIChatModel(
        "test-model",
        provider=PydanticOpenAIProvider(base_url=server.url + "/v1", api_key="sk-test"),
    )
    pyd_agent = PydanticAgent(model)

    @pyd_agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def agent(question: str):
        return await pyd_agent.run(question)

    result = await make_runner(agent)(RunSpec("What is 2 + 3?"))
    assert result.output == "2 + 3 = 5"
    assert result.tool_names == ["add"] and result.tool_calls[0].result == 5
    assert result.usage == Usage(32, 13, 2) and result.turns == 2
    assert result.stop_reason == "stop"


# -- item 14: a conversation input handed to an SDK -----------------------------------------
CONVERSATION = [
    Message("system", "Be brief."),
    Message("user", "What is 2 + 3?"),
    Message("assistant", None, [ToolCall("add", {"a": 2, "b": 3}, id="call_1")]),
    Message("tool", "5", tool_call_id="call_1"),
    Message("assistant", "5."),
    Message("user", "And times 2?"),
]


def test_to_openai_gives_chat_completions_messages():
    assert to_openai(CONVERSATION) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {"role": "tool", "content": "5", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "5."},
        {"role": "user", "content": "And times 2?"},
    ]


def test_to_openai_accepts_a_prompt_string():
    assert to_openai("hi") == [{"role": "user", "content": "hi"}]


def test_openai_sdk_types_accept_the_messages():
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import TypeAdapter

    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(to_openai(CONVERSATION))


async def test_openai_sdk_sends_the_converted_conversation(server):
    server.reply(Reply(body=openai_text("10")))

    async def agent(conversation: list[Message]):
        return await sdk_client(server).chat.completions.create(
            model="test-model", messages=to_openai(conversation)
        )

    result = await make_runner(agent)(RunSpec(CONVERSATION))
    assert result.output == "10"
    sent = server.requests[0].body["messages"]
    assert sent == to_openai(CONVERSATION)


def test_to_anthropic_gives_a_system_text_and_messages_api_messages():
    system, messages = to_anthropic(CONVERSATION)
    assert system == "Be brief."
    assert messages == [
        {"role": "user", "content": "What is 2 + 3?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "add", "input": {"a": 2, "b": 3}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "5"}],
        },
        {"role": "assistant", "content": "5."},
        {"role": "user", "content": "And times 2?"},
    ]


# -- item 17: a server's null finish_reason is unknown, not the agent's doing ---------------
async def test_null_finish_reason_is_unknown_not_the_agents(server):
    body = openai_text("fine")
    body["choices"][0]["finish_reason"] = None
    server.reply(Reply(body=body))
    from tui_eval import Agent
    from tui_eval.agents.providers.openai import OpenAIProvider

    agent = Agent(OpenAIProvider("test-model", base_url=server.url + "/v1", api_key="sk-test"))
    result = await agent.run("hi")
    assert result.stop_reason == "unknown"
    check = stop_reason("stop")(result)
    assert not check.passed
    assert "agent gave none" not in check.reason
    assert "finish_reason" in check.reason and "unknown" in check.reason


def test_no_stop_reason_from_a_plain_function_still_says_the_agent_gave_none():
    check = stop_reason("stop")(RunResult("x"))
    assert not check.passed and "gave none" in check.reason


async def test_unknown_usage_survives_a_saved_report(tmp_path):
    from tui_eval import Report

    report = await evaluate(lambda q: "an answer", [Case("q")])
    loaded = Report.load(report.save(tmp_path / "r.json"))
    sample = loaded.cases[0].samples[0]
    assert not sample.usage.known and not sample.run.usage.known


async def test_a_price_is_told_the_usage_is_unknown():
    told = []

    def price(usage: Usage) -> float:
        told.append(usage.known)
        return 0.01  # a flat price per sample needs no tokens

    report = await evaluate(lambda q: "an answer", [Case("q")], price=price)
    assert told == [False] and report.cases[0].samples[0].cost == 0.01


async def test_a_function_returning_completions_in_a_conversation_is_priced_every_turn():
    """Its calls bypass tui-eval's HTTP layer: each turn's reported usage is priced, not
    the first turn's alone."""
    from tui_eval import ScriptedUser
    from tui_eval.agents.http.metering import ResponseTokens, price_of

    def completion(text: str) -> object:
        return openai.types.chat.ChatCompletion.model_validate(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
            }
        )

    async def agent(messages: list[Message]):
        return completion(f"answer {len(messages)}")

    user = ScriptedUser(["one", "two", "three"])
    report = await evaluate(agent, [Case("", user=user, name="talk")])
    sample = report.samples[0]
    assert sample.run is not None and sample.run.conversation is not None
    turns = sample.run.conversation.turns
    assert len(turns) == 3, [t.user for t in turns]
    each = price_of("openai", "gpt-4o-mini", ResponseTokens(1000, 100))
    assert each is not None and each > 0
    assert sample.cost == pytest.approx(3 * each)
    assert [t.cost for t in turns] == pytest.approx([each] * 3)

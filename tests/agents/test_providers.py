"""Providers against a real HTTP server on 127.0.0.1 speaking each wire format."""

from __future__ import annotations

import copy
import time

import anyio
import pydantic
import pytest

from tui_eval import (
    Agent,
    Case,
    Message,
    Report,
    RunResult,
    Usage,
    contains,
    evaluate,
    llm_judge,
    run_check,
)
from tui_eval.agents.providers import ModelSpecError, ProviderError, resolve_model
from tui_eval.agents.providers.anthropic import AnthropicProvider
from tui_eval.agents.providers.openai import OpenAIProvider
from tui_eval.run.events import SampleStateChanged

from .wire_server import Reply, WireServer, anthropic_call, anthropic_text, openai_call, openai_text

pytestmark = pytest.mark.anyio

SECRET = "sk-test-SECRET-0123456789"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class City(pydantic.BaseModel):
    name: str
    population: int


@pytest.fixture
def server():
    with WireServer() as running:
        yield running


def openai(server: WireServer, **options) -> OpenAIProvider:
    options.setdefault("backoff", 0.01)
    return OpenAIProvider("test-model", base_url=server.url + "/v1", api_key=SECRET, **options)


def anthropic(server: WireServer, **options) -> AnthropicProvider:
    options.setdefault("backoff", 0.01)
    return AnthropicProvider("claude-test", base_url=server.url, api_key=SECRET, **options)


async def test_openai_two_turn_tool_run_and_usage(server):
    server.reply(
        Reply(body=openai_call("add", {"a": 2, "b": 3})), Reply(body=openai_text("2 + 3 = 5"))
    )
    agent = Agent(
        openai(server),
        tools=[add],
        instructions="Use tools.",
        settings={"temperature": 0, "seed": 7},
    )
    result = await agent.run("What is 2 + 3?")
    assert (
        result.output == "2 + 3 = 5"
        and result.tool_names == ["add"]
        and result.tool_calls[0].result == 5
    )
    assert result.usage == Usage(22, 12, 2) and result.turns == 2
    first, second = (r.body for r in server.requests)
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert (
        first["tools"][0]["function"]["name"] == "add"
        and first["temperature"] == 0
        and first["seed"] == 7
    )
    assert first["messages"][0] == {"role": "system", "content": "Use tools."}
    assert second["messages"][2]["tool_calls"][0]["id"] == "call_a"
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_a", "content": "5"}


async def test_openai_structured_output_and_fallback(server):
    server.reply(Reply(body=openai_text('{"name": "Paris", "population": 2100000}')))
    provider = openai(server)
    result = await Agent(provider, output_type=City).run("Describe Paris")
    assert result.output == City(name="Paris", population=2100000)
    assert server.requests[0].body["response_format"]["json_schema"]["schema"]["title"] == "City"
    # A server without structured output rejects response_format: the schema goes into the prompt.
    server.reply(
        Reply(400, {"error": {"message": "Unrecognized request argument: response_format"}}),
        Reply(body=openai_text('{"name": "Oslo", "population": 700000}')),
    )
    fallback = OpenAIProvider("m", base_url=server.url + "/v1", backoff=0.01)
    result = await Agent(fallback, output_type=City).run("Describe Oslo")
    assert result.output.name == "Oslo" and fallback.json_schema_supported is False
    retried = server.requests[-1].body
    assert "response_format" not in retried and "JSON schema" in retried["messages"][0]["content"]


async def test_anthropic_two_turn_tool_run(server):
    server.reply(
        Reply(body=anthropic_call("add", {"a": 2, "b": 3})), Reply(body=anthropic_text("It is 5."))
    )
    agent = Agent(anthropic(server), tools=[add], instructions="Be brief.")
    result = await agent.run("2 + 3?")
    assert result.output == "It is 5." and result.tool_calls[0].result == 5
    assert result.usage == Usage(30, 14, 2)
    request = server.requests[1]
    assert request.path == "/v1/messages" and request.headers["x-api-key"] == SECRET
    assert request.body["system"] == "Be brief." and request.body["max_tokens"] == 4096
    assert request.body["tools"][0]["input_schema"]["required"] == ["a", "b"]
    assert request.body["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "add",
        "input": {"a": 2, "b": 3},
    }
    assert request.body["messages"][2]["content"][0]["type"] == "tool_result"


async def test_anthropic_structured_output(server):
    server.reply(Reply(body=anthropic_text('{"name": "Rome", "population": 2800000}')))
    result = await Agent(anthropic(server), output_type=City).run("Rome?")
    assert result.output.population == 2800000
    assert "JSON schema" in server.requests[0].body["system"]


async def test_429_with_retry_after_then_success_is_counted(server):
    server.reply(
        Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.05"}),
        Reply(body=openai_text("ok")),
    )
    events = []
    start = time.perf_counter()
    report = await evaluate(
        Agent(openai(server)), [Case("hi", checks=[contains("ok")])], on_event=events.append
    )
    assert time.perf_counter() - start >= 0.05
    assert report.passed and report.cases[0].samples[0].run.retries == 1
    assert any(isinstance(e, SampleStateChanged) and e.state == "retrying" for e in events)


async def test_500_three_times_then_failure(server):
    server.reply(*[Reply(500, {"error": {"message": "upstream exploded"}})] * 3)
    with pytest.raises(ProviderError) as info:
        await Agent(openai(server, max_retries=2)).run("hi")
    message = str(info.value)
    assert "failed after 3 attempts" in message and "HTTP 500: upstream exploded" in message
    assert len(server.requests) == 3


async def test_401_fails_at_once_without_retries_and_hides_the_key(server):
    server.reply(Reply(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}}))
    with pytest.raises(ProviderError) as info:
        await Agent(openai(server)).run("hi")
    assert "HTTP 401" in str(info.value) and "Incorrect API key" in str(info.value)
    assert SECRET not in str(info.value) and "***" in str(info.value)
    assert len(server.requests) == 1


async def test_an_error_body_with_odd_codes_is_reported_not_a_crash(server):
    """A server's error JSON is untrusted: a list or an object where a code belongs."""
    server.reply(Reply(400, {"error": {"code": ["x"], "type": {}, "message": "bad request"}}))
    with pytest.raises(ProviderError, match="HTTP 400.*bad request"):
        await Agent(openai(server)).run("hi")


async def test_malformed_bodies(server):
    server.reply(Reply(body=b"<html>gateway</html>"))
    with pytest.raises(ProviderError, match="malformed \\(non-JSON\\) body"):
        await Agent(openai(server)).run("hi")
    server.reply(Reply(body={"unexpected": True}))
    with pytest.raises(ProviderError, match="malformed response: no choices"):
        await Agent(openai(server)).run("hi")
    server.reply(Reply(body={"content": "not blocks"}))
    with pytest.raises(ProviderError, match="anthropic sent a malformed response"):
        await Agent(anthropic(server)).run("hi")


async def test_hanging_server_hits_the_timeout(server):
    server.reply(
        Reply(body=openai_text("late"), delay=2.0), Reply(body=openai_text("late"), delay=2.0)
    )
    with (
        anyio.fail_after(60),  # a hang guard: each 2 s reply must be cut at 0.5 s
        # 0.5 s, not less: the deadline covers connecting, and a loaded machine can take a
        # tenth of a second to reach a loopback server (the retry then never arrives).
        pytest.raises(ProviderError, match=r"no complete response within 0\.5s \(timeout\)"),
    ):
        await Agent(openai(server, timeout=0.5, max_retries=1)).run("hi")
    assert len(server.requests) == 2  # one try and one retry, each cut by the timeout


async def test_timeout_is_a_deadline_for_the_whole_response(server):
    """A server dripping one byte every 0.05 s never resets it (it is not an idle timeout:
    that would wait out the whole body, over 10 s)."""
    server.reply(Reply(body=openai_text("slowly, slowly"), drip=0.05))
    start = time.perf_counter()
    with pytest.raises(ProviderError, match=r"no complete response within 0\.2s"):
        await Agent(openai(server, timeout=0.2, max_retries=0)).run("hi")
    assert time.perf_counter() - start < 2


async def test_a_retry_after_beyond_the_cap_fails_at_once(server):
    server.reply(Reply(429, {"error": {"message": "quota"}}, {"Retry-After": "480"}))
    start = time.perf_counter()
    with pytest.raises(ProviderError, match=r"retry after 480s \(Retry-After\), more than the 60s"):
        await Agent(openai(server)).run("hi")
    assert time.perf_counter() - start < 2 and len(server.requests) == 1


async def test_a_huge_response_body_is_refused(server):
    huge = openai_text("x" * 1000)
    server.reply(Reply(body=huge))
    with pytest.raises(ProviderError, match="response body over 500 bytes"):
        await Agent(openai(server, max_response_bytes=500)).run("hi")
    # Without a content-length up front, the cap holds while reading.
    server.reply(Reply(body=huge, chunked=True))
    with pytest.raises(ProviderError, match="response body over 500 bytes"):
        await Agent(openai(server, max_response_bytes=500)).run("hi")
    server.reply(Reply(body=openai_text("small"), chunked=True))
    assert (await Agent(openai(server)).run("hi")).output == "small"


async def test_secrets_never_reach_reports(server, tmp_path):
    server.reply(Reply(401, {"error": {"message": f"bad key {SECRET}"}}))
    report = await evaluate(Agent(openai(server)), [Case("hi", checks=[contains("x")])])
    path = report.save(tmp_path / "r.json")
    assert SECRET not in path.read_text()
    assert "bad key ***" in report.cases[0].samples[0].error
    assert SECRET not in repr(openai(server))


async def test_llm_judge_through_spec_string(server):
    from tui_eval.checks import verdict_reply

    run = RunResult(output="Paris", messages=[Message("user", "Capital of France?")])
    server.reply(Reply(body=openai_text(verdict_reply(0.95, "Correct and brief."))))
    judge = llm_judge("Names the capital", model=f"openai-compatible:judge@{server.url}/v1")
    result = await run_check(judge, run)
    assert result.passed and result.score == 0.95 and result.reason == "Correct and brief."
    assert server.requests[-1].body["temperature"] == 0
    server.reply(Reply(body=openai_text("I think it is fine")))
    failed = await run_check(judge, run)
    assert not failed.passed and failed.reason.startswith("judge reply is not a valid verdict")


def test_spec_resolution_errors(monkeypatch):
    with pytest.raises(ModelSpecError, match="set OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")
    with pytest.raises(ModelSpecError, match="set ANTHROPIC_API_KEY"):
        resolve_model("anthropic:claude-x")
    with pytest.raises(ModelSpecError, match="unknown model provider 'gemini'"):
        resolve_model("gemini:pro")
    with pytest.raises(ModelSpecError, match="MODEL@BASE_URL"):
        resolve_model("openai-compatible:llama")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    provider = resolve_model("openai:gpt-4o-mini")
    assert isinstance(provider, OpenAIProvider) and SECRET not in repr(provider)
    local = resolve_model("openai-compatible:llama3.1@http://localhost:11434/v1")
    assert local.base_url == "http://localhost:11434/v1" and local.model == "llama3.1"


async def test_a_provider_serves_one_run_after_another(server):
    """Each run closes its connections at its end; the provider opens new ones."""
    server.reply(Reply(body=openai_text("one")), Reply(body=openai_text("two")))
    provider = openai(server)
    first = await evaluate(Agent(provider), [Case("hi", checks=[contains("one")])])
    second = await evaluate(Agent(provider), [Case("hi", checks=[contains("two")])])
    assert first.samples[0].passed and second.samples[0].passed


async def test_report_loads_after_provider_errors(server, tmp_path):
    server.reply(
        Reply(503, {"error": {"message": "overloaded"}}),
        Reply(503, {"error": {"message": "overloaded"}}),
    )
    report = await evaluate(Agent(openai(server, max_retries=1)), [Case("hi")])
    loaded = Report.load(report.save(tmp_path / "r.json"))
    assert (
        loaded.cases[0].samples[0].status == "error"
        and "overloaded" in loaded.cases[0].samples[0].error
    )


async def test_a_copy_of_a_used_provider_for_another_model_asks_and_prices_that_model(server):
    """A provider works out what it tells the HTTP layer once (not for every request); a
    copy given another model must still send and price that model, not the first one's."""
    from tui_eval.agents.http.context import CURRENT_SAMPLE, RunContext, SampleContext
    from tui_eval.agents.http.metering import ResponseTokens, price_of

    unnamed = {k: v for k, v in openai_text("ok").items() if k != "model"}  # priced as asked
    server.reply(Reply(body=unnamed), Reply(body=unnamed))
    first = OpenAIProvider("gpt-4o-mini", base_url=server.url + "/v1", api_key=SECRET)
    run = RunContext()  # one run for both: the same run options
    costs = []
    for model in ("gpt-4o-mini", "gpt-4o"):
        provider = first
        if model != first.model:  # a copy of the provider once it has been used
            provider = copy.copy(first)
            provider.model = model
        sample = SampleContext(run)
        token = CURRENT_SAMPLE.set(sample)
        try:
            await provider.complete([Message("user", "hi")], [])
        finally:
            CURRENT_SAMPLE.reset(token)
        costs.append(sample.meter.cost)
    used = ResponseTokens(input=10, output=5)
    assert costs == [
        pytest.approx(price_of("openai", "gpt-4o-mini", used), rel=1e-9),
        pytest.approx(price_of("openai", "gpt-4o", used), rel=1e-9),
    ]
    assert [r.body["model"] for r in server.requests] == ["gpt-4o-mini", "gpt-4o"]

"""`otel.capture`: an agent function instrumented with the OpenTelemetry SDK (GenAI and
OpenInference conventions) gets its trajectory from its spans, concurrently, unmixed."""

from __future__ import annotations

import json

import anyio
import pytest

from tui_eval import Case, contains, evaluate, max_tokens, no_error, tool_called

otel_trace = pytest.importorskip("opentelemetry.trace")
pytest.importorskip("opentelemetry.sdk.trace")

from tui_eval.agents.adapters.otel import capture  # noqa: E402

pytestmark = pytest.mark.anyio

tracer = otel_trace.get_tracer("test-agent")


async def genai_agent(city: str) -> str:
    """A hand-instrumented agent: one chat span, one tool span, one more chat span."""
    with tracer.start_as_current_span("invoke_agent weather") as agent_span:
        agent_span.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat test-model") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", "test-model")
            chat.set_attribute(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": city}]}]),
            )
            chat.set_attribute("gen_ai.usage.input_tokens", 30)
            chat.set_attribute("gen_ai.usage.output_tokens", 5)
        await anyio.sleep(0.001 * (len(city) % 3))  # let the samples interleave
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "get_weather")
            tool.set_attribute("gen_ai.tool.call.id", f"call-{city}")
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"city": city}))
            tool.set_attribute("gen_ai.tool.call.result", json.dumps({"temp_c": len(city)}))
        await anyio.sleep(0)
        with tracer.start_as_current_span("chat test-model") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.usage.input_tokens", 50)
            chat.set_attribute("gen_ai.usage.output_tokens", 10)
            chat.set_attribute("gen_ai.response.finish_reasons", ["stop"])
    return f"{len(city)} °C in {city}"


def openinference_agent(question: str) -> str:
    """A sync agent with OpenInference spans; its tool fails."""
    with tracer.start_as_current_span("agent") as agent_span:
        agent_span.set_attribute("openinference.span.kind", "AGENT")
        agent_span.set_attribute("input.value", question)
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.token_count.prompt", 20)
            llm.set_attribute("llm.token_count.completion", 4)
        with tracer.start_as_current_span("search") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("tool.name", "search")
            tool.set_attribute("tool.parameters", json.dumps({"query": question}))
            tool.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, "search index offline"))
        agent_span.set_attribute("output.value", "I could not search.")
    return "I could not search."


CITIES = ["Tokyo", "Paris", "Lima", "Oslo", "Cairo", "Quito", "Hanoi", "Perth"] * 2


async def test_capture_builds_each_samples_trajectory_at_concurrency_8_without_mixing():
    cases = [
        Case(
            city,
            name=f"{city}-{i}",
            checks=[tool_called("get_weather", city=city), contains(city), max_tokens(95)],
        )
        for i, city in enumerate(CITIES)
    ]
    report = await evaluate(capture(genai_agent), cases, concurrency=8)
    assert report.passed, str(report)
    for case, result in zip(cases, report.cases, strict=True):
        run = result.samples[0].run
        assert [c.arguments for c in run.tool_calls] == [{"city": case.input}]
        assert run.tool_calls[0].result == {"temp_c": len(case.input)}
        assert run.tool_calls[0].id == f"call-{case.input}"
        assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.requests) == (80, 15, 2)
        assert run.turns == 2 and run.stop_reason == "stop"


async def test_capture_reads_openinference_spans_and_failed_tools():
    report = await evaluate(capture(openinference_agent), [Case("find it", [no_error()])])
    sample = report.cases[0].samples[0]
    run = sample.run
    assert run.output == "I could not search."
    (search,) = run.tool_calls
    assert search.name == "search" and search.arguments == {"query": "find it"}
    assert search.error == "search index offline"
    assert run.usage.total_tokens == 24
    assert not sample.passed and "search index offline" in sample.checks[0].reason


async def test_spans_outside_a_capture_are_not_collected():
    with tracer.start_as_current_span("unrelated") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", "stray")
        report = await evaluate(capture(genai_agent), [Case("Rome")])
    assert report.cases[0].samples[0].run.tool_names == ["get_weather"]

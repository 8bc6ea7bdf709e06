"""LLM-only OpenTelemetry instrumentations (openai-v2, OpenInference, logfire's
`instrument_openai`) record no tool spans: the tool calls the model asked for are in their
output messages. And spans a thread pool makes without the context are not lost silently."""

from __future__ import annotations

import json
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from tui_eval import Case, evaluate, max_tokens, tool_called

otel_trace = pytest.importorskip("opentelemetry.trace")
pytest.importorskip("opentelemetry.sdk.trace")

from tui_eval.agents.adapters.otel import capture  # noqa: E402

pytestmark = pytest.mark.anyio

tracer = otel_trace.get_tracer("test-llm-only")


def genai_llm_only(city: str) -> str:
    """openai-v2 / logfire style: one chat span whose output message asks for a tool."""
    with tracer.start_as_current_span("chat test-model") as chat:
        chat.set_attribute("gen_ai.operation.name", "chat")
        chat.set_attribute("gen_ai.usage.input_tokens", 30)
        chat.set_attribute("gen_ai.usage.output_tokens", 5)
        chat.set_attribute("gen_ai.response.finish_reasons", ["tool_calls"])
        chat.set_attribute(
            "gen_ai.output.messages",
            json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "tool_call",
                                "id": "call_w",
                                "name": "get_weather",
                                "arguments": {"city": city},
                            }
                        ],
                        "finish_reason": "tool_call",
                    }
                ]
            ),
        )
    return ""


def openinference_llm_only(city: str) -> str:
    """OpenInference's OpenAI instrumentor: flattened output message tool calls."""
    prefix = "llm.output_messages.0.message"
    with tracer.start_as_current_span("ChatCompletion") as llm:
        llm.set_attribute("openinference.span.kind", "LLM")
        llm.set_attribute("llm.token_count.prompt", 20)
        llm.set_attribute("llm.token_count.completion", 4)
        llm.set_attribute(f"{prefix}.role", "assistant")
        llm.set_attribute(f"{prefix}.tool_calls.0.tool_call.id", "call_o")
        llm.set_attribute(f"{prefix}.tool_calls.0.tool_call.function.name", "get_weather")
        llm.set_attribute(
            f"{prefix}.tool_calls.0.tool_call.function.arguments", json.dumps({"city": city})
        )
    return ""


@pytest.mark.parametrize("agent", [genai_llm_only, openinference_llm_only])
async def test_tool_calls_come_from_output_messages_without_tool_spans(agent):
    report = await evaluate(
        capture(agent), [Case("Oslo", [tool_called("get_weather", city="Oslo")])]
    )
    sample = report.cases[0].samples[0]
    assert sample.passed, sample.checks[0].reason
    (call,) = sample.run.tool_calls
    assert call.id in ("call_w", "call_o") and call.arguments == {"city": "Oslo"}


def threaded_agent(city: str) -> str:
    """Its chat span is made in a pool thread, without the OpenTelemetry context."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(genai_llm_only, city).result()
    return "done"


async def test_spans_lost_to_a_thread_pool_are_reported():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = await evaluate(capture(threaded_agent), [Case("Oslo", [max_tokens(100)])])
    said = [str(w.message) for w in caught if "context" in str(w.message)]
    assert said and "Oslo" in said[0] and "thread" in said[0]
    # Nothing the spans would have told is taken as known.
    sample = report.cases[0].samples[0]
    assert not sample.passed and "unknown" in sample.checks[0].reason

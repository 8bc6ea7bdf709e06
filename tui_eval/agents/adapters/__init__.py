"""Adapters: other frameworks' agents and traces as tui-eval runs, and `to_run_result`. Each
framework is an optional extra imported only by its adapter; converting a result object
(`from_framework`) never imports the framework.
"""

from __future__ import annotations

from typing import Any

from tui_eval.agents.adapters.sdk_results import from_sdk
from tui_eval.agents.messages import Message, RunResult, ToolCall, Usage, input_messages
from tui_eval.agents.run_spec import Input
from tui_eval.util.text import value_text


def from_framework(value: Any, input: Input, latency_ms: float) -> RunResult | None:
    """An Agents SDK, LangGraph/LangChain or pydantic-ai result as a `RunResult`, else None."""
    module = type(value).__module__ or ""
    if module.startswith("pydantic_ai"):
        from tui_eval.agents.adapters import pydantic_ai

        if pydantic_ai.is_result(value):
            return pydantic_ai.from_result(value, latency_ms)
    if module.split(".")[0] == "agents":
        from tui_eval.agents.adapters import openai_agents

        if openai_agents.is_result(value):
            return openai_agents.from_result(value, input, latency_ms)
    if module.startswith("langchain") or isinstance(value, (dict, list)):
        from tui_eval.agents.adapters import langgraph

        return langgraph.from_value(value, input, latency_ms)
    return None


def to_run_result(value: Any, input: Input, latency_ms: float) -> RunResult:
    """Normalise whatever an agent returned into a `RunResult`."""
    if type(value) is str:  # the common case, first
        return RunResult(
            value,
            [*input_messages(input), Message("assistant", value)],
            [],
            Usage.unknown(),  # a string says nothing of the tokens it took
            1,
            latency_ms,
        )
    if isinstance(value, RunResult):
        if not value.latency_ms:
            value.latency_ms = latency_ms
        if not value.messages:
            value.messages = [
                *input_messages(input),
                Message("assistant", value_text(value.output)),
            ]
        return value
    sdk = from_sdk(value, input, latency_ms)
    if sdk is not None:
        return sdk
    framework = from_framework(value, input, latency_ms)
    if framework is not None:
        return framework
    duck = _duck_result(value, input, latency_ms)
    if duck is not None:
        return duck
    return RunResult(
        output=value,
        messages=[*input_messages(input), Message("assistant", value_text(value))],
        usage=Usage.unknown(),
        turns=1,
        latency_ms=latency_ms,
    )


def _duck_result(value: Any, input: Input, latency_ms: float) -> RunResult | None:
    """Responses of other frameworks that carry content, tool calls and usage."""
    raw_calls = getattr(value, "tool_calls", None)
    if not isinstance(raw_calls, list) or isinstance(value, (str, bytes, dict)):
        return None
    content = getattr(value, "output", None)
    if content is None:
        content = getattr(value, "content", None)
    calls = []
    for raw in raw_calls:
        name = getattr(raw, "name", None) or (raw.get("name") if isinstance(raw, dict) else None)
        if name is None:
            continue
        args = getattr(raw, "arguments", None) or (
            raw.get("arguments") if isinstance(raw, dict) else None
        )
        calls.append(ToolCall(str(name), dict(args or {})))
    raw_usage = getattr(value, "usage", None)
    usage = (
        Usage(
            int(getattr(raw_usage, "input_tokens", 0) or 0),
            int(getattr(raw_usage, "output_tokens", 0) or 0),
            int(getattr(raw_usage, "requests", 1) or 1),
        )
        if raw_usage is not None
        else Usage.unknown()
    )
    messages = [*input_messages(input), Message("assistant", value_text(content), calls)]
    return RunResult(content, messages, calls, usage, turns=1, latency_ms=latency_ms)

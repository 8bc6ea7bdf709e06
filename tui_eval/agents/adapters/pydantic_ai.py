"""Run a pydantic-ai `Agent` under tui-eval (`pip install 'tui-eval[pydantic-ai]'`).

Its output, the tool calls found in its messages, and its usage become the `RunResult`
every check reads.
"""

from __future__ import annotations

import time
from typing import Any

from tui_eval.agents.messages import Message, RunResult, ToolCall, Usage
from tui_eval.agents.run_spec import RunSpec, SampleRunner


def pydantic_ai_runner(agent: Any) -> SampleRunner:
    """The per-sample call for a pydantic-ai agent."""

    async def run(spec: RunSpec) -> RunResult:
        kwargs: dict[str, Any] = {}
        if spec.deps is not None:
            kwargs["deps"] = spec.deps
        if spec.output_type is not None:
            kwargs["output_type"] = spec.output_type
        if spec.model is not None:
            kwargs["model"] = spec.model
        prompt = (
            spec.input
            if isinstance(spec.input, str)
            else "\n\n".join(m.content or "" for m in spec.input if m.role == "user")
        )
        start = time.perf_counter()
        result = await agent.run(prompt, **kwargs)
        latency_ms = (time.perf_counter() - start) * 1000
        messages, calls, turns = convert_messages(result.all_messages())
        raw_usage = result.usage
        if not hasattr(raw_usage, "input_tokens"):  # older pydantic-ai: a method
            raw_usage = raw_usage()
        usage = Usage(
            int(getattr(raw_usage, "input_tokens", 0) or 0),
            int(getattr(raw_usage, "output_tokens", 0) or 0),
            int(getattr(raw_usage, "requests", 0) or 0),
        )
        return RunResult(result.output, messages, calls, usage, turns, latency_ms)

    return run


def convert_messages(history: list[Any]) -> tuple[list[Message], list[ToolCall], int]:
    """pydantic-ai messages as ours: (messages, tool calls in order, model responses)."""
    messages: list[Message] = []
    calls: dict[str, ToolCall] = {}
    ordered: list[ToolCall] = []
    turns = 0
    for item in history:
        kind = type(item).__name__
        if kind == "ModelResponse":
            turns += 1
            texts, response_calls = [], []
            for part in item.parts:
                part_kind = type(part).__name__
                if part_kind == "TextPart":
                    texts.append(part.content)
                elif part_kind == "ToolCallPart":
                    args = (
                        part.args_as_dict()
                        if hasattr(part, "args_as_dict")
                        else dict(part.args or {})
                    )
                    call = ToolCall(part.tool_name, args, str(part.tool_call_id or ""))
                    calls[call.id] = call
                    ordered.append(call)
                    response_calls.append(call)
            messages.append(Message("assistant", "".join(texts) or None, response_calls))
            continue
        for part in getattr(item, "parts", ()):
            part_kind = type(part).__name__
            if part_kind == "SystemPromptPart":
                messages.append(Message("system", str(part.content)))
            elif part_kind == "UserPromptPart":
                content = part.content if isinstance(part.content, str) else str(part.content)
                messages.append(Message("user", content))
            elif part_kind == "ToolReturnPart":
                returned = calls.get(str(part.tool_call_id or ""))
                if returned is not None:
                    returned.result = part.content
                messages.append(
                    Message("tool", str(part.content), tool_call_id=str(part.tool_call_id or ""))
                )
            elif part_kind == "RetryPromptPart":
                retried = calls.get(str(getattr(part, "tool_call_id", "") or ""))
                error = (
                    part.model_response() if hasattr(part, "model_response") else str(part.content)
                )
                if retried is not None:
                    retried.error = str(part.content)
                messages.append(
                    Message(
                        "tool",
                        str(error),
                        tool_call_id=str(getattr(part, "tool_call_id", "") or ""),
                    )
                )
    return messages, ordered, turns

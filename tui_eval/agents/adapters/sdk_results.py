"""An `openai` SDK response a plain function returns (a `ChatCompletion`, its message, a
Responses-API `Response`) as a `RunResult`, without importing the SDK; priced when its
requests did not pass through tui-eval's HTTP layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tui_eval.agents.adapters.install import charge_unmetered
from tui_eval.agents.http.metering import response_tokens
from tui_eval.agents.messages import (
    UNKNOWN_STOP_REASON,
    Completion,
    Message,
    RunResult,
    ToolCall,
    Usage,
    input_messages,
)
from tui_eval.agents.providers.base import normalize_stop_reason, parse_arguments
from tui_eval.agents.run_spec import Input


def from_sdk(value: Any, input: Input, latency_ms: float) -> RunResult | None:
    """`value` as a `RunResult` when it is an `openai` SDK response; else None."""
    dump = getattr(value, "model_dump", None)
    if not (type(value).__module__ or "").startswith("openai.") or dump is None:
        return None
    from tui_eval.agents.providers.openai import from_wire

    body = dump(mode="json")
    if not isinstance(body, dict):
        return None
    alone = False
    if isinstance(body.get("choices"), list) and body["choices"]:  # a ChatCompletion
        completion = from_wire(body)
    elif body.get("object") == "response" and isinstance(body.get("output"), list):
        completion = _from_responses(body)
    elif body.get("role") == "assistant" and "content" in body:  # its message alone
        completion = from_wire({"choices": [{"message": body, "finish_reason": "stop"}]})
        alone = True  # a message says neither its usage nor why it ended
    else:
        return None
    reported = not alone and isinstance(body.get("usage"), Mapping)
    if reported:
        charge_unmetered([("openai", completion.model, response_tokens(body))])
    usage = completion.usage if reported else Usage.unknown()
    calls = list(completion.tool_calls)
    messages = [*input_messages(input), Message("assistant", completion.content, calls)]
    return RunResult(
        completion.content,
        messages,
        calls,
        usage,
        turns=1,
        latency_ms=latency_ms,
        stop_reason=None if alone else completion.stop_reason,
        model=completion.model,
    )


def _from_responses(body: dict[str, Any]) -> Completion:
    """A Responses-API response: its output text, function calls, usage and why it ended."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in body["output"]:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, Mapping) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
                elif isinstance(part, Mapping) and part.get("type") == "refusal":
                    texts.append(str(part.get("refusal") or ""))
        elif item.get("type") == "function_call":
            arguments, error = parse_arguments(item.get("arguments") or "{}")
            call = ToolCall(str(item.get("name") or ""), arguments, str(item.get("call_id") or ""))
            call.error = error
            calls.append(call)
    details = body.get("incomplete_details")
    reason = str(details.get("reason") or "") if isinstance(details, Mapping) else ""
    if body.get("status") == "incomplete":
        stop = normalize_stop_reason({"max_output_tokens": "length"}.get(reason, reason))
        stop = stop or UNKNOWN_STOP_REASON
    elif calls:
        stop = "tool_calls"
    else:
        stop = "stop" if body.get("status") == "completed" else UNKNOWN_STOP_REASON
    tokens = response_tokens(body)
    return Completion(
        content="".join(texts) if texts else None,
        tool_calls=calls,
        usage=Usage(tokens.input, tokens.output, 1),
        stop_reason=stop,
        model=str(body.get("model") or ""),
    )

"""Trajectories from OpenTelemetry spans (from `otel.capture` or an OTLP file), in the GenAI
conventions (`gen_ai.*`) or OpenInference's (`llm.*`, `tool.*`, `input.value`...). Without
tool spans, tool calls come from model spans' output; a model span without token counts
makes the usage unknown. Imports no OpenTelemetry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tui_eval.agents.http.metering import ResponseTokens
from tui_eval.agents.messages import Message, RunResult, ToolCall, Usage
from tui_eval.agents.providers.base import normalize_stop_reason
from tui_eval.util.text import value_text

CASE_ATTRIBUTE = "tui_eval.case"  # A span attribute naming the case a recorded trace belongs to.

_LLM_OPERATIONS = {"chat", "text_completion", "generate_content"}

_TOKEN_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "llm.token_count.prompt",
    "llm.token_count.completion",
)


@dataclass(slots=True)
class SpanRecord:
    """One finished span, as plain data."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    """The status description (or `error.type`) of a span whose status is ERROR."""

    @property
    def kind(self) -> str:
        """`tool`, `llm`, `agent` or `other`, from either convention."""
        operation = self.attributes.get("gen_ai.operation.name")
        if operation == "execute_tool":
            return "tool"
        if operation in _LLM_OPERATIONS:
            return "llm"
        if operation in ("invoke_agent", "create_agent"):
            return "agent"
        open_kind = str(self.attributes.get("openinference.span.kind", "")).upper()
        return {"TOOL": "tool", "LLM": "llm", "AGENT": "agent"}.get(open_kind, "other")

    @property
    def duration_ms(self) -> float:
        """How long the span lasted."""
        return max(0, self.end_ns - self.start_ns) / 1e6


def run_from_spans(spans: Sequence[SpanRecord], *, output: Any = None) -> RunResult:
    """One trace's spans as a run, the last model or agent answer its output (or `output`)."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.end_ns))
    calls: list[ToolCall] = []
    requested: list[ToolCall] = []  # asked for in model output, for LLM-only instrumentations
    usage = Usage()
    turns = 0
    stop_reason: str | None = None
    answers: dict[str, str] = {}  # the last answer of a model span, and of an agent span
    for span in ordered:
        attrs = span.attributes
        if span.kind == "tool":
            calls.append(_tool_call(span))
        elif span.kind == "llm":
            turns += 1
            known = any(key in attrs for key in _TOKEN_KEYS)
            usage = usage + Usage(*_token_counts(attrs), 1, known=known)
            requested += requested_calls(span)
            finish = attrs.get("gen_ai.response.finish_reasons")
            if isinstance(finish, (list, tuple)):
                finish = finish[-1] if finish else None
            if isinstance(finish, str) and finish:
                stop_reason = normalize_stop_reason(finish)
        if span.kind in ("llm", "agent") and (answer := _answer_text(span)) is not None:
            answers[span.kind] = answer
    models_and_agents = [s for s in ordered if s.kind in ("llm", "agent")]
    first_input = next(filter(None, map(input_messages_of, [*models_and_agents, *ordered])), [])
    final = answers.get("agent", answers.get("llm"))
    if not calls:
        # No tool spans (openai-v2, OpenInference's LLM spans, logfire's instrument_openai):
        # the calls the model asked for are all there is; their results were not recorded.
        calls = requested
    messages = list(first_input)
    for call in calls:
        messages.append(Message("assistant", None, [call]))
        text = f"Error: {call.error}" if call.error is not None else value_text(call.result)
        messages.append(Message("tool", text, tool_call_id=call.id))
    result_output = output if output is not None else (final or "")
    messages.append(Message("assistant", value_text(result_output)))
    latency = 0.0
    if ordered:
        latency = (max(s.end_ns for s in ordered) - min(s.start_ns for s in ordered)) / 1e6
    return RunResult(
        output=result_output,
        messages=messages,
        tool_calls=calls,
        usage=usage if turns else Usage.unknown(),  # no model span: no count at all
        turns=turns,
        latency_ms=latency,
        stop_reason=stop_reason,
    )


def span_usages(spans: Sequence[SpanRecord]) -> list[tuple[str, str, ResponseTokens]]:
    """(provider, model, tokens) of each model call the spans record, for pricing."""
    found = []
    for span in spans:
        if span.kind != "llm":
            continue
        attrs = span.attributes
        tokens = ResponseTokens.checked(
            *_token_counts(attrs),
            _int(
                attrs.get(
                    "gen_ai.usage.cache_read.input_tokens",
                    attrs.get("llm.token_count.prompt_details.cache_read"),
                )
            ),
        )
        model = str(
            attrs.get("gen_ai.response.model")
            or attrs.get("gen_ai.request.model")
            or attrs.get("llm.model_name")
            or ""
        )
        provider = str(
            attrs.get("gen_ai.provider.name")
            or attrs.get("gen_ai.system")
            or attrs.get("llm.provider")
            or ("anthropic" if model.startswith("claude") else "openai")
        )
        found.append((provider, model, tokens))
    return found


def requested_calls(span: SpanRecord) -> list[ToolCall]:
    """The tool calls a model span's output messages ask for, in any convention."""
    attrs = span.attributes
    raw = json_value(attrs.get("gen_ai.output.messages"))
    found: list[ToolCall] = []
    if isinstance(raw, list):
        for message in raw:
            if not isinstance(message, Mapping):
                continue
            parts = message.get("parts")
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, Mapping) and part.get("type") == "tool_call":
                    found.append(
                        _requested(part.get("name"), part.get("arguments"), part.get("id"))
                    )
            chat_calls = message.get("tool_calls")
            for call in chat_calls if isinstance(chat_calls, list) else ():
                if isinstance(call, Mapping):
                    function = call.get("function")
                    function = function if isinstance(function, Mapping) else call
                    found.append(
                        _requested(function.get("name"), function.get("arguments"), call.get("id"))
                    )
        return [call for call in found if call.name]
    flat: dict[tuple[int, int], dict[str, Any]] = {}
    start = "llm.output_messages."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        message_index, _, rest = key[len(start) :].partition(".message.tool_calls.")
        call_index, _, field_name = rest.partition(".tool_call.")
        if message_index.isdigit() and call_index.isdigit() and field_name:
            flat.setdefault((int(message_index), int(call_index)), {})[field_name] = value
    for index in sorted(flat):
        fields = flat[index]
        found.append(
            _requested(
                fields.get("function.name"), fields.get("function.arguments"), fields.get("id")
            )
        )
    return [call for call in found if call.name]


def _requested(name: Any, raw_arguments: Any, call_id: Any) -> ToolCall:
    return ToolCall(str(name or ""), _arguments(raw_arguments), str(call_id or ""))


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments: a JSON object as itself, any other value as `{"input": value}`."""
    arguments = json_value(raw)
    if isinstance(arguments, dict):
        return arguments
    return {} if raw in (None, "") else {"input": arguments}


def first_user_message(spans: Sequence[SpanRecord]) -> str | None:
    """The first user message of a trace (what a case's `input` is matched against)."""
    for span in sorted(spans, key=lambda s: (s.start_ns, s.end_ns)):
        for message in input_messages_of(span):
            if message.role == "user" and message.content is not None:
                return message.content
    return None


def case_name_of(spans: Sequence[SpanRecord]) -> str | None:
    """The `tui_eval.case` attribute of any span of the trace."""
    for span in spans:
        name = span.attributes.get(CASE_ATTRIBUTE)
        if name:
            return str(name)
    return None


def _tool_call(span: SpanRecord) -> ToolCall:
    attrs = span.attributes
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or span.name
    raw_args = attrs.get("gen_ai.tool.call.arguments")
    if raw_args is None:
        raw_args = attrs.get("tool.parameters", attrs.get("input.value"))
    raw_result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))
    return ToolCall(
        str(name),
        _arguments(raw_args),
        str(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id") or span.span_id),
        result=json_value(raw_result),
        error=span.error,
        latency_ms=span.duration_ms,
    )


def input_messages_of(span: SpanRecord) -> list[Message]:
    """The input messages a span records, in either convention."""
    attrs = span.attributes
    raw = attrs.get("gen_ai.input.messages")
    if raw is not None:
        return _messages(json_value(raw))
    indexed = _indexed_messages(attrs, "llm.input_messages")
    if indexed:
        return indexed
    value = attrs.get("input.value")
    if value is not None and span.kind in ("agent", "llm"):
        parsed = json_value(value)
        if isinstance(parsed, Mapping) and isinstance(parsed.get("messages"), list):
            return _messages(parsed["messages"])
        if isinstance(parsed, list):
            messages = _messages(parsed)
            if messages:
                return messages
        return [Message("user", value_text(parsed))]
    return []


def _answer_text(span: SpanRecord) -> str | None:
    attrs = span.attributes
    raw = attrs.get("gen_ai.output.messages")
    indexed = _indexed_messages(attrs, "llm.output_messages") if raw is None else []
    if raw is not None or indexed:
        texts = [m.content for m in (indexed or _messages(json_value(raw))) if m.content]
        return "".join(texts) if texts else None
    value = attrs.get("output.value")
    if value is not None:
        return value if isinstance(value, str) else value_text(value)
    return None


def _messages(raw: Any) -> list[Message]:
    """GenAI messages (`{"role", "parts": [...]}`) or chat messages (`{"role", "content"}`)."""
    if not isinstance(raw, list):
        return []
    messages = []
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        role = str(item.get("role") or "user")
        role = {"human": "user", "ai": "assistant", "model": "assistant"}.get(role, role)
        if role not in ("system", "user", "assistant", "tool"):
            role = "user"
        parts = item.get("parts")
        if isinstance(parts, list):
            texts = [
                str(p.get("content", ""))
                for p in parts
                if isinstance(p, Mapping) and p.get("type") == "text"
            ]
            content: str | None = "".join(texts) if texts else None
        else:
            raw_content = item.get("content")
            content = (
                raw_content
                if isinstance(raw_content, str) or raw_content is None
                else value_text(raw_content)
            )
        messages.append(Message(role, content))  # type: ignore[arg-type]
    return messages


def _indexed_messages(attrs: Mapping[str, Any], prefix: str) -> list[Message]:
    """OpenInference's flattened `llm.input_messages.0.message.role` attributes."""
    found: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start) :].partition(".")
        if index.isdigit() and rest in ("message.role", "message.content"):
            found.setdefault(int(index), {})[rest.split(".")[1]] = value
    return _messages([found[i] for i in sorted(found)])


def json_value(value: Any) -> Any:
    """A string holding JSON as its value; anything else as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _token_counts(attrs: Mapping[str, Any]) -> tuple[int, int]:
    """A model span's input and output tokens, in either convention."""
    given = attrs.get("gen_ai.usage.input_tokens", attrs.get("llm.token_count.prompt"))
    made = attrs.get("gen_ai.usage.output_tokens", attrs.get("llm.token_count.completion"))
    return _int(given), _int(made)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0

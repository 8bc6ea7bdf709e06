"""The provider protocol: one method that turns a conversation into a `Completion`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tui_eval.agents.messages import Completion, Message
from tui_eval.util.errors import TuiEvalError


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool as a model sees it: name, description and a JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@runtime_checkable
class Provider(Protocol):
    """Anything that can answer a conversation."""

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        *,
        output_schema: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Completion:
        """Answer the conversation, offering `tools`; `output_schema` asks for structured output."""
        ...


class ProviderError(TuiEvalError):
    """A provider could not produce a completion (HTTP failure, garbage reply, bad key...)."""


class ModelSpecError(TuiEvalError, ValueError):
    """A model spec string could not be resolved to a provider."""


_STOP_REASONS = {
    **dict.fromkeys(("stop", "end_turn", "stop_sequence"), "stop"),
    **dict.fromkeys(("length", "max_tokens"), "length"),
    **dict.fromkeys(("tool_calls", "function_call", "tool_use"), "tool_calls"),
    **{reason: reason for reason in ("content_filter", "refusal")},
}


def normalize_stop_reason(raw: Any) -> str:
    """A provider's own stop reason in tui-eval's vocabulary (`stop`, `length`,
    `content_filter`, `tool_calls`, `refusal`); one it does not know is kept as given."""
    text = str(raw or "")
    return _STOP_REASONS.get(text, text)


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments (JSON text, or a mapping already) as a dict, with the error when
    they are not a JSON object: the tool is not run, the text is kept as
    `_unparsed_arguments` and the model is told why."""
    try:
        parsed = json.loads(raw) if isinstance(raw, str | bytes) else raw
        problem = None if isinstance(parsed, dict) else "not a JSON object"
    except ValueError as exc:
        problem = str(exc)
    if problem is None:
        return parsed, None
    shown = raw if isinstance(raw, str) else repr(raw)
    shown = shown[:199] + "…" if len(shown) > 200 else shown
    return {"_unparsed_arguments": raw}, f"invalid JSON in tool arguments: {problem}; got {shown!r}"

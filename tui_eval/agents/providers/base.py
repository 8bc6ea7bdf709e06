"""The provider protocol: one method that turns a conversation into a `Completion`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import anyio

from tui_eval.agents.messages import Completion, Message


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool as a model sees it: name, description and a JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@runtime_checkable
class Provider(Protocol):
    """Anything that can answer a conversation.

    Built in: `ScriptedProvider` (offline), the OpenAI-compatible and Anthropic providers.
    """

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


class ProviderError(Exception):
    """A provider could not produce a completion (HTTP failure, garbage reply, bad key...)."""


class ModelSpecError(ValueError):
    """A model spec string could not be resolved to a provider."""


RetryListener = Callable[[int, float], None]
retry_listener: ContextVar[RetryListener | None] = ContextVar(
    "tui_eval_retry_listener", default=None
)
"""Set by the runner for each sample; providers call it with (attempt, delay_s) before a retry."""


def notify_retry(attempt: int, delay_s: float) -> None:
    """Tell whoever runs the current sample that its provider is about to retry."""
    listener = retry_listener.get()
    if listener is not None:
        listener(attempt, delay_s)


Closer = Callable[[], Awaitable[None]]
run_resources: ContextVar[list[Closer] | None] = ContextVar("tui_eval_run_resources", default=None)
"""Set by the runner for one run; providers register their HTTP clients to be closed at its end."""


@asynccontextmanager
async def resource_scope() -> AsyncIterator[None]:
    """Close every client opened by providers inside this block when it ends."""
    closers: list[Closer] = []
    token = run_resources.set(closers)
    try:
        yield
    finally:
        run_resources.reset(token)
        for close in closers:
            with anyio.CancelScope(shield=True):
                await close()


_STOP_REASONS = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}


def normalize_stop_reason(raw: Any) -> str:
    """A provider's own stop reason in tui-eval's vocabulary (`stop`, `length`,
    `content_filter`, `tool_calls`, `refusal`); one it does not know is kept as given."""
    text = str(raw or "")
    return _STOP_REASONS.get(text, text)


def invalid_arguments_error(raw: Any, problem: str) -> str:
    """The error of a tool call whose arguments are not a JSON object."""
    shown = raw if isinstance(raw, str) else repr(raw)
    if len(shown) > 200:
        shown = shown[:199] + "…"
    return f"invalid JSON in tool arguments: {problem}; got {shown!r}"

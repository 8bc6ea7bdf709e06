"""`ScriptedProvider`: replays a fixed script of model responses, offline and deterministic."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import anyio

from tui_eval.agents.messages import Completion, Message, ToolCall, Usage
from tui_eval.agents.providers.base import ProviderError, ToolDef


class ScriptExhausted(ProviderError):
    """The agent asked for more responses than the script holds."""


@dataclass(slots=True)
class ScriptStep:
    """One scripted response and its latency; `usage=None` estimates ~4 characters a token."""

    completion: Completion
    usage: Usage | None = None
    delay: float = 0.0


Step = Completion | ScriptStep | Callable[[list[Message]], Completion]


def call(
    tool_name: str,
    args: dict[str, Any] | None = None,
    *,
    usage: Usage | None = None,
    delay: float = 0.0,
) -> ScriptStep:
    """A scripted response that calls one tool.

    Example:
        >>> ScriptedProvider([call("add", {"a": 2, "b": 3}), text("2 + 3 = 5")])  # doctest: +SKIP
    """
    return calls((tool_name, args or {}), usage=usage, delay=delay)


def calls(
    *tool_calls: tuple[str, dict[str, Any]], usage: Usage | None = None, delay: float = 0.0
) -> ScriptStep:
    """A scripted response that calls several tools at once (parallel tool calls)."""
    completion = Completion(
        tool_calls=[ToolCall(name, dict(args)) for name, args in tool_calls],
        stop_reason="tool_calls",
    )
    return ScriptStep(completion, usage, delay)


def text(content: str, *, usage: Usage | None = None, delay: float = 0.0) -> ScriptStep:
    """A scripted final text response (for structured output, the JSON text)."""
    return ScriptStep(Completion(content=content), usage, delay)


def estimate_tokens(value: str) -> int:
    """A rough, deterministic token count: about four characters a token."""
    return math.ceil(len(value) / 4) if value else 0


def _estimate_usage(messages: list[Message], completion: Completion) -> Usage:
    prompt = sum(estimate_tokens(m.content or "") + 4 for m in messages)
    reply = estimate_tokens(completion.content or "") + sum(
        estimate_tokens(json.dumps(tc.arguments, default=str)) + 4 for tc in completion.tool_calls
    )
    return Usage(prompt, max(reply, 1), 1)


class ScriptedProvider:
    """A provider that replays `call(...)` and `text(...)` steps in order, once: give each
    sample its own with `ScriptedProvider.factory(steps)`.

    Attributes:
        requests: the conversations the provider was asked to answer, in order.
    """

    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted") -> None:
        self._steps: list[Step] = list(steps)
        self._next = 0
        self.name = name
        self.requests: list[list[Message]] = []

    @classmethod
    def factory(
        cls, steps: Iterable[Step], *, name: str = "scripted"
    ) -> Callable[[], ScriptedProvider]:
        """A zero-argument factory giving a fresh copy of the script each call."""
        frozen = list(steps)
        return lambda: cls(frozen, name=name)

    def queue_response(self, response: Completion | ScriptStep) -> None:
        """Append a response to the script."""
        self._steps.append(response)

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used yet."""
        return len(self._steps) - self._next

    def __repr__(self) -> str:
        return f"ScriptedProvider({self.name!r}, {self._next}/{len(self._steps)} used)"

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        *,
        output_schema: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Completion:
        """Return the next scripted response."""
        self.requests.append(list(messages))
        if self._next >= len(self._steps):
            raise ScriptExhausted(
                f"script exhausted after {len(self._steps)} responses "
                f"(the agent asked for response {self._next + 1})"
            )
        step = self._steps[self._next]
        self._next += 1
        usage: Usage | None = None
        if isinstance(step, ScriptStep):
            if step.delay:
                await anyio.sleep(step.delay)
            completion, usage = step.completion, step.usage
        elif isinstance(step, Completion):
            completion, usage = (
                step,
                step.usage if step.usage.requests or step.usage.total_tokens else None,
            )
        else:
            completion = step(list(messages))
        # Fresh tool-call objects per response, so one script replayed twice never shares state.
        completion = replace(
            completion,
            tool_calls=[
                ToolCall(tc.name, dict(tc.arguments), tc.id) for tc in completion.tool_calls
            ],
            model=completion.model or self.name,
        )
        if usage is None:
            usage = _estimate_usage(messages, completion)
        elif not usage.requests:
            usage = Usage(usage.input_tokens, usage.output_tokens, 1)
        completion.usage = usage
        return completion

"""`RunSpec`: what one sample asks of an agent source, and `AgentCall`, the per-sample call."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tui_eval.agents.messages import Message, RunResult
from tui_eval.agents.providers import ModelLike

Input = str | Sequence[Message] | Any
"""A case's input: a prompt, a conversation, or a structured value (passed to plain
functions unchanged, sent to a model as JSON text)."""


@dataclass(slots=True)
class RunSpec:
    """What one sample asks of the agent source.

    Attributes:
        state: the sample's environment state (`Case(state=...)`), for the agent's tools.
        thread: the conversation's id, for an agent that keeps its own memory (then
            `input` is the user's latest message alone).
    """

    input: Input
    deps: Any = None
    max_turns: int | None = None
    output_type: Any = None
    model: ModelLike | None = None
    state: Any = None
    thread: str | None = None


AgentCall = Callable[[RunSpec], Awaitable[RunResult]]
"""The agent normalised to one call per sample (`tui_eval.agents.sources.make_runner`)."""


def is_async_callable(fn: Any) -> bool:
    """Whether calling `fn` gives a coroutine (functions, methods, partials, `async __call__`)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - the method, not callability
    return call is not None and inspect.iscoroutinefunction(call)

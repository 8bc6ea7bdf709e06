"""`RunSpec`: what one sample asks of an agent source, and the per-sample call's type."""

from __future__ import annotations

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
    """What one sample asks of the agent source."""

    input: Input
    deps: Any = None
    max_turns: int | None = None
    output_type: Any = None
    model: ModelLike | None = None


SampleRunner = Callable[[RunSpec], Awaitable[RunResult]]
"""Runs one sample of a case and returns its `RunResult`."""

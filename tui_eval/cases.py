"""`Case`: one input, the checks its answers must meet, and how many times to run it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tui_eval.agents.messages import Message
from tui_eval.agents.providers import ModelLike
from tui_eval.checks.base import Check

NAME_LIMIT = 200


def name_from_input(input: str | Sequence[Message]) -> str:
    """A one-line form of the input, used as the default case name."""
    if isinstance(input, str):
        text = input
    else:
        users = [m.content for m in input if m.role == "user" and m.content]
        text = users[-1] if users else ""
    line = " ".join(text.split())
    return line if len(line) <= NAME_LIMIT else line[: NAME_LIMIT - 1] + "…"


@dataclass(eq=False)
class Case:
    """One evaluation case.

    Example:
        >>> Case("Capital of France?", checks=[contains("Paris")], samples=4, pass_threshold=0.75)
        Case('Capital of France?', samples=4)

    Attributes:
        input: a string, or a list of `Message` for a conversation.
        checks: every sample must meet all of them to pass.
        name: the report label and the key `compare()` matches on; defaults to the input.
        samples: run the case this many times, to measure its variance.
        pass_threshold: the fraction of passing samples the case needs to pass.
        context: passed to the run as its deps.
        output_type: a per-case structured output type (None: the agent's own).
        max_turns: the most model responses a run may take.
        model: run this case with another model (a provider, spec string or factory);
            the agent is cloned per sample.
        timeout: seconds of wall time per sample; a sample past it is a `timeout`.
        metadata: carried unchanged into the results.
        expected: the expected answer, for evaluators and checks that read it.
        expected_tools: the expected tool names, likewise.
    """

    input: str | list[Message]
    checks: Sequence[Check] = ()
    name: str | None = None
    samples: int = 1
    pass_threshold: float = 1.0
    context: Any = None
    output_type: Any = None
    max_turns: int = 50
    model: ModelLike | None = None
    timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    expected: Any = None
    expected_tools: list[str] | None = None

    def __post_init__(self) -> None:
        if self.name is None:
            self.name = name_from_input(self.input)
        if not isinstance(self.samples, int) or self.samples < 1:
            raise ValueError(
                f"case {self.name!r}: samples must be a positive integer, got {self.samples!r}"
            )
        if not 0.0 <= self.pass_threshold <= 1.0:
            raise ValueError(
                f"case {self.name!r}: pass_threshold must be within 0..1, got {self.pass_threshold!r}"
            )
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(
                f"case {self.name!r}: timeout must be positive seconds, got {self.timeout!r}"
            )
        self.checks = list(self.checks)

    def __repr__(self) -> str:
        return f"Case({self.name!r}, samples={self.samples})"

    @property
    def label(self) -> str:
        """The case's name (always set after construction)."""
        return self.name or ""

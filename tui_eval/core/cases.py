"""`Case`: one input, the checks its answers must meet, and how many times to run it."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tui_eval.agents.messages import Message, is_conversation
from tui_eval.agents.providers import ModelLike
from tui_eval.agents.users import ScriptedUser, User
from tui_eval.checks.base import Check
from tui_eval.checks.judge import name_unnamed_judges
from tui_eval.util.text import value_text

NAME_LIMIT = 200


DEFAULT_MAX_TURNS = 50
"""The agent's own turn limit when neither the case nor the agent sets one."""


def name_from_input(input: str | Sequence[Message] | Any) -> str:
    """A one-line form of the input, used as the default case name."""
    if isinstance(input, str):
        text = input
    elif is_conversation(input):
        users = [m.content for m in input if m.role == "user" and m.content]
        text = users[-1] if users else ""
    else:
        text = value_text(input)
    line = " ".join(text.split())
    return line if len(line) <= NAME_LIMIT else line[: NAME_LIMIT - 1] + "…"


@dataclass(eq=False)
class Case:
    """One evaluation case.

    Example:
        >>> Case("Capital of France?", checks=[contains("Paris")], samples=4, pass_threshold=0.75)
        Case('Capital of France?', samples=4)

    Attributes:
        input: a string, a list of `Message` for a conversation, or a structured value
            (a plain-function agent receives it unchanged, an `Agent` sends it as JSON).
        checks: every sample must meet all of them to pass.
        name: the report label and the key `compare()` matches on; defaults to the input.
        samples: run the case this many times, to measure its variance.
        pass_threshold: the fraction of passing samples the case needs to pass.
        context: passed to the run as its deps.
        output_type: a per-case structured output type (None: the agent's own).
        max_turns: the most model responses a run may take (None: the agent's own limit).
        model: run this case with another model; the agent is cloned per sample.
        timeout: seconds of wall time per sample; a sample past it is a `timeout`.
        metadata: carried unchanged into the results.
        expected: the expected answer, for evaluators and checks that read it.
        expected_tools: the expected tool names, likewise.
        user: a `SimulatedUser` or `ScriptedUser` that converses with the agent; `input`
            is then its first message (None: the user opens).
        state: the environment state the agent's tools read and change (a dict, a pydantic
            model or an SQLite path), copied fresh for every sample.
    """

    input: str | list[Message] | Any = None
    checks: Sequence[Check] = ()
    name: str | None = None
    samples: int = 1
    pass_threshold: float = 1.0
    context: Any = None
    output_type: Any = None
    max_turns: int | None = None
    model: ModelLike | None = None
    timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    expected: Any = None
    expected_tools: list[str] | None = None
    user: User | None = None
    state: Any = None

    def __post_init__(self) -> None:
        if self.user is not None and not isinstance(self.user, User):
            if callable(self.user) or isinstance(self.user, (list, tuple)):
                self.user = ScriptedUser(self.user)
            else:
                raise TypeError(
                    f"case {self.name or name_from_input(self.input)!r}: user must be a "
                    f"SimulatedUser, a ScriptedUser, a list of lines or a function, not "
                    f"{type(self.user).__name__}"
                )
        if self.name is None:
            if self.input is None and self.user is not None:
                self.name = name_from_input(self.user.opening_line())
            else:
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
        # Two unnamed judges of one case would be one check in reports and labels.
        self.checks = name_unnamed_judges(self.checks)

    def __repr__(self) -> str:
        return f"Case({self.name!r}, samples={self.samples})"

    @property
    def label(self) -> str:
        """The case's name (always set after construction)."""
        return self.name or ""


def fingerprint(case: Case) -> str:
    """A short, stable hash of what defines a case (not its name, model or metadata): the
    diff lists a case whose fingerprint changed as "definition changed"."""
    definition = {
        "input": _describe(case.input),
        "checks": [_describe(check) for check in case.checks],
        "expected": _describe(case.expected),
        "expected_tools": _describe(case.expected_tools),
        "pass_threshold": case.pass_threshold,
        "samples": case.samples,
        # An unset limit hashes as the old default, so existing baselines stay comparable.
        "max_turns": DEFAULT_MAX_TURNS if case.max_turns is None else case.max_turns,
        "output_type": _describe(case.output_type),
    }
    if case.user is not None:  # cases without one keep their fingerprints
        definition["user"] = _describe(case.user)
    if case.state is not None:
        definition["state"] = _describe(case.state)
    encoded = json.dumps(definition, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def _describe(value: Any, depth: int = 0) -> Any:
    """A deterministic, JSON-able description of a value (no memory addresses)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if depth > 5:
        return "…"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_describe(v, depth + 1) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, dict):
        return {str(k): _describe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, type):
        return f"type:{value.__module__}.{value.__qualname__}"
    if isinstance(value, re.Pattern):
        return f"re:{value.pattern}:{value.flags}"
    code = getattr(value, "__code__", None)
    if code is not None:  # a function, lambda or method: its name and its compiled body
        body = hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()[:12]
        return f"fn:{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}:{body}"
    fields = getattr(value, "__dict__", None)
    if fields is None:
        slots = [s for klass in type(value).__mro__ for s in getattr(klass, "__slots__", ())]
        fields = {s: getattr(value, s) for s in slots if hasattr(value, s)}
    public = {
        k: _describe(v, depth + 1) for k, v in sorted(fields.items()) if not k.startswith("_")
    }
    return {"type": f"{type(value).__module__}.{type(value).__qualname__}", **public}

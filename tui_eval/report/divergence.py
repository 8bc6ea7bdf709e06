"""Where two samples of one case part ways: the closest passing sample to a failing one,
and the first tool call, output line or turn at which they differ."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest

from tui_eval.agents.messages import Conversation, ToolCall, Turn
from tui_eval.core.results import SampleResult
from tui_eval.util.text import one_line, value_text


def trajectory_lines(sample: SampleResult) -> list[str]:
    """A sample's tool calls as lines: `add(a=2, b=3) → 5` (or `… ✗ error`)."""
    if sample.run is None:
        return []
    return [_call_line(call) for call in sample.run.tool_calls]


def _call_line(call: ToolCall) -> str:
    arguments = ", ".join(f"{k}={one_line(v, 40)}" for k, v in call.arguments.items())
    outcome = (
        f"✗ {one_line(call.error, 80)}"
        if call.error is not None
        else f"→ {one_line(call.result, 80)}"
    )
    return f"{call.name}({arguments}) {outcome}"


def output_lines(sample: SampleResult) -> list[str]:
    """A sample's output as lines (structured output pretty-printed)."""
    return value_text(sample.output, pretty=True).splitlines() if sample.run is not None else []


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    """The first place two samples differ: `where` (`conversation`, `trajectory`, `output`;
    None: nowhere), the `line` (or turn) there, and a `description`."""

    where: str | None
    line: int
    description: str


def first_divergence(left: SampleResult, right: SampleResult) -> Divergence:
    """The first differing tool call, else output line (for conversations: turn)."""
    left_talk = left.run.conversation if left.run is not None else None
    right_talk = right.run.conversation if right.run is not None else None
    if left_talk is not None and right_talk is not None:
        return first_differing_turn(left_talk, right_talk)
    calls = _calls_differ(
        left.run.tool_calls if left.run is not None else [],
        right.run.tool_calls if right.run is not None else [],
    )
    if calls is not None:
        return Divergence(where="trajectory", line=calls[0], description=calls[1])
    for index, (a_line, b_line) in enumerate(zip_longest(output_lines(left), output_lines(right))):
        if a_line != b_line:
            return Divergence(
                where="output",
                line=index,
                description=f"output line {index + 1}: {_quote(a_line)} vs {_quote(b_line)}",
            )
    return Divergence(where=None, line=0, description="same tool calls and output")


def first_differing_turn(left: Conversation, right: Conversation) -> Divergence:
    """The first turn at which two conversations differ, and how: what happened before how
    a reply was worded, which differs on every sample and would hide the real turn."""
    pairs = list(zip(left.turns, right.turns, strict=False))
    for index, (a, b) in enumerate(pairs):
        what = _action_difference(a, b)
        if what:
            return _at_turn(index, what)
    for index, (a, b) in enumerate(pairs):
        if (a.error or a.reply) != (b.error or b.reply):
            said_a = f"raised {a.error}" if a.error else a.reply
            said_b = f"raised {b.error}" if b.error else b.reply
            return _at_turn(index, f"the agent replied {_quote(said_a)} vs {_quote(said_b)}")
    if len(left.turns) != len(right.turns):
        index = len(pairs)
        longer, shorter = ("failing", right) if len(left.turns) > index else ("passing", left)
        return _at_turn(
            index, f"only the {longer} sample has it (the other ended by {shorter.ended_by})"
        )
    return Divergence(where=None, line=0, description="same turns, tool calls and replies")


def _action_difference(a: Turn, b: Turn) -> str:
    """What differs in what happened on two turns ("" if nothing)."""
    if a.user != b.user:
        return f"the user said {_quote(a.user)} vs {_quote(b.user)}"
    calls = _calls_differ(a.tool_calls, b.tool_calls)
    if calls is not None:
        return calls[1]
    changes = zip_longest(map(str, a.changes), map(str, b.changes), fillvalue="no change")
    for x_change, y_change in changes:
        if x_change != y_change:
            return f"state {one_line(x_change, 80)} vs {one_line(y_change, 80)}"
    return ""


def _calls_differ(left: Sequence[ToolCall], right: Sequence[ToolCall]) -> tuple[int, str] | None:
    """The index of the first differing tool call (name or arguments) and how, or None."""
    for index, (a, b) in enumerate(zip_longest(left, right)):
        if a is None or b is None or a.name != b.name or a.arguments != b.arguments:
            return index, f"tool call {index + 1}: {_call_difference(a, b)}"
    return None


def _at_turn(index: int, what: str) -> Divergence:
    return Divergence(where="conversation", line=index, description=f"turn {index + 1}: {what}")


def _call_difference(a: ToolCall | None, b: ToolCall | None) -> str:
    if a is None or b is None:
        present = a or b
        assert present is not None
        side = "only the failing sample" if a is not None else "only the passing sample"
        return f"{present.name}(…) is made by {side}"
    if a.name != b.name:
        return f"{a.name} vs {b.name}"
    changed = sorted(
        k
        for k in a.arguments.keys() | b.arguments.keys()
        if a.arguments.get(k) != b.arguments.get(k)
    )
    parts = [
        f"{k}={one_line(a.arguments.get(k), 30)} vs {one_line(b.arguments.get(k), 30)}"
        for k in changed
    ]
    return f"{a.name}: " + "; ".join(parts)


def _quote(line: str | None) -> str:
    return "(none)" if line is None else repr(one_line(line, 60))


def closest_passing(failing: SampleResult, samples: Sequence[SampleResult]) -> SampleResult | None:
    """The passing sample most like `failing`: the same tool calls for longest, then the
    most similar trajectory and output text."""

    def likeness(candidate: SampleResult) -> tuple[int, float]:
        a = failing.run.tool_calls if failing.run is not None else []
        b = candidate.run.tool_calls if candidate.run is not None else []
        differ = _calls_differ(a, b)
        shared = len(a) if differ is None else differ[0]
        text_a = "\n".join(trajectory_lines(failing) + output_lines(failing))
        text_b = "\n".join(trajectory_lines(candidate) + output_lines(candidate))
        return shared, difflib.SequenceMatcher(None, text_a, text_b).ratio()

    passing = [s for s in samples if s.passed and s is not failing]
    return max(passing, key=likeness) if passing else None

"""Checks of conversations and environment states: `state_equals`, `state_matches`,
`goal_reached` (a judge over the transcript), and per-turn checks (`every_turn`, `at_turn`).
Every other check applies to a conversation too, its last reply as the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic

from tui_eval.agents.messages import Message, RunResult, StateChange, Turn, state_value_text
from tui_eval.agents.providers import ModelLike
from tui_eval.agents.state import differences, snapshot
from tui_eval.checks.base import (
    Check,
    CheckContext,
    CheckResult,
    Declared,
    check_name,
    fail,
    ok,
    run_check,
)
from tui_eval.checks.combinators import spent_usage
from tui_eval.checks.judge import MAX_JUDGED_CHARS, Aggregate, llm_judge
from tui_eval.util.text import one_line, value_text

MAX_LISTED = 8
"""How many differences a failing state check names."""


NO_STATE = "the run has no environment state (give the case one: Case(state=...))"


@dataclass(eq=False, slots=True)
class state_equals:
    """The environment state after the run equals `expected`, compared by value: numbers by
    value (`25 == 25.0`), paths in `ignore` skipped. A failure lists the differences.

    `expected` is plain data, a pydantic model or a dataclass; `ignore` holds paths such as
    `"orders.*.updated_at"` or `"**.timestamp"` (`*` one key or index, `**` any number)."""

    expected: Any
    ignore: Sequence[str] = ()
    name: str = "state_equals"

    def differences(self, state: Any) -> list[StateChange]:
        """Where `state` (plain data) differs from the expected one (`before`: expected)."""
        return differences(snapshot(self.expected), state, ignore=self.ignore)

    def __call__(self, run: RunResult) -> CheckResult:
        if run.state is None:
            return fail(self.name, NO_STATE)
        found = self.differences(run.state)
        if not found:
            return ok(self.name)
        listed = "; ".join(
            f"{c.path}: expected {state_value_text(c.before)}, got {state_value_text(c.after)}"
            if c.kind == "changed"
            else (
                f"{c.path}: not expected, got {state_value_text(c.after)}"
                if c.kind == "added"
                else f"{c.path}: expected {state_value_text(c.before)}, missing"
            )
            for c in found[:MAX_LISTED]
        )
        more = f" (and {len(found) - MAX_LISTED} more)" if len(found) > MAX_LISTED else ""
        return fail(self.name, f"{len(found)} difference(s): {listed}{more}")


@dataclass(eq=False, slots=True)
class state_matches:
    """`fn(state)` holds for the environment state after the run (as plain data): it returns
    True/False, a reason the check fails with, or a `CheckResult`."""

    fn: Annotated[Callable[[Any], Any], Declared("str")]
    name: str = "state_matches"

    def __call__(self, run: RunResult) -> CheckResult:
        if run.state is None:
            return fail(self.name, NO_STATE)
        verdict = self.fn(run.state)
        if isinstance(verdict, CheckResult):
            return verdict
        if isinstance(verdict, str):
            return fail(self.name, verdict)
        if verdict:
            return ok(self.name)
        what = getattr(self.fn, "__name__", "the test")
        state = one_line(value_text(run.state), 200)
        return fail(self.name, f"{what} is false for the final state {state}")


GOAL_RUBRIC = """\
Read the whole conversation between a user and an AI agent, with the agent's tool calls.
Decide whether the user's goal was reached by the end of it: {goal}
Score 1.0 when it was fully reached, 0.0 when it was not; judge by what the agent did
(its tool calls and their results), not by what it claimed."""


class goal_reached(llm_judge):
    """A judge over the whole transcript: was the user's goal reached?

    `goal` is in plain words; the other arguments are `llm_judge`'s."""

    def __init__(
        self,
        goal: str,
        *,
        model: Annotated[
            ModelLike | Sequence[ModelLike] | None, Declared("str | list[str] | None")
        ] = None,
        threshold: Annotated[float, pydantic.Field(ge=0, le=1)] = 0.7,
        aggregate: Aggregate = "majority",
        name: str = "goal_reached",
    ) -> None:
        super().__init__(
            GOAL_RUBRIC.format(goal=goal),
            model=model,
            threshold=threshold,
            aggregate=aggregate,
            name=name,
        )
        self.goal = goal

    def __repr__(self) -> str:
        return f"goal_reached({self.goal!r})"

    def prompt(self, run: RunResult) -> str:
        transcript = (
            run.conversation.transcript()
            if run.conversation is not None
            else "\n".join(f"{m.role}: {m.content or ''}" for m in run.messages)
        )
        if len(transcript) > MAX_JUDGED_CHARS:
            cut = len(transcript) - MAX_JUDGED_CHARS
            transcript = f"[… {cut:,} earlier characters cut]\n" + transcript[-MAX_JUDGED_CHARS:]
        parts = [
            f"<rubric>\n{self.rubric}\n</rubric>",
            f"<transcript>\n{transcript}\n</transcript>",
        ]
        if run.state is not None:
            state = value_text(run.state)
            parts.append(f"<final_state>\n{state[:MAX_JUDGED_CHARS]}\n</final_state>")
        return "\n\n".join(parts)


def turn_run(run: RunResult, turn: Turn) -> RunResult:
    """One turn as a run of its own: its reply, tool calls, usage, and the messages so far."""
    messages: list[Message] = []
    assert run.conversation is not None
    users_seen = 0
    for message in run.messages:
        if message.role == "user":
            users_seen += 1
            if users_seen > turn.index:
                break
        messages.append(message)
    return RunResult(
        output=turn.reply,
        messages=messages,
        tool_calls=list(turn.tool_calls),
        usage=turn.usage,
        turns=1,
        latency_ms=turn.latency_ms,
        stop_reason=turn.stop_reason,
        model=run.model,
        state=run.state,
    )


class every_turn:
    """`check` holds for every turn of a conversation (each turn's reply, tool calls and
    usage as a run of its own); the failure names the first turn that broke it. On a
    single-input run it checks the run."""

    is_async = True
    takes_context = True

    def __init__(self, check: Check, *, name: str = "") -> None:
        self.check = check
        self.name = name or f"every_turn({check_name(check)})"

    def __repr__(self) -> str:
        return f"every_turn({self.check!r})"

    async def __call__(self, run: RunResult, context: CheckContext | None = None) -> CheckResult:
        if run.conversation is None:
            return _named(await run_check(self.check, run, context), self.name, "")
        spent: list[CheckResult] = []
        for turn in run.conversation.turns:
            result = await run_check(self.check, turn_run(run, turn), context)
            spent.append(result)
            if not result.passed:
                return _named(result, self.name, f"turn {turn.index}: ", spent)
        return CheckResult(self.name, True, 1.0, "", spent_usage(spent))


class at_turn:
    """`check` holds for turn `turn` (from 1) of a conversation; fails when the
    conversation ended before it."""

    is_async = True
    takes_context = True

    def __init__(self, turn: int, check: Check, *, name: str = "") -> None:
        if not isinstance(turn, int) or turn < 1:
            raise ValueError(f"at_turn: turns count from 1, got {turn!r}")
        self.turn = turn
        self.check = check
        self.name = name or f"at_turn({turn}, {check_name(check)})"

    def __repr__(self) -> str:
        return f"at_turn({self.turn}, {self.check!r})"

    async def __call__(self, run: RunResult, context: CheckContext | None = None) -> CheckResult:
        turns = run.conversation.turns if run.conversation is not None else []
        if len(turns) < self.turn:
            return fail(self.name, f"the conversation ended after {len(turns)} turn(s)")
        turn = turns[self.turn - 1]
        result = await run_check(self.check, turn_run(run, turn), context)
        return _named(result, self.name, f"turn {turn.index}: ")


def _named(
    result: CheckResult, name: str, where: str, spent: Sequence[CheckResult] = ()
) -> CheckResult:
    """A sub-check's result under the per-turn check's name, saying which turn failed."""
    if result.passed:
        return CheckResult(name, True, result.score, "", result.usage)
    reason = f"{where}{result.name}: {result.reason}" if result.reason else f"{where}{result.name}"
    usage = spent_usage(spent) if spent else result.usage
    return CheckResult(name, False, result.score, reason, usage, result.threshold)

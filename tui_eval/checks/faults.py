"""Who failed a conversation: the user (simulator), the agent, or the environment.

Rules decide first, the earliest critical turn winning. The environment: a tool that raised
(and was not retried successfully), a model failing after retries, a state that could not be
copied. The user: a message breaking its `rules`, an empty message, its script or model
raising, a stop while the agent awaited its answer (a question, and no state changed). The
agent: an invalid or unknown tool call, or raising. Else a reviewer model reads the
transcript (`User.reviewer`, else `$TUI_EVAL_JUDGE_MODEL`); without one the agent is blamed
(`by="default"`). A user's fault leaves the sample out of pass rates unless
`RunSettings.count_user_faults`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pydantic

from tui_eval.agents.agent import AgentRunError
from tui_eval.agents.conversation import UserSimulatorError
from tui_eval.agents.messages import RunResult, Turn, Usage
from tui_eval.agents.providers import ModelLike, resolve_model
from tui_eval.agents.providers.base import ProviderError
from tui_eval.agents.state import StateError, path_segments
from tui_eval.agents.users import SimulatedUser, User
from tui_eval.checks.base import CheckResult
from tui_eval.checks.conversations import state_equals
from tui_eval.checks.judge import JUDGE_MODEL_ENV, MAX_JUDGED_CHARS, ask_judge
from tui_eval.util.text import one_line

Party = Literal["user", "agent", "environment"]
PARTIES: tuple[Party, ...] = ("user", "agent", "environment")

FAULT_CHECK = "fault"
"""The check name fault labels carry in the label queue and in calibration."""

_AGENT_CALL_ERRORS = ("invalid arguments", "unknown tool")


@dataclass(slots=True)
class Fault:
    """Who failed a conversation (`party`), at which critical `turn` (from 1; None: not
    placed), why, and what decided it (`by`: `"rule"`, `"reviewer"` or `"default"`)."""

    party: str
    turn: int | None = None
    reason: str = ""
    by: str = "rule"
    usage: Usage | None = None

    def __str__(self) -> str:
        where = f" at turn {self.turn}" if self.turn is not None else ""
        return f"{self.party}{where}: {self.reason}"


class FaultVerdict(pydantic.BaseModel):
    """The reviewer's answer."""

    model_config = pydantic.ConfigDict(extra="ignore")

    fault: Party
    turn: int | None = None
    reason: str


REVIEWER_INSTRUCTIONS = """\
You review a failed conversation between a simulated user and an AI agent, to decide whose
fault the failure is:
- "user": the user simulator broke its instructions (said things it was not told, gave
  wrong facts, changed its goal, ended before the agent could finish, or was implausibly
  cooperative or obstructive);
- "agent": the agent did something wrong (a wrong tool or argument, acting without
  confirmation, a false claim, not finishing the task it could finish);
- "environment": a tool or the infrastructure failed (errors, wrong data from a tool).
Name the first turn where things went wrong.

Reply with only a JSON object:
{"fault": "user" | "agent" | "environment", "turn": <turn number>, "reason": "<one sentence>"}
"""


def rule_fault(
    run: RunResult | None,
    checks: Sequence[CheckResult],
    error: BaseException | None = None,
    *,
    status: str = "failed",
) -> Fault | None:
    """The fault the rules find (None: they do not decide)."""
    conversation = run.conversation if run is not None else None
    last = len(conversation.turns) if conversation is not None and conversation.turns else None
    if error is not None:
        return _error_fault(error, last)
    if status == "timeout":
        return Fault("agent", last, "the sample ran past its timeout")
    if run is None or conversation is None:
        return None
    found: list[tuple[int, int, Fault]] = []  # (turn, tie-break, fault)
    for turn in conversation.turns:
        for position, call in enumerate(turn.tool_calls):
            if call.error is None:
                continue
            if call.error.startswith(_AGENT_CALL_ERRORS):
                reason = f"the agent called {call.name}: {one_line(call.error, 160)}"
                found.append((turn.index, 2, Fault("agent", turn.index, reason)))
            elif not _recovered(conversation.turns, turn.index, position, call.name):
                reason = f"the tool {call.name} failed: {one_line(call.error, 160)}"
                found.append((turn.index, 0, Fault("environment", turn.index, reason)))
    if conversation.broken_rule_turn is not None:
        turn_index = conversation.broken_rule_turn
        found.append((turn_index, 1, Fault("user", turn_index, conversation.broken_rule)))
    if conversation.user_error:
        turn_index = len(conversation.turns) + 1
        found.append((turn_index, 1, Fault("user", turn_index, conversation.user_error)))
    elif conversation.ended_by == "user" and conversation.turns:
        final = conversation.turns[-1]
        # A turn that changed the state has acted: its "anything else?" does not make the
        # user the cause of what it did.
        if final.reply.rstrip().endswith("?") and not final.changes:
            reason = (
                "the user ended the conversation while the agent was waiting for its answer "
                f"({one_line(final.reply, 100)!r})"
            )
            found.append((final.index + 1, 1, Fault("user", final.index, reason)))
    if not found:
        return None
    return min(found, key=lambda item: (item[0], item[1]))[2]


def _error_fault(error: BaseException, last: int | None) -> Fault:
    if isinstance(error, UserSimulatorError):
        cause = error.__cause__
        if isinstance(cause, ProviderError):
            return Fault(
                "environment", last, f"the user's model failed: {one_line(str(cause), 160)}"
            )
        return Fault("user", last, one_line(str(error), 200))
    if isinstance(error, (ProviderError, StateError)):
        return Fault("environment", last, f"{type(error).__name__}: {one_line(str(error), 160)}")
    return Fault(
        "agent", last, f"the agent raised {type(error).__name__}: {one_line(str(error), 160)}"
    )


def _recovered(turns: Sequence[Turn], turn_index: int, position: int, name: str) -> bool:
    """Whether a later call of the same tool succeeded (the agent retried past the error)."""
    return any(
        call.name == name and call.error is None
        for turn in turns
        for at, call in enumerate(turn.tool_calls)
        if (turn.index, at) > (turn_index, position)
    )


def default_fault(
    run: RunResult | None,
    checks: Sequence[CheckResult],
    expected_states: Sequence[state_equals] = (),
) -> Fault:
    """The agent's fault, at the first turn changing a path that ends unlike `expected_states`
    (else the last turn)."""
    conversation = run.conversation if run is not None else None
    failing = [c for c in checks if not c.passed]
    reason = (
        f"no rule blamed the user or the environment; {failing[0].name}: "
        f"{one_line(failing[0].reason, 160)}"
        if failing
        else "no rule blamed the user or the environment"
    )
    if run is None or conversation is None or not conversation.turns:
        return Fault("agent", None, reason, "default")
    turn_index = conversation.turns[-1].index
    paths = [
        path_segments(change.path)
        for check in (expected_states if run.state is not None else ())
        for change in check.differences(run.state)
    ]
    for turn in conversation.turns:
        if any(path_segments(c.path)[: len(p)] == p for c in turn.changes for p in paths):
            turn_index = turn.index
            break
    return Fault("agent", turn_index, reason, "default")


def reviewer_model(user: User) -> ModelLike | None:
    """Who reviews a failure the rules do not decide (None: nobody; the agent's fault)."""
    if user.reviewer is not None:
        return user.reviewer
    if isinstance(user, SimulatedUser) and user.model is not None:
        return user.model
    return os.environ.get(JUDGE_MODEL_ENV) or None


def review_prompt(run: RunResult, checks: Sequence[CheckResult], user: User) -> str:
    """What the reviewer reads: the user's instructions, the transcript, the failures."""
    parts: list[str] = []
    if isinstance(user, SimulatedUser):
        parts.append(f"<user_instructions>\n{user.instructions}\n</user_instructions>")
    transcript = run.conversation.transcript() if run.conversation is not None else ""
    if len(transcript) > MAX_JUDGED_CHARS:
        transcript = "[… earlier turns cut]\n" + transcript[-MAX_JUDGED_CHARS:]
    parts.append(f"<transcript>\n{transcript}\n</transcript>")
    failures = [f"- {c.name}: {one_line(c.reason, 300)}" for c in checks if not c.passed]
    if failures:
        parts.append("<failed_checks>\n" + "\n".join(failures) + "\n</failed_checks>")
    return "\n\n".join(parts)


async def review_fault(
    model: ModelLike, run: RunResult, checks: Sequence[CheckResult], user: User
) -> Fault | None:
    """The reviewer's verdict (None when its reply was not a valid verdict)."""
    prompt = review_prompt(run, checks, user)
    try:
        result = await ask_judge(
            resolve_model(model), REVIEWER_INSTRUCTIONS, FaultVerdict, "fault reviewer", prompt
        )
    except AgentRunError:
        return None
    verdict: FaultVerdict = result.output
    turns = len(run.conversation.turns) if run.conversation is not None else 0
    turn = verdict.turn if verdict.turn is not None and 1 <= verdict.turn <= turns else None
    return Fault(verdict.fault, turn, verdict.reason, "reviewer", result.usage)


async def attribute_fault(
    run: RunResult | None,
    checks: Sequence[CheckResult],
    user: User,
    error: BaseException | None = None,
    *,
    status: str = "failed",
    expected_states: Sequence[state_equals] = (),
) -> Fault:
    """Who failed this conversation: the rules, then the reviewer, then the agent."""
    found = rule_fault(run, checks, error, status=status)
    if found is not None:
        return found
    model = reviewer_model(user)
    note = ""
    if model is not None and run is not None and run.conversation is not None:
        try:
            reviewed = await review_fault(model, run, checks, user)
        except Exception as exc:  # the reviewer's API failed: the rules' default stands
            reviewed = None
            note = f" (the reviewer failed: {type(exc).__name__}: {one_line(str(exc), 120)})"
        else:
            note = "" if reviewed is not None else " (the reviewer gave no valid verdict)"
        if reviewed is not None:
            return reviewed
    fault = default_fault(run, checks, expected_states)
    fault.reason += note
    return fault

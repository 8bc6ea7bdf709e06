"""`converse`: one conversation between a user and the agent, turn by turn, as one
`RunResult` with the turns in `conversation`."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

import anyio

from tui_eval.agents.http.context import current_sample
from tui_eval.agents.messages import (
    Conversation,
    Message,
    RunResult,
    Turn,
    Usage,
    input_text,
    is_conversation,
)
from tui_eval.agents.run_spec import AgentCall, RunSpec
from tui_eval.agents.sources import bind_conversation
from tui_eval.agents.state import Environment, differences
from tui_eval.agents.users import User, UserView
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import value_text


class UserSimulatorError(TuiEvalError):
    """The user's side of a conversation failed; `partial` is the conversation so far."""

    def __init__(self, message: str, partial: RunResult) -> None:
        super().__init__(message)
        self.partial = partial


def keeps_memory(call: AgentCall) -> bool:
    """Whether an agent call keeps its own memory: it gets each new message and a `thread`."""
    return bool(getattr(call, "keeps_memory", False))


async def converse(
    call: AgentCall,
    spec: RunSpec,
    user: User,
    environment: Environment | None = None,
) -> RunResult:
    """Run one conversation of `user` with the agent `call`; `spec.input` opens it (None: the
    user does; a list of messages: the history it continues). It ends on the user's stop,
    the turn limit, a hand-off tool, `stop_when`, or the agent raising.

    Raises:
        UserSimulatorError: the user's model or script raised (`partial` holds the turns).
        Exception: what the agent raised, with `partial` set to the conversation so far.
    """
    start = time.perf_counter()
    bound = await bind_conversation(call, spec)
    if bound is not call:  # the bound agent already runs with the case's model
        call, spec = bound, replace(spec, model=None)
    thread = f"tui-eval-{uuid.uuid4().hex[:12]}" if keeps_memory(call) else None
    try:
        return await _converse(call, spec, user, environment, thread, start)
    finally:
        forget = getattr(call, "forget_thread", None)
        if thread is not None and forget is not None:
            with anyio.CancelScope(shield=True):
                await forget(thread)


async def _converse(
    call: AgentCall,
    spec: RunSpec,
    user: User,
    environment: Environment | None,
    thread: str | None,
    start: float,
) -> RunResult:
    memory = thread is not None
    history: list[Message] = []
    opening: str | None = None
    if is_conversation(spec.input):
        history = list(cast(Sequence[Message], spec.input))
        if history[-1].role == "user":
            opening = history.pop().content or ""
    elif spec.input is not None and spec.input != "":
        opening = spec.input if isinstance(spec.input, str) else input_text(spec.input)
    conversation = Conversation(user=user.describe(), max_turns=user.max_turns)
    total = RunResult(messages=history, conversation=conversation)
    state = environment.snapshot() if environment is not None else None
    asked = 0
    reply: str | None = None

    def finish(ended_by: str) -> RunResult:
        conversation.ended_by = ended_by
        total.latency_ms = (time.perf_counter() - start) * 1000
        total.state = state
        return total

    while True:
        index = len(conversation.turns) + 1
        if index > user.max_turns:
            return finish("max_turns")
        user_usage = Usage()
        if index == 1 and opening is not None:
            text = opening
        else:
            view = UserView(index, asked, reply, list(history), state)
            try:
                message = await user.next(view)
            except Exception as exc:
                failure = UserSimulatorError(
                    f"the user ({user.describe()}) failed at turn {index}: "
                    f"{type(exc).__name__}: {exc}",
                    finish("error"),
                )
                raise failure from exc
            asked += 1
            user_usage = message.usage
            conversation.user_usage = conversation.user_usage + message.usage
            if message.cost is not None:
                conversation.user_cost = (conversation.user_cost or 0.0) + message.cost
            if message.text is None:
                conversation.closing = message.closing
                return finish("user")
            text = message.text
            if not text.strip():
                conversation.user_error = f"the user wrote an empty message at turn {index}"
                return finish("user")
            broken = user.broken_rule(text)
            if broken is not None and conversation.broken_rule_turn is None:
                conversation.broken_rule, conversation.broken_rule_turn = broken, index
        history.append(Message("user", text))
        turn = Turn(index, text, user_usage=user_usage)
        conversation.turns.append(turn)
        # An agent with memory is sent the history once, at its first turn (a case's
        # conversation input); then each new message alone.
        sent = [Message("user", text)] if memory and index > 1 else list(history)
        run = await _agent_turn(call, replace(spec, input=sent, thread=thread), turn, total)
        history.extend(_new_messages(run, sent))
        reply = turn.reply
        if environment is not None:
            now = environment.snapshot()
            if now != state:  # most turns only read: compared in C first
                turn.changes = differences(state, now)
            state = now
        if any(user.hands_off(c.name) for c in turn.tool_calls):
            return finish("handoff")
        if user.stop_when is not None and user.stop_when(state):
            return finish("state")


async def _agent_turn(call: AgentCall, spec: RunSpec, turn: Turn, total: RunResult) -> RunResult:
    """The agent's answer to one turn, recorded on `turn` and added to `total`."""
    sample = current_sample()
    if sample is not None:
        sample.meter.new_turn()
    before = sample.meter.usage if sample is not None else None
    spent_before = sample.meter.cost if sample is not None else 0.0
    started = time.perf_counter()
    try:
        run = await call(spec)
    except Exception as exc:
        partial = getattr(exc, "partial", None)
        if isinstance(partial, RunResult):
            _add(total, turn, partial, before)
        turn.error = f"{type(exc).__name__}: {exc}"
        turn.latency_ms = (time.perf_counter() - started) * 1000
        assert total.conversation is not None
        total.conversation.ended_by = "error"
        total.latency_ms = sum(t.latency_ms for t in total.conversation.turns)
        with contextlib.suppress(AttributeError):  # an exception class with slots
            exc.partial = total  # type: ignore[attr-defined]
        raise
    finally:
        if sample is not None and sample.meter.priced:
            turn.cost = sample.meter.cost - spent_before  # what its responses were priced at
    _add(total, turn, run, before)
    turn.latency_ms = run.latency_ms or (time.perf_counter() - started) * 1000
    turn.reply = value_text(run.output) if run.output is not None else ""
    total.output = run.output
    return run


def _add(total: RunResult, turn: Turn, run: RunResult, meter_before: Usage | None) -> None:
    """Count one turn's run in the turn's record and the conversation's totals."""
    usage = run.usage
    if not usage.known and meter_before is not None:
        # A plain function returning text reports no usage; what it requested through
        # `http_client()` during its turn is what it used.
        sample = current_sample()
        if sample is not None and sample.meter.requests > meter_before.requests:
            now = sample.meter.usage
            usage = Usage(
                now.input_tokens - meter_before.input_tokens,
                now.output_tokens - meter_before.output_tokens,
                now.requests - meter_before.requests,
            )
    turn.tool_calls = list(run.tool_calls)
    turn.usage = usage
    turn.stop_reason = run.stop_reason
    total.tool_calls.extend(run.tool_calls)
    total.usage = total.usage + usage
    total.turns += run.turns
    total.retries += run.retries
    total.stop_reason = run.stop_reason
    total.model = run.model or total.model


def _new_messages(run: RunResult, sent: list[Message]) -> list[Message]:
    """The messages the agent added this turn (after what it was sent; else its reply)."""
    messages = [m for m in run.messages if m.role != "system"]
    if len(messages) > len(sent) and all(
        _same(a, b) for a, b in zip(messages[: len(sent)], sent, strict=True)
    ):
        return messages[len(sent) :]
    last = sent[-1]
    for position in range(len(messages) - 1, -1, -1):
        if _same(messages[position], last):
            if position + 1 < len(messages):
                return messages[position + 1 :]
            break
    return [Message("assistant", value_text(run.output), list(run.tool_calls))]


def _same(a: Message, b: Message) -> bool:
    return a.role == b.role and a.content == b.content

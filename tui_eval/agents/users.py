"""The users of conversations (`Case(user=...)`): `ScriptedUser` (fixed lines, or a
function of the conversation: offline) and `SimulatedUser` (a model playing the user)."""

from __future__ import annotations

import fnmatch
import inspect
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tui_eval.agents.http.context import current_sample
from tui_eval.agents.messages import Message, Usage
from tui_eval.agents.providers import ModelLike, resolve_model
from tui_eval.agents.providers.base import ModelSpecError, Provider

STOP = "###STOP###"  # What a simulated user writes to end the conversation (tau-bench's signal).

USER_MODEL_ENV = "TUI_EVAL_USER_MODEL"
"""The simulated user's model when `SimulatedUser(model=...)` is not given."""

DEFAULT_MAX_TURNS = 20  # A conversation's turn limit when its user sets none.

DEFAULT_HANDOFF_TOOLS = ("transfer_to_*",)
"""Tool names (glob patterns) that hand a conversation off to someone else: it ends there."""

USER_INSTRUCTIONS = """\
You are playing a human user who is talking to an AI assistant (the agent). You are NOT the
assistant: never answer as one, never offer help, never invent tool results.

Your instructions as the user:
<instructions>
{instructions}
</instructions>

Rules:
- Write only your next message to the agent, in the first person, in plain text.
- Say only what your instructions say you know; if asked for something you do not know,
  say so. Do not give all your information at once: answer what the agent asks.
- Pursue your goal. Do not agree to things your instructions do not allow.
- When your goal is met, or the agent cannot meet it, or the agent hands you over to a
  human, end the conversation: reply with a short goodbye followed by {stop}
"""

Rule = Callable[[str], "bool | str | None"]
"""A rule a user's message must keep: True or None when it does, else False or the reason."""


@dataclass(frozen=True, slots=True)
class UserView:
    """What a user sees before writing its next message.

    Attributes:
        turn: the number of the turn the message opens (from 1).
        asked: how many messages this user has written before this one.
        reply: the agent's last reply (None before the agent has spoken).
        state: the environment state now, as plain data (None without one).
    """

    turn: int
    asked: int
    reply: str | None
    messages: Sequence[Message]
    state: Any = None


@dataclass(slots=True)
class UserMessage:
    """A user's next message, or its stop.

    Attributes:
        text: the message (None: the user ends the conversation).
        closing: the user's last words when it stopped with some.
    """

    text: str | None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    closing: str = ""


class User:
    """What every user of a conversation has (see `ScriptedUser` and `SimulatedUser`).

    Args:
        max_turns: the most turns (user message and reply) it may take (default 20).
        stop_when: ends the conversation once it returns True for the state after a turn.
        rules: rules each of the user's messages must keep (a broken one blames the user).
        handoff_tools: glob patterns of tools whose call hands the conversation off.
        reviewer: the model that decides who failed when no rule does
            (`tui_eval.checks.faults`; default `$TUI_EVAL_JUDGE_MODEL`).
    """

    def __init__(
        self,
        *,
        max_turns: int | None = None,
        stop_when: Callable[[Any], bool] | None = None,
        rules: Sequence[Rule] = (),
        handoff_tools: Sequence[str] = DEFAULT_HANDOFF_TOOLS,
        reviewer: ModelLike | None = None,
    ) -> None:
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
        self.max_turns = max_turns if max_turns is not None else DEFAULT_MAX_TURNS
        self.stop_when = stop_when
        self.rules = list(rules)
        self.handoff_tools = tuple(handoff_tools)
        self.reviewer = reviewer

    async def next(self, view: UserView) -> UserMessage:
        """The user's next message (or its stop) after what `view` shows."""
        raise NotImplementedError

    def describe(self) -> str:
        """Who plays the user, for the record."""
        return type(self).__name__

    def opening_line(self) -> str:
        """A line that names a conversation the user opens (a case's default name)."""
        return self.describe()

    def hands_off(self, tool_name: str) -> bool:
        """Whether calling `tool_name` hands the conversation off."""
        return any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.handoff_tools)

    def broken_rule(self, text: str) -> str | None:
        """Why `text` breaks one of the user's rules (None: it keeps them all)."""
        for rule in self.rules:
            verdict = rule(text)
            if verdict is False:
                name = getattr(rule, "__name__", "") or type(rule).__name__
                return f"the user's message broke the rule {name!r}"
            if isinstance(verdict, str) and verdict:
                return verdict
        return None


Script = Sequence[str] | Callable[[UserView], "str | Awaitable[str | None] | None"]


class ScriptedUser(User):
    """A user that says fixed lines, or what a function of the conversation returns.

    Example:
        >>> ScriptedUser(lambda view: "yes" if view.reply and "confirm" in view.reply else None)
        ... # doctest: +ELLIPSIS
        ScriptedUser(<function <lambda> at ...>)

    Args:
        script: the lines said after the case's `input` (it ends when they run out); or a
            function (sync or async) of the `UserView` giving the next line, None to stop.
        **options: as `User`.
    """

    def __init__(self, script: Script, **options: Any) -> None:
        super().__init__(**options)
        if isinstance(script, str):
            raise TypeError("ScriptedUser takes a list of lines (or a function), not one string")
        if not callable(script):
            lines = list(script)
            bad = [i for i, line in enumerate(lines) if not isinstance(line, str)]
            if bad:
                raise TypeError(
                    f"ScriptedUser line {bad[0]} is {type(lines[bad[0]]).__name__}, not a string"
                )
            self.script: Script = lines
        else:
            self.script = script

    def __repr__(self) -> str:
        if callable(self.script):
            return f"ScriptedUser({self.script!r})"
        return f"ScriptedUser({len(self.script)} lines)"

    async def next(self, view: UserView) -> UserMessage:
        script = self.script
        if callable(script):
            text = script(view)
            if inspect.isawaitable(text):
                text = await text
            if text is not None and not isinstance(text, str):
                raise TypeError(
                    f"ScriptedUser function returned {type(text).__name__}, not a string or None"
                )
            return UserMessage(text)
        return UserMessage(script[view.asked] if view.asked < len(script) else None)

    def describe(self) -> str:
        return "ScriptedUser"

    def opening_line(self) -> str:
        if not callable(self.script) and self.script:
            return self.script[0]
        return getattr(self.script, "__name__", "ScriptedUser")


class SimulatedUser(User):
    """A model playing the user from its instructions (goal, persona, what it knows). Its
    usage and cost are shown apart from the agent's; it ends by writing `###STOP###`.

    Args:
        model: a provider, spec string or factory (default: `$TUI_EVAL_USER_MODEL`).
        settings: provider settings for its requests (default `{"temperature": 0}`).
        **options: as `User` (by default its own model is the `reviewer`).
    """

    def __init__(
        self,
        instructions: str,
        *,
        model: ModelLike | None = None,
        settings: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(instructions, str) or not instructions.strip():
            raise ValueError("SimulatedUser needs instructions: who the user is and what it wants")
        options.setdefault("reviewer", None)
        super().__init__(**options)
        self.instructions = instructions
        self.model = model
        self.settings = {"temperature": 0} if settings is None else dict(settings)
        self._provider: Provider | None = None

    def __repr__(self) -> str:
        return f"SimulatedUser({self.describe()!r})"

    def opening_line(self) -> str:
        return self.instructions

    def describe(self) -> str:
        model = self.model if self.model is not None else os.environ.get(USER_MODEL_ENV)
        if model is None:
            return "SimulatedUser"
        if isinstance(model, str):
            return model
        if callable(model) and not hasattr(model, "complete"):  # a factory of providers
            return getattr(model, "__qualname__", None) or type(model).__name__
        return str(getattr(model, "name", "") or type(model).__name__)

    def provider(self) -> Provider:
        """The user's model, resolved once (`ModelSpecError` without one)."""
        if self._provider is None:
            model = self.model if self.model is not None else os.environ.get(USER_MODEL_ENV)
            if model is None or model == "":
                raise ModelSpecError(
                    "SimulatedUser needs a model: pass SimulatedUser(..., model=...) or set "
                    f"${USER_MODEL_ENV}"
                )
            if callable(model) and not hasattr(model, "complete"):
                return resolve_model(model)  # a factory: a fresh provider per message
            self._provider = resolve_model(model)
        return self._provider

    def messages(self, view: UserView) -> list[Message]:
        """Its instructions, then the conversation with the roles turned round."""
        prompt = USER_INSTRUCTIONS.format(instructions=self.instructions.strip(), stop=STOP)
        messages = [Message("system", prompt)]
        for message in view.messages:
            if message.role == "user" and message.content:
                messages.append(Message("assistant", message.content))
            elif message.role == "assistant" and message.content:
                messages.append(Message("user", message.content))
        if len(messages) == 1 or messages[-1].role != "user":
            opening = "(The conversation starts. Write your first message to the agent.)"
            messages.append(Message("user", opening))
        return messages

    async def next(self, view: UserView) -> UserMessage:
        sample = current_sample()
        spent_before = sample.meter.cost if sample is not None else 0.0
        completion = await self.provider().complete(self.messages(view), [], settings=self.settings)
        priced = sample is not None and sample.meter.priced  # else unknown, not free
        cost = sample.meter.cost - spent_before if sample is not None and priced else None
        text = (completion.content or "").strip()
        if STOP in text:
            closing = text.replace(STOP, "").strip()
            return UserMessage(None, completion.usage, cost, closing)
        return UserMessage(text, completion.usage, cost)

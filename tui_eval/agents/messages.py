"""Run records: what an agent run produced, as plain data every check receives."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tui_eval.util.text import one_line, value_text

Role = Literal["system", "user", "assistant", "tool"]

UNKNOWN_STOP_REASON = "unknown"
"""The stop reason of a response whose server sent none (`finish_reason: null`)."""


@dataclass(slots=True, repr=False)
class Usage:
    """Token and request counts of one model call, or summed over many.

    Example:
        >>> Usage(10, 2, 1) + Usage(5, 1, 1)
        Usage(input_tokens=15, output_tokens=3, requests=2)

    Attributes:
        known: False when the agent did not report its usage: the zeros are no count
            (token checks fail saying so); a sum is known only when every part is.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    known: bool = True

    @classmethod
    def unknown(cls) -> Usage:
        """The usage of a run that did not report one."""
        return cls(known=False)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.known and other.known,
        )

    def __repr__(self) -> str:
        counts = (
            f"input_tokens={self.input_tokens}, output_tokens={self.output_tokens}, "
            f"requests={self.requests}"
        )
        return f"Usage({counts})" if self.known else f"Usage({counts}, known=False)"

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


Price = Callable[[Usage], float]
"""Turns a sample's `Usage` into dollars (`known` False: the agent reported no usage)."""


@dataclass(slots=True)
class ToolCall:
    """One tool call the model asked for, and what happened when it ran.

    Attributes:
        name: the tool's name as the model wrote it.
        id: the provider's id for the call, used to pair it with its result.
        result: what the tool returned (the real Python value).
        error: the error text when the tool raised, was unknown, or got invalid arguments.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    result: Any = None
    error: str | None = None
    latency_ms: float = 0.0

    def __post_init__(self) -> None:
        if not self.id:  # a provider that gave none: a unique one
            self.id = f"call_{uuid.uuid4().hex[:24]}"


@dataclass(slots=True)
class Message:
    """One message of a conversation with a model."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None


@dataclass(slots=True)
class Completion:
    """One model response: text and/or tool calls, with its usage.

    Attributes:
        retries: how many times the provider retried the request (429/5xx).
    """

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "stop"
    id: str = ""
    model: str = ""
    retries: int = 0


@dataclass(slots=True)
class StateChange:
    """One value of an environment state that a turn changed (reads change nothing).

    Attributes:
        path: where, as `key.key[index]` (`orders[0].status`).
        before: the value before (None with `added`).
        after: the value after (None with `removed`).
        kind: `changed`, `added` or `removed`.
    """

    path: str
    before: Any = None
    after: Any = None
    kind: Literal["changed", "added", "removed"] = "changed"

    def __str__(self) -> str:
        if self.kind == "added":
            return f"{self.path}: added {state_value_text(self.after)}"
        if self.kind == "removed":
            return f"{self.path}: removed (was {state_value_text(self.before)})"
        return f"{self.path}: {state_value_text(self.before)} → {state_value_text(self.after)}"


def state_value_text(value: Any) -> str:
    """A state value as a diff shows it: strings quoted (`'25'` is not `25`), else JSON."""
    return repr(value) if isinstance(value, str) else one_line(value_text(value), 200)


@dataclass(slots=True)
class Turn:
    """One exchange of a conversation: the user's message and the agent's reply to it.

    Attributes:
        index: the turn's number, from 1.
        reply: the agent's answer ("" when it raised).
        cost: the price in dollars of the agent's responses this turn, when known.
        user_usage: what producing the user's message spent (a simulated user's model).
        changes: what the turn changed in the environment state.
        stop_reason: why the agent's last response of the turn ended, when it says.
        error: the agent's error, when it raised on this turn.
    """

    index: int
    user: str
    reply: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    user_usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    changes: list[StateChange] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None


@dataclass(slots=True)
class Conversation:
    """A multi-turn run with a simulated or scripted user, turn by turn.

    Attributes:
        ended_by: why it ended: `user` (its stop, or its script ran out), `max_turns`,
            `handoff`, `state` (`stop_when`) or `error` (the agent raised).
        user: who played the user (`ScriptedUser`, or the simulated user's model).
        user_usage, user_cost: what the simulated user's model spent (also in the sample's
            usage), and its price in dollars, when known.
        closing: the user's last words when it ended the conversation with some.
        user_error: how the user's side failed, if it did (an empty message).
        broken_rule: the first of the user's rules its messages broke ("" if none) ...
        broken_rule_turn: ... and the turn where it did.
    """

    turns: list[Turn] = field(default_factory=list)
    ended_by: str = "user"
    user: str = ""
    user_usage: Usage = field(default_factory=Usage)
    user_cost: float | None = None
    max_turns: int = 0
    closing: str = ""
    user_error: str = ""
    broken_rule: str = ""
    broken_rule_turn: int | None = None

    def transcript(self) -> str:
        """The conversation as plain text, turn by turn, with tool calls and state changes."""
        lines: list[str] = []
        for turn in self.turns:
            lines.append(f"[turn {turn.index}] user: {turn.user}")
            for call in turn.tool_calls:
                outcome = f"error: {call.error}" if call.error else value_text(call.result)
                lines.append(
                    f"  tool {call.name}({value_text(call.arguments)}) -> {one_line(outcome, 300)}"
                )
            for change in turn.changes:
                lines.append(f"  state {change}")
            if turn.error:
                lines.append(f"[turn {turn.index}] agent raised: {turn.error}")
            else:
                lines.append(f"[turn {turn.index}] agent: {turn.reply}")
        lines.append(f"(ended by {self.ended_by})")
        return "\n".join(lines)


@dataclass(slots=True)
class RunResult:
    """Everything one agent run produced. This is what every check receives.

    Attributes:
        output: the final output (a string, a validated model, or whatever the agent returned).
        turns: how many model responses the run took.
        retries: provider retries (429/5xx) during the run.
        stop_reason: why the model's last response ended (`stop`, `length`,
            `content_filter`, `tool_calls`, `refusal`; `unknown` when its server sent none;
            None when the agent does not say).
        model: the model that answered, when the agent says ("" otherwise).
        conversation: the turns of a conversation with a user (`Case(user=...)`); the
            other fields then cover the whole conversation (the agent's part).
        state: the environment state after the run, as plain data (`Case(state=...)`).
    """

    output: Any = None
    messages: list[Message] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    latency_ms: float = 0.0
    retries: int = 0
    stop_reason: str | None = None
    model: str = ""
    conversation: Conversation | None = None
    state: Any = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the called tools, in call order."""
        return [call.name for call in self.tool_calls]


def is_conversation(input: Any) -> bool:
    """Whether a case's input is a conversation (a non-empty list of `Message`)."""
    return (
        isinstance(input, (list, tuple))
        and bool(input)
        and all(isinstance(m, Message) for m in input)
    )


def input_messages(input: Any) -> list[Message]:
    """A case's input as the messages a model is sent (a structured value as JSON text)."""
    if isinstance(input, str):
        return [Message("user", input)]
    if is_conversation(input):
        return list(input)
    return [Message("user", value_text(input))]


def input_text(input: Any) -> str:
    """A case's input as one text (a conversation as `role: content` lines)."""
    if isinstance(input, str):
        return input
    if is_conversation(input):
        messages: Sequence[Message] = input
        return "\n".join(f"{m.role}: {m.content or ''}" for m in messages)
    return value_text(input)


def to_openai(input: Any) -> list[dict[str, Any]]:
    """A case's input as OpenAI chat-completions messages (tool calls and results
    included), for a plain function that calls the `openai` SDK itself.

    Example:
        >>> to_openai([Message("system", "Be brief."), Message("user", "Hi")])
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
    """
    converted: list[dict[str, Any]] = []
    for message in input_messages(input):
        item: dict[str, Any] = {"role": message.role, "content": message.content or ""}
        if message.tool_calls:
            item["content"] = message.content
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
        if message.role == "tool":
            item["tool_call_id"] = message.tool_call_id or ""
        converted.append(item)
    return converted


def to_anthropic(input: Any) -> tuple[str, list[dict[str, Any]]]:
    """A case's input as Anthropic messages-API arguments: `(system, messages)`, tool calls
    as `tool_use` blocks, consecutive tool results as `tool_result` blocks of one user turn
    (a result starting `Error: ` marked `is_error`).

    Example:
        >>> to_anthropic([Message("system", "Be brief."), Message("user", "Hi")])
        ('Be brief.', [{'role': 'user', 'content': 'Hi'}])
    """
    systems: list[str] = []
    converted: list[dict[str, Any]] = []
    for message in input_messages(input):
        content = message.content or ""
        if message.role == "system":
            systems.append(content)
        elif message.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
            }
            block["content"] = content
            if content.startswith("Error: "):
                block["is_error"] = True
            last = converted[-1] if converted else None
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(block)
            else:
                converted.append({"role": "user", "content": [block]})
        elif message.role == "assistant" and message.tool_calls:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
                for c in message.tool_calls
            ]
            converted.append({"role": "assistant", "content": blocks})
        else:
            converted.append({"role": message.role, "content": content})
    return "\n\n".join(systems), converted

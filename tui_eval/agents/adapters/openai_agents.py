"""Run an OpenAI Agents SDK agent under tui-eval (`pip install 'tui-eval[openai-agents]'`;
README: "Agents from other frameworks").

`wrap` runs a copy of the agent whose OpenAI models send through tui-eval's HTTP layer, then
the user's own `AsyncOpenAI` client (`install.routed`). Run hooks (the caller's still called)
record each model response, tool output and raising tool as it runs, so a call fails even
when a `failure_error_function` turned its error into text, and a raising run keeps its
calls and usage.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from tui_eval.agents.adapters.install import (
    WrappedAgent,
    charge_unmetered,
    field_of,
    requests_so_far,
    require,
    routed,
    warn_if_uncached,
)
from tui_eval.agents.http.metering import ResponseTokens
from tui_eval.agents.messages import Message, RunResult, ToolCall, Usage, input_messages
from tui_eval.agents.providers.base import parse_arguments
from tui_eval.agents.run_spec import Input
from tui_eval.util.text import value_text

TOOL_ERROR_PREFIX = "An error occurred while running the tool."
"""How the SDK's default `failure_error_function` text starts: such a call failed."""

_RAISED = "_tui_eval_raised"
"""Set on a tool call's context by a custom failure function: the error text."""


@dataclass
class _Recording:
    """What one run of a wrapped agent did, as it happened."""

    responses: list[Any] = field(default_factory=list)
    running: set[str] = field(default_factory=set)  # tool calls started, not ended, by id
    outputs: dict[str, Any] = field(default_factory=dict)  # each ended call's output, by id
    errors: dict[str, str] = field(default_factory=dict)  # each raising call's error, by id


Memory = bool | Callable[[str], Any]
"""`wrap(memory=...)`: False (the agent is sent the whole conversation each turn), True (an
in-memory `SQLiteSession` per conversation), or a function making the session of a
conversation's thread id (a file-backed `SQLiteSession`, a Redis or SQLAlchemy one...)."""


def wrap(agent: Any, *, memory: Memory = False, **run_options: Any) -> SampleRunnerAgent:
    """An agent source running `agents.Runner.run(agent, input, **run_options)`, with
    `Case(context=...)` as the run's `context` unless `run_options` sets one.

    Args:
        memory: a session per conversation (see `Memory`), each turn sending only the
            user's latest message.

    Raises:
        TypeError: `run_options` has a `session`, which every sample would share.
    """
    if "session" in run_options:
        raise TypeError(
            "wrap(agent, session=...) would share one memory between every sample and "
            "conversation: pass memory=True (a session per conversation) or "
            "memory=lambda thread_id: MySession(thread_id)"
        )
    if not isinstance(memory, bool) and not callable(memory):
        raise TypeError(f"memory must be True, False or a function of a thread id, got {memory!r}")
    return SampleRunnerAgent(agent, run_options, memory)


class SampleRunnerAgent(WrappedAgent):
    """What `wrap` returns."""

    def __init__(self, agent: Any, run_options: dict[str, Any], memory: Memory = False) -> None:
        self.agent = agent
        self.run_options = run_options
        self.memory = memory
        self.name = str(getattr(agent, "name", "") or "openai-agents")
        self._routed: Any = None  # the agent run: a copy whose models send through the layer
        self._sessions: dict[str, Any] = {}  # each conversation's session, by thread id

    def __repr__(self) -> str:
        return f"openai_agents.wrap({self.name!r})"

    def _route(self) -> Any:
        """The copy of the agent whose models send through tui-eval's HTTP layer, made once."""
        if self._routed is None:
            self._routed = _routed_agent(self.agent, {})
        return self._routed

    async def run(self, input: Input, *, deps: Any = None, thread: str | None = None) -> RunResult:
        """Run the agent once (with `memory`, in the session of `thread`)."""
        agents = require("agents", "openai-agents")  # the SDK, imported only when it runs
        options = dict(self.run_options)
        if deps is not None:
            options.setdefault("context", deps)
        if self.memory and thread is not None:
            options["session"] = self._session(agents, thread)
        agent = self._route()
        recording = _Recording()
        options["hooks"] = _recording_hooks(agents, recording, options.get("hooks"))
        options["run_config"] = _recording_config(agents, recording, options.get("run_config"))
        since = requests_so_far()
        start = time.perf_counter()
        try:
            result = await agents.Runner.run(agent, _sdk_input(input), **options)
        except Exception as exc:
            # The calls and usage up to the failure, for the failing sample's trajectory.
            for call_id in recording.running:  # a tool raised through the SDK
                recording.errors[call_id] = _first_cause(exc)
            exc.partial = _partial(  # type: ignore[attr-defined]
                agents, recording, self.agent, input, (time.perf_counter() - start) * 1000, since
            )
            raise
        latency_ms = (time.perf_counter() - start) * 1000
        warn_if_uncached(self, since)
        return from_result(result, input, latency_ms, recording, since=since)

    def _session(self, agents: Any, thread: str) -> Any:
        """The session of the conversation `thread`, made at its first turn."""
        session = self._sessions.get(thread)
        if session is None:
            make = self.memory if callable(self.memory) else agents.SQLiteSession
            session = self._sessions[thread] = make(thread)
        return session

    async def forget_thread(self, thread: str) -> None:
        """Let a finished conversation's session go (closing an in-memory one)."""
        session = self._sessions.pop(thread, None)
        if session is not None and self.memory is True:
            session.close()

    @property
    def keeps_memory(self) -> bool:
        """Whether `memory` gives each conversation a session of its own."""
        return bool(self.memory)


def _watched(tool: Any) -> Any:
    """A function tool with its own `failure_error_function` copied to record the exception
    first; any other tool as it is (the default function: `_recording_config`)."""
    from agents import default_tool_error_function
    from agents.tool import (
        resolve_function_tool_failure_error_function,
        set_function_tool_failure_error_function,
    )

    if type(tool).__name__ != "FunctionTool":
        return tool
    theirs = resolve_function_tool_failure_error_function(tool)
    if theirs is None or theirs is default_tool_error_function:
        return tool

    def failure(ctx: Any, error: Exception) -> Any:
        with contextlib.suppress(AttributeError, TypeError):  # a frozen context
            setattr(ctx, _RAISED, f"{type(error).__name__}: {error}")
        return theirs(ctx, error)

    return set_function_tool_failure_error_function(copy.copy(tool), failure)


def _recording_config(agents: Any, recording: _Recording, theirs: Any) -> Any:
    """The `RunConfig` with a `tool_error_formatter` recording each exception, then theirs."""
    config = theirs if theirs is not None else agents.RunConfig()
    formatter = config.tool_error_formatter

    def record(args: Any) -> Any:
        if args.kind == "tool_exception" and args.error is not None:
            recording.errors[args.call_id] = f"{type(args.error).__name__}: {args.error}"
        return formatter(args) if formatter is not None else None

    return dataclasses.replace(config, tool_error_formatter=record)


def _recording_hooks(agents: Any, recording: _Recording, theirs: Any) -> Any:
    """Run hooks that record each model response and tool output, then call `theirs`."""

    class Recording(agents.RunHooks):  # type: ignore[misc]
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            recording.responses.append(response)
            if theirs is not None:
                await theirs.on_llm_end(context, agent, response)

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            recording.running.add(str(getattr(context, "tool_call_id", "") or ""))
            if theirs is not None:
                await theirs.on_tool_start(context, agent, tool)

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            call_id = str(getattr(context, "tool_call_id", "") or "")
            recording.running.discard(call_id)
            recording.outputs[call_id] = result
            raised = getattr(context, _RAISED, None)
            if raised is not None:
                recording.errors[call_id] = raised
            if theirs is not None:
                await theirs.on_tool_end(context, agent, tool, result)

    for name in ("on_llm_start", "on_agent_start", "on_agent_end", "on_handoff"):
        if theirs is not None:
            setattr(Recording, name, _forward(name, theirs))
    return Recording()


def _first_cause(exc: BaseException) -> str:
    """The exception a run's exception was raised from (a tool's, which the SDK wraps)."""
    seen = exc
    for _ in range(10):  # never loop on a cycle
        cause = seen.__cause__ or seen.__context__
        if cause is None:
            break
        seen = cause
    return f"{type(seen).__name__}: {seen}"


def _forward(name: str, theirs: Any) -> Any:
    async def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await getattr(theirs, name)(*args, **kwargs)

    return forward


def _partial(
    agents: Any,
    recording: _Recording,
    agent: Any,
    input: Input,
    latency_ms: float,
    since: int | None,
) -> RunResult:
    """The run up to its failure, from the model responses and tool outputs recorded."""
    items: list[Any] = []
    for response in recording.responses:
        for raw in getattr(response, "output", ()) or ():
            kind = field_of(raw, "type")
            if kind == "message":
                items.append(agents.MessageOutputItem(agent=agent, raw_item=raw))
            elif kind == "function_call":
                items.append(agents.ToolCallItem(agent=agent, raw_item=raw))
                call_id = str(field_of(raw, "call_id") or "")
                if call_id in recording.outputs:
                    output = recording.outputs[call_id]
                    raw_output = {"call_id": call_id, "output": value_text(output)}
                    raw_output["type"] = "function_call_output"
                    items.append(
                        agents.ToolCallOutputItem(agent=agent, raw_item=raw_output, output=output)
                    )
    result = SimpleNamespace(
        new_items=items, raw_responses=recording.responses, last_agent=agent, final_output=None
    )
    converted = from_result(result, input, latency_ms, recording, since=since)
    converted.output = None
    last = converted.messages[-1]
    if last.role == "assistant" and not last.tool_calls and last.content == value_text(None):
        converted.messages.pop()  # the final answer `from_result` adds: there is none
    return converted


def _routed_agent(agent: Any, made: dict[int, Any]) -> Any:
    """A copy of `agent` (and its handoffs) whose OpenAI models send through the layer."""
    if id(agent) in made or not hasattr(agent, "clone"):
        return made.get(id(agent), agent)
    model = agent.model
    client = getattr(model, "_client", None)  # the SDK keeps it there: read, never replaced
    changes: dict[str, Any] = {}
    sending = routed(client) if type(model).__name__ in _OPENAI_MODELS else None
    if sending is not None and sending is not client:
        changes["model"] = type(model)(model=model.model, openai_client=sending)
    twin = made[id(agent)] = agent.clone(tools=[_watched(t) for t in agent.tools], **changes)
    if agent.handoffs:
        twin.handoffs = [_routed_agent(h, made) for h in agent.handoffs]
    return twin


_OPENAI_MODELS = ("OpenAIChatCompletionsModel", "OpenAIResponsesModel")


def _sdk_input(input: Input) -> Any:
    """A case's input as the SDK's input items (`function_call`, `function_call_output`)."""
    if isinstance(input, str):
        return input
    items: list[dict[str, Any]] = []
    for message in input_messages(input):
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content or "",
                }
            )
            continue
        if message.content or not message.tool_calls:
            items.append({"role": message.role, "content": message.content or ""})
        for call in message.tool_calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": json.dumps(call.arguments),
                }
            )
    return items


def is_result(value: Any) -> bool:
    """Whether `value` is an Agents SDK run result (told by its type's module and fields)."""
    module = type(value).__module__ or ""
    return (
        module.split(".")[0] == "agents"
        and hasattr(value, "new_items")
        and hasattr(value, "final_output")
    )


def from_result(
    result: Any,
    input: Input,
    latency_ms: float,
    recording: _Recording | None = None,
    *,
    since: int | None = None,
) -> RunResult:
    """An Agents SDK `RunResult` as ours (with what `wrap` recorded while it ran)."""
    errors = recording.errors if recording is not None else {}
    messages: list[Message] = []
    instructions = getattr(getattr(result, "last_agent", None), "instructions", None)
    if isinstance(instructions, str) and instructions:
        messages.append(Message("system", instructions))
    messages += input_messages(input)
    calls: dict[str, ToolCall] = {}
    ordered: list[ToolCall] = []
    for item in getattr(result, "new_items", ()) or ():
        kind = type(item).__name__
        raw = getattr(item, "raw_item", None)
        if kind in ("ToolCallItem", "HandoffCallItem"):  # a handoff is a call too
            call = ToolCall(
                str(field_of(raw, "name") or field_of(raw, "type") or "tool"),
                _arguments(field_of(raw, "arguments")),
                str(field_of(raw, "call_id") or field_of(raw, "id") or ""),
            )
            call.error = errors.get(call.id)
            calls[call.id] = call
            ordered.append(call)
            messages.append(Message("assistant", None, [call]))
        elif kind == "ToolCallOutputItem":
            call_id = str(field_of(raw, "call_id") or "")
            output = getattr(item, "output", None)
            if output is None:
                output = field_of(raw, "output")
            found = calls.get(call_id)
            if found is not None and found.error is None:
                if isinstance(output, str) and output.startswith(TOOL_ERROR_PREFIX):
                    found.error = output
                else:
                    found.result = output
            messages.append(Message("tool", value_text(output), tool_call_id=call_id))
        elif kind == "MessageOutputItem":
            messages.append(Message("assistant", _message_text(raw)))
    usage = Usage()
    responses = list(getattr(result, "raw_responses", ()) or ())
    model = _model_name(getattr(result, "last_agent", None))
    priced: list[tuple[str, str, ResponseTokens]] = []
    for response in responses:
        raw_usage = getattr(response, "usage", None)
        usage = usage + Usage(
            int(getattr(raw_usage, "input_tokens", 0) or 0),
            int(getattr(raw_usage, "output_tokens", 0) or 0),
            int(getattr(raw_usage, "requests", 1) or 1) if raw_usage is not None else 1,
        )
        if raw_usage is not None:
            details = getattr(raw_usage, "input_tokens_details", None)
            tokens = ResponseTokens.checked(
                getattr(raw_usage, "input_tokens", 0),
                getattr(raw_usage, "output_tokens", 0),
                getattr(details, "cached_tokens", 0),
            )
            priced.append(("openai", model, tokens))
    charge_unmetered(priced, since=since)
    output = getattr(result, "final_output", None)
    if not messages or messages[-1].role != "assistant" or messages[-1].tool_calls:
        messages.append(Message("assistant", value_text(output)))
    return RunResult(
        output=output,
        messages=messages,
        tool_calls=ordered,
        usage=usage,
        turns=len(responses),
        latency_ms=latency_ms,
        stop_reason=_stop_reason(responses[-1]) if responses else None,
    )


def _stop_reason(response: Any) -> str | None:
    """Why a model response ended, from its last output item (the SDK keeps no reason)."""
    for raw in reversed(list(getattr(response, "output", ()) or ())):
        kind = str(field_of(raw, "type") or "")
        if kind.endswith("_call"):
            return "tool_calls"
        if kind != "message":
            continue  # reasoning, and other items that are not the answer
        parts = field_of(raw, "content") or []
        if not isinstance(parts, str) and any(field_of(p, "type") == "refusal" for p in parts):
            return "refusal"
        return "length" if field_of(raw, "status") == "incomplete" else "stop"
    return None


def _model_name(agent: Any) -> str:
    """The model an SDK agent names (a string, or a model object's `model`)."""
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict) or (isinstance(raw, str) and raw.strip()):
        return parse_arguments(raw)[0]
    return {}


def _message_text(raw: Any) -> str:
    parts = field_of(raw, "content") or []
    if isinstance(parts, str):
        return parts
    texts = []
    for part in parts:
        text = field_of(part, "text")
        if text is None:
            text = field_of(part, "refusal")
        if text:
            texts.append(str(text))
    return "".join(texts)

"""Run a LangGraph graph (or any LangChain runnable over messages) under tui-eval
(`pip install 'tui-eval[langgraph]'`; README: "Agents from other frameworks").

The graph's final state (or the state, messages or `AIMessage` a plain function returns)
becomes the `RunResult`, read by field with no LangChain import. A graph with a checkpointer
keeps its own memory: a conversation gets a thread of its own, deleted when it ends.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from tui_eval.agents.adapters.install import (
    WrappedAgent,
    charge_unmetered,
    field_of,
    requests_so_far,
    warn_if_uncached,
)
from tui_eval.agents.adapters.spans import json_value
from tui_eval.agents.http.metering import ResponseTokens
from tui_eval.agents.messages import (
    Message,
    Role,
    RunResult,
    ToolCall,
    Usage,
    input_messages,
    is_conversation,
)
from tui_eval.agents.providers.base import normalize_stop_reason
from tui_eval.agents.run_spec import Input
from tui_eval.util.text import value_text

_ROLES: dict[str, Role] = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def wrap(graph: Any, *, config: Mapping[str, Any] | None = None) -> GraphAgent:
    """An agent source calling `await graph.ainvoke({"messages": [...]}, config)`."""
    return GraphAgent(graph, dict(config or {}))


class GraphAgent(WrappedAgent):
    """What `wrap` returns."""

    def __init__(self, graph: Any, config: dict[str, Any]) -> None:
        self.graph = graph
        self.config = config
        self.name = str(getattr(graph, "name", "") or "langgraph")

    def __repr__(self) -> str:
        return f"langgraph.wrap({self.name!r})"

    @property
    def keeps_memory(self) -> bool:
        """Whether the graph remembers a thread's earlier runs: it has a checkpointer."""
        return _checkpointer(self.graph) is not None

    async def run(self, input: Input, *, deps: Any = None, thread: str | None = None) -> RunResult:
        """Run the graph once (on `thread`, with a checkpointer) and convert its final state."""
        config = dict(self.config)
        configurable = dict(config.get("configurable") or {})
        if deps is not None:
            configurable.setdefault("deps", deps)
        own_thread: str | None = None  # a thread made for this run alone
        known: set[str] | None = None  # the ids of the thread's messages before this run
        waiting: list[Any] = []  # the interrupts the thread is paused at: the input answers
        if self.keeps_memory:
            if thread is None and "thread_id" not in configurable:
                own_thread = configurable["thread_id"] = f"tui-eval-{uuid.uuid4().hex[:12]}"
            else:
                if thread is not None:
                    configurable["thread_id"] = thread
                known, waiting = await self._thread_state({**config, "configurable": configurable})
        if configurable:
            config["configurable"] = configurable
        try:
            return await self._invoke(input, config, known, waiting)
        finally:
            if own_thread is not None:
                with anyio.CancelScope(shield=True):
                    await self.forget_thread(own_thread)

    async def _invoke(
        self, input: Input, config: dict[str, Any], known: set[str] | None, waiting: list[Any]
    ) -> RunResult:
        if waiting:  # the graph asked (`interrupt`): the user's message is the answer
            state: Any = _resume(waiting, input)
        elif isinstance(input, Mapping):
            state = dict(input)
        else:
            state = {"messages": [_wire_message(m) for m in input_messages(input)]}
        since = requests_so_far()
        start = time.perf_counter()
        final: Any = None
        try:
            if hasattr(self.graph, "stream_mode") and hasattr(self.graph, "astream"):
                # A LangGraph graph: `ainvoke`'s final state, each step's kept on the way.
                stream = self.graph.astream(state, config or None, stream_mode="values")
                async for chunk in stream:
                    if isinstance(chunk, Mapping) and set(chunk) == {"__interrupt__"}:
                        final = {**(final if isinstance(final, Mapping) else {}), **chunk}
                    else:
                        final = chunk
            else:  # any other runnable
                final = await self.graph.ainvoke(state, config or None)
        except Exception as exc:
            # The calls and usage up to the failure, for the failing sample's trajectory.
            exc.partial = _partial(  # type: ignore[attr-defined]
                _added(final, known), input, (time.perf_counter() - start) * 1000, exc, since
            )
            raise
        asked = final.get("__interrupt__") if isinstance(final, Mapping) else None
        if asked:
            final = {k: v for k, v in final.items() if k != "__interrupt__"}
        final = _added(final, known)
        latency_ms = (time.perf_counter() - start) * 1000
        warn_if_uncached(self, since)
        run = from_value(final, input, latency_ms, since=since) or RunResult(
            output=final, messages=input_messages(input), turns=1
        )
        if asked:  # paused for the human: what it asks is the reply
            question = "\n".join(value_text(getattr(i, "value", i)) for i in asked)
            run.messages.append(Message("assistant", question))
            run.output = question
            run.stop_reason = "interrupt"
        return run

    async def _thread_state(self, config: dict[str, Any]) -> tuple[set[str], list[Any]]:
        """The ids of the messages the thread holds now, and the interrupts it is paused at."""
        snapshot = await self.graph.aget_state(config)
        values = getattr(snapshot, "values", None)
        messages = values.get("messages") if isinstance(values, Mapping) else None
        waiting = list(getattr(snapshot, "interrupts", None) or ())
        if not waiting:
            for task in getattr(snapshot, "tasks", None) or ():
                waiting.extend(getattr(task, "interrupts", None) or ())
        return {str(m.id) for m in messages or () if getattr(m, "id", None)}, waiting

    async def forget_thread(self, thread: str) -> None:
        """Delete a finished conversation's checkpoints, if the checkpointer can."""
        checkpointer = _checkpointer(self.graph)
        if checkpointer is None:
            return
        try:
            await checkpointer.adelete_thread(thread)
        except NotImplementedError:
            return
        except Exception as exc:  # the conversation's result stands; say why they stay
            warnings.warn(
                f"{self!r}: could not delete the checkpoints of thread {thread!r}: "
                f"{type(exc).__name__}: {exc}",
                UserWarning,
                stacklevel=2,
            )


def _resume(waiting: list[Any], input: Input) -> Any:
    """The `Command` answering a paused thread's interrupts with the user's latest message."""
    from langgraph.types import Command

    answer: Any
    if isinstance(input, Mapping):  # a structured answer, handed on as it is
        answer = dict(input)
    else:
        sent = input_messages(input)
        answer = next((m.content for m in reversed(sent) if m.role == "user"), "") or ""
    if len(waiting) == 1:
        return Command(resume=answer)
    return Command(resume={str(getattr(i, "id", "")): answer for i in waiting})


def _checkpointer(graph: Any) -> Any:
    """The graph's own checkpointer (not a subgraph's `True`/`False`), if any."""
    checkpointer = getattr(graph, "checkpointer", None)
    if checkpointer is None or isinstance(checkpointer, bool):
        return None
    return checkpointer


def _added(state: Any, known: set[str] | None) -> Any:
    """`state` without the messages its thread held before the run (their ids `known`)."""
    if not known or not isinstance(state, Mapping) or not isinstance(state.get("messages"), list):
        return state
    fresh = [m for m in state["messages"] if str(getattr(m, "id", None)) not in known]
    return {**state, "messages": fresh}


def _wire_message(message: Message) -> dict[str, Any]:
    """One of our messages as LangChain takes it in a state's `messages`."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    return wire


def _partial(
    state: Any, input: Input, latency_ms: float, exc: Exception, since: int | None
) -> RunResult:
    """The run up to the step that raised, its unanswered tool calls failed with `exc`."""
    run = from_value(state, input, latency_ms, since=since) or RunResult(
        output=None, messages=input_messages(input)
    )
    run.output = None
    answered = {m.tool_call_id for m in run.messages if m.role == "tool"}
    unanswered = [c for c in run.tool_calls if c.id not in answered and c.error is None]
    error = f"{type(exc).__name__}: {exc}"
    for call in unanswered:
        call.error = error if len(unanswered) == 1 else f"not answered: the tools raised {error}"
    return run


def is_message(value: Any) -> bool:
    """Whether `value` is a LangChain message (told by its type's module, not imported)."""
    module = type(value).__module__ or ""
    return module.startswith("langchain_core.messages") or (
        module.startswith("langchain") and hasattr(value, "content") and hasattr(value, "type")
    )


def is_result(value: Any) -> bool:
    """A LangGraph state with `messages`, a list of LangChain messages, or one message."""
    if is_message(value):
        return True
    if isinstance(value, Mapping):
        messages = value.get("messages")
        return isinstance(messages, list) and bool(messages) and all(map(is_message, messages))
    return (
        isinstance(value, list)
        and bool(value)
        and not is_conversation(value)
        and all(map(is_message, value))
    )


def from_value(
    value: Any, input: Input, latency_ms: float, *, since: int | None = None
) -> RunResult | None:
    """A LangGraph state, LangChain messages or one `AIMessage` as a run (else None)."""
    if not is_result(value):
        return None
    if is_message(value):
        raw = [value]
    elif isinstance(value, Mapping):
        raw = list(value["messages"])
    else:
        raw = list(value)
    return from_messages(raw, input, latency_ms, since=since)


def from_messages(
    raw: Sequence[Any], input: Input, latency_ms: float, *, since: int | None = None
) -> RunResult:
    """LangChain messages as a run (an input conversation they start with: messages only)."""
    messages: list[Message] = []
    calls: dict[str, ToolCall] = {}
    ordered: list[ToolCall] = []
    usage = Usage()
    turns = 0
    stop_reason: str | None = None
    output: Any = None
    priced: list[tuple[str, str, ResponseTokens]] = []
    own_from = _history_length(raw, input)
    for index, message in enumerate(raw):
        role = _ROLES.get(str(getattr(message, "type", "")), "assistant")
        content = getattr(message, "content", "")
        text = content_text(content)
        if role == "assistant":
            response_calls = [
                ToolCall(
                    str(field_of(c, "name") or "tool"),
                    dict(field_of(c, "args") or {}),
                    str(field_of(c, "id") or ""),
                )
                for c in getattr(message, "tool_calls", None) or []
            ]
            if index >= own_from:  # the run's own response, not the input's
                calls.update((call.id, call) for call in response_calls)
                for invalid in getattr(message, "invalid_tool_calls", None) or []:
                    call = ToolCall(
                        str(field_of(invalid, "name") or "tool"),
                        {"_unparsed_arguments": field_of(invalid, "args")},
                        str(field_of(invalid, "id") or ""),
                    )
                    why = field_of(invalid, "error") or "arguments not JSON"
                    call.error = f"invalid tool call: {why}"
                    response_calls.append(call)
                ordered += response_calls
                turns += 1
                meta = getattr(message, "usage_metadata", None) or {}
                usage = usage + Usage(
                    int(field_of(meta, "input_tokens") or 0),
                    int(field_of(meta, "output_tokens") or 0),
                    1,
                )
                response_meta = getattr(message, "response_metadata", None) or {}
                if meta:
                    priced.append(_priced(meta, response_meta))
                if response_meta.get("finish_reason"):
                    stop_reason = normalize_stop_reason(response_meta["finish_reason"])
                if not response_calls:
                    output = text
            messages.append(Message("assistant", text or None, response_calls))
        elif role == "tool":
            call_id = str(getattr(message, "tool_call_id", "") or "")
            found = calls.get(call_id)
            if found is not None:
                if getattr(message, "status", "success") == "error":
                    found.error = text
                else:
                    artifact = getattr(message, "artifact", None)
                    found.result = artifact if artifact is not None else json_value(content)
            messages.append(Message("tool", text, tool_call_id=call_id))
        else:
            messages.append(Message(role, text))
    charge_unmetered(priced, since=since)
    if not any(m.role == "user" for m in messages):
        messages = [*input_messages(input), *messages]
    if output is None and messages and messages[-1].role == "assistant":
        output = messages[-1].content or ""
    return RunResult(
        output=output,
        messages=messages,
        tool_calls=ordered,
        usage=usage,
        turns=turns,
        latency_ms=latency_ms,
        stop_reason=stop_reason,
    )


def _history_length(raw: Sequence[Any], input: Input) -> int:
    """How many of `raw`'s first messages repeat the input conversation (else 0)."""
    if not is_conversation(input):
        return 0
    sent = input_messages(input)
    if len(sent) > len(raw):
        return 0
    for ours, theirs in zip(sent, raw, strict=False):
        role = _ROLES.get(str(getattr(theirs, "type", "")), "assistant")
        if role != ours.role or content_text(getattr(theirs, "content", "")) != (
            ours.content or ""
        ):
            return 0
    return len(sent)


def _priced(meta: Any, response_meta: Mapping[str, Any]) -> tuple[str, str, ResponseTokens]:
    """(provider, model, tokens) of one AI message (cache reads and writes in its input)."""
    details = field_of(meta, "input_token_details") or {}
    model = response_meta.get("model_name") or response_meta.get("model") or ""
    provider = response_meta.get("model_provider") or (
        "anthropic" if str(model).startswith("claude") else "openai"
    )
    tokens = ResponseTokens.checked(
        field_of(meta, "input_tokens"),
        field_of(meta, "output_tokens"),
        field_of(details, "cache_read"),
        field_of(details, "cache_creation"),
    )
    return str(provider), str(model), tokens


def content_text(content: Any) -> str:
    """A message's content as text: a string as itself, content blocks' text joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    return value_text(content)

"""Run a pydantic-ai `Agent` under tui-eval (`pip install 'tui-eval[pydantic-ai]'`).

Its output, tool calls (a return part whose `outcome` is not `success` failed) and usage
become the `RunResult`; a run that raises keeps the trajectory up to the failure. A result a
plain function returns (`AgentRunResult`, `StreamedRunResult`, `iter`'s `AgentRun`) is
converted the same way (`from_result`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from tui_eval.agents.adapters.install import (
    charge_unmetered,
    requests_so_far,
    require,
    routed,
)
from tui_eval.agents.http.metering import ResponseTokens
from tui_eval.agents.messages import (
    Message,
    RunResult,
    ToolCall,
    Usage,
    is_conversation,
)
from tui_eval.agents.run_spec import AgentCall, Input, RunSpec
from tui_eval.util.text import value_text


def pydantic_ai_runner(agent: Any) -> AgentCall:
    """The per-sample call for a pydantic-ai agent, its model's client routed (`routed`)."""
    own: list[Any] = []

    async def run(spec: RunSpec) -> RunResult:
        pydantic_ai = require("pydantic_ai", "pydantic-ai")
        if not own:
            own.append(_routed_model(agent.model) if agent.model is not None else None)
        kwargs: dict[str, Any] = {}
        if own[0] is not None and own[0] is not agent.model:
            kwargs["model"] = own[0]
        if spec.deps is not None:
            kwargs["deps"] = spec.deps
        if spec.output_type is not None:
            kwargs["output_type"] = spec.output_type
        if spec.model is not None:
            kwargs["model"] = pydantic_ai_model(spec.model)
        prompt, history = prompt_and_history(spec.input)
        if history:
            kwargs["message_history"] = history
        since = requests_so_far()
        start = time.perf_counter()
        with pydantic_ai.capture_run_messages() as captured:
            try:
                result = await agent.run(prompt, **kwargs)
            except Exception as exc:
                # The trajectory up to the failure, for the failing sample's trajectory tab.
                ran = list(captured)
                ms = (time.perf_counter() - start) * 1000
                partial = _run(ran, min(len(history), len(ran)), ms)
                partial.output = partial.stop_reason = None
                exc.partial = partial  # type: ignore[attr-defined]
                raise
        return from_result(result, (time.perf_counter() - start) * 1000, since=since)

    return run


def is_result(value: Any) -> bool:
    """Whether `value` is a pydantic-ai run's result (told by module and fields)."""
    module = type(value).__module__ or ""
    if not module.startswith("pydantic_ai"):
        return False
    if type(value).__name__ == "AgentRun":
        return True
    return hasattr(value, "all_messages") and hasattr(value, "new_messages")


def from_result(value: Any, latency_ms: float, *, since: int | None = None) -> RunResult:
    """A pydantic-ai run's result as ours: the whole conversation as its trajectory, but
    only this run's calls and usage (not an input history's); an unfinished `AgentRun` as
    the run so far. `since`: as `charge_unmetered`'s."""
    finished = getattr(value, "result", None) if type(value).__name__ == "AgentRun" else value
    if finished is not None and finished is not value:
        return from_result(finished, latency_ms, since=since)
    everything = list(value.all_messages())
    own_from = len(everything) - len(value.new_messages())
    run = _run(everything, own_from, latency_ms)
    charge_unmetered(_usages(everything[own_from:]), since=since)
    if finished is not None:
        raw_usage = value.usage
        if not hasattr(raw_usage, "input_tokens"):  # older pydantic-ai: a method
            raw_usage = raw_usage()
        run.usage = Usage(
            int(getattr(raw_usage, "input_tokens", 0) or 0),
            int(getattr(raw_usage, "output_tokens", 0) or 0),
            int(getattr(raw_usage, "requests", 0) or 0),
        )
        with contextlib.suppress(Exception):  # a StreamedRunResult not yet streamed to its end
            run.output = value.output
    return run


def _run(history: list[Any], own_from: int, latency_ms: float) -> RunResult:
    """The messages of a run as ours (see `convert_messages`), the last answer its output."""
    messages, calls, turns = convert_messages(history, own_from)
    last = messages[-1] if messages else None
    output = last.content if last is not None and last.role == "assistant" else None
    own = history[own_from:]
    usage = sum((Usage(t.input, t.output, 1) for _, _, t in _usages(own)), Usage())
    stop = _stop_reason(own)
    return RunResult(output, messages, calls, usage, turns, latency_ms, stop_reason=stop)


def pydantic_ai_model(model: Any) -> Any:
    """A case's model for pydantic-ai (`openai-compatible:MODEL@URL`: an OpenAI chat model on
    that URL), its client going through tui-eval's HTTP layer."""
    if isinstance(model, str) and not model.startswith("openai-compatible:"):
        from pydantic_ai.models import infer_model

        return _routed_model(infer_model(model))
    if isinstance(model, str):
        import os

        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        from tui_eval.agents.providers.base import ModelSpecError

        name, sep, base_url = model.removeprefix("openai-compatible:").partition("@")
        if not sep or not name or not base_url.startswith(("http://", "https://")):
            raise ModelSpecError(
                f"{model} should be openai-compatible:MODEL@BASE_URL, "
                "e.g. openai-compatible:llama3.1@http://localhost:11434/v1"
            )
        from tui_eval.agents.http.client import http_client

        api_key = os.environ.get("OPENAI_API_KEY") or "not-needed"
        provider = OpenAIProvider(base_url=base_url, api_key=api_key, http_client=http_client())
        return OpenAIChatModel(name, provider=provider)
    if hasattr(model, "complete") or (callable(model) and not isinstance(model, str)):
        raise TypeError(
            "a pydantic-ai agent takes a model name or a pydantic-ai model as Case(model=...), "
            f"not a tui-eval provider ({model!r})"
        )
    return model


def _routed_model(model: Any) -> Any:
    """A pydantic-ai OpenAI or Anthropic model with its SDK client `routed` (else itself)."""
    client = getattr(model, "client", None)
    sending = routed(client) if client is not None else None
    if sending is None or sending is client:
        return model
    kind = type(model).__name__
    if kind.startswith("OpenAI"):
        from pydantic_ai.providers.openai import OpenAIProvider

        provider: Any = OpenAIProvider(openai_client=sending)
    elif kind.startswith("Anthropic"):
        from pydantic_ai.providers.anthropic import AnthropicProvider

        provider = AnthropicProvider(anthropic_client=sending)
    else:
        return model
    return type(model)(
        model.model_name, provider=provider, profile=model.profile, settings=model.settings
    )


def prompt_and_history(input: Input) -> tuple[str, list[Any]]:
    """The user prompt and the earlier turns (system, user, assistant, tool) of an input."""
    if isinstance(input, str):
        return input, []
    if not is_conversation(input):
        return value_text(input), []
    from pydantic_ai import messages as pm

    turns = list(input)
    last_user = max((i for i, m in enumerate(turns) if m.role == "user"), default=None)
    prompt = (turns[last_user].content or "") if last_user is not None else ""
    names = {c.id: c.name for m in turns for c in m.tool_calls}
    systems: list[Any] = []  # pydantic-ai puts a history's system prompts first
    history: list[Any] = []
    for index, message in enumerate(turns):
        content = message.content or ""
        if index == last_user:
            continue
        if message.role == "system":
            systems.append(pm.ModelRequest(parts=[pm.SystemPromptPart(content)]))
        elif message.role == "user":
            history.append(pm.ModelRequest(parts=[pm.UserPromptPart(content)]))
        elif message.role == "assistant":
            parts: list[Any] = [pm.TextPart(content)] if content else []
            parts += [
                pm.ToolCallPart(c.name, dict(c.arguments), tool_call_id=c.id)
                for c in message.tool_calls
            ]
            history.append(pm.ModelResponse(parts=parts or [pm.TextPart("")]))
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            part = pm.ToolReturnPart(names.get(call_id, "tool"), content, tool_call_id=call_id)
            history.append(pm.ModelRequest(parts=[part]))
    return prompt, [*systems, *history]


def _usages(history: list[Any]) -> list[tuple[str, str, ResponseTokens]]:
    """(provider, model, tokens) of each model response, for pricing."""
    found = []
    for item in history:
        if type(item).__name__ != "ModelResponse":
            continue
        raw = getattr(item, "usage", None)
        tokens = ResponseTokens.checked(
            getattr(raw, "input_tokens", 0),
            getattr(raw, "output_tokens", 0),
            getattr(raw, "cache_read_tokens", 0),
            getattr(raw, "cache_write_tokens", 0),
        )
        provider = getattr(item, "provider_name", None) or "openai"
        found.append((str(provider), str(getattr(item, "model_name", "") or ""), tokens))
    return found


def _stop_reason(history: list[Any]) -> str | None:
    from tui_eval.agents.providers.base import normalize_stop_reason

    for item in reversed(history):
        if type(item).__name__ == "ModelResponse":
            reason = getattr(item, "finish_reason", None)
            return normalize_stop_reason(reason) if reason else None
    return None


def convert_messages(
    history: list[Any], own_from: int = 0
) -> tuple[list[Message], list[ToolCall], int]:
    """pydantic-ai messages as ours; those before `own_from` (a history) only as messages."""
    messages: list[Message] = []
    calls: dict[str, ToolCall] = {}
    ordered: list[ToolCall] = []
    turns = 0
    instructions_seen: str | None = None
    for index, item in enumerate(history):
        kind = type(item).__name__
        own = index >= own_from
        if kind == "ModelResponse":
            turns += own
            texts, response_calls = [], []
            for part in item.parts:
                part_kind = type(part).__name__
                if part_kind == "TextPart":
                    texts.append(part.content)
                elif part_kind == "ToolCallPart":
                    args = (
                        part.args_as_dict()
                        if hasattr(part, "args_as_dict")
                        else dict(part.args or {})
                    )
                    call = ToolCall(part.tool_name, args, str(part.tool_call_id or ""))
                    calls[call.id] = call
                    if own:
                        ordered.append(call)
                    response_calls.append(call)
            messages.append(Message("assistant", "".join(texts) or None, response_calls))
            continue
        instructions = getattr(item, "instructions", None)
        if instructions and instructions != instructions_seen:
            # `Agent(instructions=...)`: sent with each request, recorded once (and again
            # only if it changes).
            messages.append(Message("system", str(instructions)))
            instructions_seen = instructions
        for part in getattr(item, "parts", ()):
            part_kind = type(part).__name__
            if part_kind == "SystemPromptPart":
                messages.append(Message("system", str(part.content)))
            elif part_kind == "UserPromptPart":
                messages.append(Message("user", value_text(part.content)))
            elif part_kind == "ToolReturnPart":
                call_id = str(part.tool_call_id or "")
                returned = calls.get(call_id)
                outcome = getattr(part, "outcome", "success")
                text = value_text(part.content)
                if returned is not None:
                    if outcome not in (None, "success"):
                        returned.error = f"{outcome}: {text}" if text else str(outcome)
                    else:
                        returned.result = part.content
                messages.append(Message("tool", text, tool_call_id=call_id))
            elif part_kind == "RetryPromptPart":
                call_id = str(getattr(part, "tool_call_id", "") or "")
                retried = calls.get(call_id)
                content = value_text(part.content)
                if retried is not None:
                    retried.error = content
                error = part.model_response() if hasattr(part, "model_response") else content
                messages.append(Message("tool", str(error), tool_call_id=call_id))
    return messages, ordered, turns

"""Run an OpenAI Agents SDK agent under tui-eval (`pip install 'tui-eval[openai-agents]'`).

Example:
    >>> from tui_eval.agents.adapters.openai_agents import wrap
    >>> suite = Suite("weather", agent=wrap(weather_agent, max_turns=5), cases=[...])  # doctest: +SKIP

The SDK's result becomes the `RunResult` every check reads: each tool call with its
arguments and result (a failed tool's error text as its error), the final output, the
summed usage and the model's messages. A plain function that returns the SDK's own
`RunResult` is converted the same way (`from_result`), never serialised into the output.
This module imports the SDK only inside `wrap`: converting a result needs no import.

`wrap` routes the agent's model calls through tui-eval's HTTP layer (`http_client()`): the
clients of its models (and its handoffs'), and — for models named by a string — a model
provider whose client does the same, unless `run_config=` is given. The run's rate
limiter, cache, prices and `max_cost` then apply. Usage of calls that did not pass there
is still priced from the SDK's result, cached tokens included.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tui_eval.agents.adapters.install import (
    charge_unmetered,
    install_http_client,
    require,
    warn_if_uncached,
)
from tui_eval.agents.messages import Message, RunResult, ToolCall, Usage, input_messages
from tui_eval.agents.providers.metering import ResponseTokens, token_count
from tui_eval.agents.run_spec import AgentCall, Input, RunSpec
from tui_eval.util.text import value_text

TOOL_ERROR_PREFIX = "An error occurred while running the tool."
"""How the SDK's default `failure_error_function` starts the text it sends back for a tool
that raised: such a call is recorded as failed."""


def wrap(agent: Any, **run_options: Any) -> SampleRunnerAgent:
    """An agent source running `agent` with `agents.Runner.run(agent, input, **run_options)`.

    A case's structured input (a mapping) or conversation is sent as the SDK's input items;
    `Case(context=...)` becomes the run's `context` unless `run_options` sets one.
    """
    return SampleRunnerAgent(agent, run_options)


class SampleRunnerAgent:
    """What `wrap` returns: an object with an async `run(input)`, like any agent source."""

    def __init__(self, agent: Any, run_options: dict[str, Any]) -> None:
        self.agent = agent
        self.run_options = run_options
        self.name = str(getattr(agent, "name", "") or "openai-agents")
        self._installed: int | None = None
        self._run_config: Any = None

    def __repr__(self) -> str:
        return f"openai_agents.wrap({self.name!r})"

    def _install(self) -> int:
        """Route the agent's model clients through tui-eval's HTTP layer, once."""
        if self._installed is None:
            self._installed = install_http_client(self.agent)
            if "run_config" not in self.run_options:
                self._run_config = _metered_run_config()
                self._installed += self._run_config is not None
        return self._installed

    async def run(self, input: Input, *, deps: Any = None) -> RunResult:
        """Run the agent once and convert its result."""
        agents = require("agents", "openai-agents")  # the SDK, imported only when it runs
        options = dict(self.run_options)
        if deps is not None:
            options.setdefault("context", deps)
        warn_if_uncached(self, self._install())
        if self._run_config is not None:
            options.setdefault("run_config", self._run_config)
        Runner = agents.Runner
        start = time.perf_counter()
        result = await Runner.run(self.agent, _sdk_input(input), **options)
        return from_result(result, input, (time.perf_counter() - start) * 1000)

    def sample_runner(self) -> AgentCall:
        """The per-sample call (used by `evaluate()` instead of `run`, to pass deps)."""

        async def run(spec: RunSpec) -> RunResult:
            return await self.run(spec.input, deps=spec.deps)

        return run


def _metered_run_config() -> Any:
    """A run config whose model provider's client goes through tui-eval's HTTP layer, for
    models named by a string (None without an OpenAI key: such models could not run)."""
    import os

    from agents import RunConfig
    from agents.models._openai_shared import get_default_openai_client, get_default_openai_key
    from agents.models.openai_provider import OpenAIProvider
    from openai import AsyncOpenAI

    from tui_eval.agents.providers.client import MeteredAsyncClient

    default = get_default_openai_client()
    if default is not None:
        client = default.with_options(http_client=MeteredAsyncClient())
    elif get_default_openai_key() or os.environ.get("OPENAI_API_KEY"):
        client = AsyncOpenAI(
            api_key=get_default_openai_key() or os.environ.get("OPENAI_API_KEY"),
            http_client=MeteredAsyncClient(),
        )
    else:
        return None
    return RunConfig(model_provider=OpenAIProvider(openai_client=client))


def _sdk_input(input: Input) -> Any:
    if isinstance(input, str):
        return input
    return [{"role": m.role, "content": m.content or ""} for m in input_messages(input)]


def is_result(value: Any) -> bool:
    """Whether `value` is an Agents SDK run result (told by its type's module and fields)."""
    module = type(value).__module__ or ""
    return (
        module.split(".")[0] == "agents"
        and hasattr(value, "new_items")
        and hasattr(value, "final_output")
    )


def from_result(result: Any, input: Input, latency_ms: float) -> RunResult:
    """An Agents SDK `RunResult` as ours."""
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
        if kind == "ToolCallItem":
            call_id = str(_field(raw, "call_id") or _field(raw, "id") or "")
            call = ToolCall(
                str(_field(raw, "name") or _field(raw, "type") or "tool"),
                _arguments(_field(raw, "arguments")),
                call_id,
            )
            calls[call.id] = call
            ordered.append(call)
            messages.append(Message("assistant", None, [call]))
        elif kind == "ToolCallOutputItem":
            call_id = str(_field(raw, "call_id") or "")
            output = getattr(item, "output", None)
            if output is None:
                output = _field(raw, "output")
            text = output if isinstance(output, str) else _text(output)
            found = calls.get(call_id)
            if found is not None:
                if isinstance(output, str) and output.startswith(TOOL_ERROR_PREFIX):
                    found.error = output
                else:
                    found.result = output
            messages.append(Message("tool", text, tool_call_id=call_id))
        elif kind == "MessageOutputItem":
            messages.append(Message("assistant", _message_text(raw)))
        elif kind == "HandoffCallItem":
            call = ToolCall(
                str(_field(raw, "name") or "handoff"),
                _arguments(_field(raw, "arguments")),
                str(_field(raw, "call_id") or ""),
            )
            calls[call.id] = call
            ordered.append(call)
            messages.append(Message("assistant", None, [call]))
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
            prompt = token_count(getattr(raw_usage, "input_tokens", 0))
            cached = token_count(getattr(details, "cached_tokens", 0))
            tokens = token_count(getattr(raw_usage, "output_tokens", 0))
            priced.append(("openai", model, ResponseTokens(prompt, tokens, min(cached, prompt))))
    charge_unmetered(priced)
    output = getattr(result, "final_output", None)
    if not messages or messages[-1].role != "assistant" or messages[-1].tool_calls:
        messages.append(Message("assistant", _text(output)))
    return RunResult(
        output=output,
        messages=messages,
        tool_calls=ordered,
        usage=usage,
        turns=len(responses),
        latency_ms=latency_ms,
    )


def _model_name(agent: Any) -> str:
    """The model an SDK agent names (a string, or a model object's `model`)."""
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else ""


def _field(raw: Any, name: str) -> Any:
    if isinstance(raw, dict):
        return raw.get(name)
    return getattr(raw, name, None)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"_unparsed_arguments": raw}
        return parsed if isinstance(parsed, dict) else {"_unparsed_arguments": raw}
    return {}


def _message_text(raw: Any) -> str:
    parts = _field(raw, "content") or []
    if isinstance(parts, str):
        return parts
    texts = []
    for part in parts:
        text = _field(part, "text")
        if text is None:
            text = _field(part, "refusal")
        if text:
            texts.append(str(text))
    return "".join(texts)


def _text(value: Any) -> str:
    return value_text(value)

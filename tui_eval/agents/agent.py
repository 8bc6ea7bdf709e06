"""`Agent`: the built-in tool-calling loop."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

import pydantic

from tui_eval.agents.messages import Message, RunResult, input_messages
from tui_eval.agents.providers import ModelLike, resolve_model
from tui_eval.agents.providers.base import Provider
from tui_eval.agents.tools import RunContext, Tool, tool_result_text
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import cut, validation_message


class AgentRunError(TuiEvalError):
    """An agent run failed. `partial` holds the trajectory up to the failure."""

    def __init__(self, message: str, partial: RunResult | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class MaxTurnsExceeded(AgentRunError):
    """The model kept calling tools past `max_turns`."""


class TokenLimitExceeded(AgentRunError):
    """The run used more tokens than the agent's `token_limit`."""


class OutputValidationError(AgentRunError):
    """The final answer did not validate against the structured `output_type`."""


class Agent:
    """The built-in tool-calling loop.

    Example:
        >>> def add(a: int, b: int) -> int:
        ...     return a + b
        >>> agent = Agent(ScriptedProvider([call("add", {"a": 2, "b": 3}), text("5")]), tools=[add])
        >>> result = await agent.run("2 + 3?")  # doctest: +SKIP

    Args:
        model: a provider, a spec string such as `"openai:gpt-4o-mini"`, or a zero-arg
            factory of providers (resolved when the agent first runs).
        tools: plain sync or async functions.
        output_type: `str` or a pydantic model the final answer must validate against.
        max_turns: the most model responses one run may take.
        token_limit: the most tokens one run may use (else `TokenLimitExceeded`).
    """

    def __init__(
        self,
        model: ModelLike,
        *,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        instructions: str | None = None,
        output_type: Any = str,
        max_turns: int = 50,
        name: str | None = None,
        settings: dict[str, Any] | None = None,
        token_limit: int | None = None,
    ) -> None:
        self.model = model
        self.tools = [t if isinstance(t, Tool) else Tool(t) for t in tools]
        self._tools_by_name = {t.name: t for t in self.tools}
        self.instructions = instructions
        self.output_type = output_type
        self.max_turns = max_turns
        self.name = name or "agent"
        self.settings = dict(settings or {})
        self.token_limit = token_limit
        self._provider: Provider | None = None

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model!r}, tools={[t.name for t in self.tools]})"

    @property
    def provider(self) -> Provider:
        """The resolved provider (a spec string or factory is resolved once, on first use)."""
        if self._provider is None:
            self._provider = resolve_model(self.model)
        return self._provider

    def clone(self, *, model: ModelLike | None = None, **changes: Any) -> Agent:
        """A copy of this agent, using `model` instead of its own when given."""
        twin = copy.copy(self)
        twin.settings = dict(self.settings)
        twin._provider = None
        if model is not None:
            twin.model = model
        for key, value in changes.items():
            if not hasattr(twin, key):
                raise TypeError(f"Agent has no setting {key!r}")
            setattr(twin, key, value)
        return twin

    async def run(
        self,
        input: str | Sequence[Message] | Any,
        *,
        deps: Any = None,
        max_turns: int | None = None,
        output_type: Any = None,
        state: Any = None,
    ) -> RunResult:
        """Run the loop until the model answers without calling a tool. `input`: a prompt, a
        conversation or a structured value (sent as JSON); `state`: for tools' `state`.

        Raises:
            MaxTurnsExceeded: the model was still calling tools after `max_turns` responses.
            OutputValidationError: a structured output did not validate.
            ProviderError: the provider failed (after its own retries).
        """
        start = time.perf_counter()
        provider = self.provider
        limit = max_turns if max_turns is not None else self.max_turns
        out_type = output_type if output_type is not None else self.output_type
        structured = out_type is not str
        adapter = pydantic.TypeAdapter(out_type) if structured else None
        schema = adapter.json_schema() if adapter is not None else None
        messages: list[Message] = []
        if self.instructions:
            messages.append(Message("system", self.instructions))
        messages.extend(input_messages(input))
        result = RunResult(messages=messages)
        tool_defs = [t.definition for t in self.tools]

        def finish() -> RunResult:
            result.latency_ms = (time.perf_counter() - start) * 1000
            return result

        try:
            while True:
                if result.turns >= limit:
                    raise MaxTurnsExceeded(
                        f"agent exceeded max_turns={limit}: the model was still calling tools "
                        f"({', '.join(result.tool_names[-3:]) or 'none'} last)",
                        finish(),
                    )
                completion = await provider.complete(
                    list(messages), tool_defs, output_schema=schema, settings=self.settings
                )
                result.turns += 1
                result.usage = result.usage + completion.usage
                result.stop_reason = completion.stop_reason or None
                messages.append(
                    Message("assistant", completion.content, list(completion.tool_calls))
                )
                if self.token_limit is not None and result.usage.total_tokens > self.token_limit:
                    raise TokenLimitExceeded(
                        f"agent used {result.usage.total_tokens:,} tokens in {result.turns} "
                        f"turn(s), over its token_limit={self.token_limit:,}",
                        finish(),
                    )
                result.retries += completion.retries
                if not completion.tool_calls:
                    result.output = self._final_output(completion.content, adapter, finish)
                    return finish()
                ctx = RunContext(deps, messages, result.turns, state)
                for tool_call in completion.tool_calls:
                    result.tool_calls.append(tool_call)
                    tool = self._tools_by_name.get(tool_call.name)
                    if tool_call.error is not None:
                        pass  # the provider could not read the call (invalid JSON arguments)
                    elif tool is None:
                        known = ", ".join(self._tools_by_name) or "none"
                        tool_call.error = f"unknown tool {tool_call.name!r} (available: {known})"
                    else:
                        await tool.invoke(tool_call, ctx)
                    messages.append(
                        Message("tool", tool_result_text(tool_call), tool_call_id=tool_call.id)
                    )
        except AgentRunError:
            raise
        except Exception as exc:
            # Keep the trajectory so the failing sample can still be debugged.
            exc.partial = finish()  # type: ignore[attr-defined]
            raise

    @staticmethod
    def _final_output(
        content: str | None,
        adapter: pydantic.TypeAdapter[Any] | None,
        finish: Callable[[], RunResult],
    ) -> Any:
        if adapter is None:
            return content or ""
        raw = _strip_code_fence(content or "")
        try:
            return adapter.validate_json(raw)
        except pydantic.ValidationError as exc:
            details = validation_message(exc, every=True)
            shown = cut(raw, 201)
            title = adapter.json_schema().get("title", "the output type")
            raise OutputValidationError(
                f"output did not validate as {title}: {details}; got {shown!r}",
                finish(),
            ) from None


def _strip_code_fence(raw: str) -> str:
    """Models often wrap JSON in a Markdown fence; accept that."""
    stripped = raw.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        body = stripped[3:-3]
        newline = body.find("\n")
        return body[newline + 1 :] if newline >= 0 else body
    return stripped

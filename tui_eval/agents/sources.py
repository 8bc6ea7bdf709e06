"""Agent sources: all `evaluate()` accepts as "the agent" (an `Agent`, a factory of one, a
sync or async `f(input)`, an object with `run(input)`, a framework's agent) as one call. A
bare value it returns is the `RunResult`'s `output`, its usage unknown (never a 0 that a
token check would pass).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from tui_eval.agents.adapters import to_run_result
from tui_eval.agents.agent import Agent
from tui_eval.agents.messages import RunResult
from tui_eval.agents.run_spec import AgentCall, Input, RunSpec, is_async_callable
from tui_eval.util.errors import TuiEvalError


class AgentSourceError(TuiEvalError, TypeError):
    """The object given as the agent cannot be run."""


def make_runner(source: Any) -> AgentCall:
    """The per-sample call for an agent source, its kind decided once."""
    if isinstance(source, Agent) or (
        hasattr(source, "clone") and hasattr(source, "run") and hasattr(source, "model")
    ):
        return _agent_runner(source)
    adapter = _framework_adapter(source)
    if adapter is not None:
        return adapter
    own = getattr(source, "sample_runner", None)
    if callable(own) and not inspect.isclass(source):  # the adapters' wrapped agents
        runner: AgentCall = own()
        return runner
    run = getattr(source, "run", None)
    if run is not None and callable(run) and not inspect.isclass(source):
        return _callable_runner(run, owner=source)
    if callable(source):
        if _is_factory(source):
            return _factory_runner(source)
        return _callable_runner(source, owner=source)
    raise AgentSourceError(
        f"cannot run {source!r} as an agent: pass an Agent, a zero-argument factory, "
        "an async function f(input), or an object with an async run(input) method"
    )


def samples_independent(source: Any, model: Any = None) -> bool:
    """Whether each sample gets its own agent, so samples of a case may run at once."""
    if isinstance(source, Agent):
        return model is not None and callable(model) and not hasattr(model, "complete")
    return callable(source) and not hasattr(source, "run") and _is_factory(source)


def _is_factory(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return False
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(
        p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in params
    )


def _agent_runner(agent: Agent) -> AgentCall:
    async def bind(spec: RunSpec) -> AgentCall:
        # A conversation talks to one agent: cloned with the case's model once, not per turn.
        return _agent_runner(agent.clone(model=spec.model)) if spec.model is not None else run

    async def run(spec: RunSpec) -> RunResult:
        target = agent.clone(model=spec.model) if spec.model is not None else agent
        state = {} if spec.state is None else {"state": spec.state}  # an Agent-like need not know
        return await target.run(
            spec.input,
            deps=spec.deps,
            max_turns=spec.max_turns,
            output_type=spec.output_type,
            **state,
        )

    run.bind_conversation = bind  # type: ignore[attr-defined]
    return run


def _factory_runner(factory: Callable[[], Any]) -> AgentCall:
    async def build() -> AgentCall:
        built = factory()
        if inspect.isawaitable(built):
            built = await built
        return make_runner(built)

    async def bind(spec: RunSpec) -> AgentCall:
        # A conversation talks to one agent: the factory builds it once, not every turn.
        call = await build()
        return await bind_conversation(call, spec)

    async def run(spec: RunSpec) -> RunResult:
        return await (await build())(spec)

    run.bind_conversation = bind  # type: ignore[attr-defined]
    return run


async def bind_conversation(call: AgentCall, spec: RunSpec) -> AgentCall:
    """The call a conversation's turns all go to: one agent for the whole conversation."""
    bind = getattr(call, "bind_conversation", None)
    return call if bind is None else await bind(spec)


def _callable_runner(fn: Callable[[Input], Any], *, owner: Any) -> AgentCall:
    in_thread = not is_async_callable(fn)

    async def run(spec: RunSpec) -> RunResult:
        if spec.model is not None:
            raise AgentSourceError(
                f"Case(model=...) needs an Agent (or a factory returning one) to clone; got {owner!r}"
            )
        start = time.perf_counter()
        if in_thread:
            # A sync agent would block the event loop: the app's keys, Ctrl+C and timeouts
            # all wait on it. In a worker thread it can be timed out (the thread is left
            # to finish on its own; Python cannot stop it).
            value = await anyio.to_thread.run_sync(fn, spec.input, abandon_on_cancel=True)
        else:
            value = fn(spec.input)
        if inspect.isawaitable(value):
            value = await value
        return to_run_result(value, spec.input, (time.perf_counter() - start) * 1000)

    return run


def _framework_adapter(source: Any) -> AgentCall | None:
    module = type(source).__module__ or ""
    if module.startswith("pydantic_ai"):
        from tui_eval.agents.adapters.pydantic_ai import pydantic_ai_runner

        return pydantic_ai_runner(source)
    if (
        module.split(".")[0] == "agents"
        and hasattr(source, "tools")
        and hasattr(source, "handoffs")
    ):
        from tui_eval.agents.adapters import openai_agents  # an Agents SDK agent, unwrapped

        return openai_agents.wrap(source).sample_runner()
    if module.startswith("langgraph") and hasattr(source, "ainvoke"):
        from tui_eval.agents.adapters import langgraph  # a compiled graph, unwrapped

        return langgraph.wrap(source).sample_runner()
    return None

"""Offline testing helpers: scripted models and `AgentTestClient`, the evaluator API's test client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tui_eval.agents.agent import Agent
from tui_eval.agents.messages import Message, RunResult
from tui_eval.agents.providers.scripted import (
    ScriptedProvider,
    ScriptExhausted,
    ScriptStep,
    call,
    calls,
    estimate_tokens,
    text,
)


def verdict(score: float, reasoning: str, **step_options: Any) -> ScriptStep:
    """A scripted judge's reply: the `Verdict` JSON an `llm_judge` expects.

    Example:
        >>> judge = ScriptedProvider([verdict(0.9, "Polite and names the capital.")])
        >>> check = llm_judge("Polite, names the capital", model=judge)  # doctest: +SKIP

    Args:
        score: 0..1; the check passes when it reaches the judge's threshold.
        reasoning: the judge's reasons (shown as the check's reason).
        step_options: `usage=` or `delay=`, as for `text()`.
    """
    from tui_eval.checks.judge import verdict_reply

    return text(verdict_reply(score, reasoning), **step_options)


class AgentTestClient:
    """Drives an agent whose model is a `ScriptedProvider`.

    Example:
        >>> client = AgentTestClient()          # an agent with an empty script
        >>> client.mock.queue_response(Completion(content="42"))
        >>> result = await client.run("6 * 7?")  # doctest: +SKIP

    Args:
        agent: the agent under test; by default an `Agent` over an empty script.
    """

    def __init__(self, agent: Agent | None = None, **agent_options: Any) -> None:
        self.agent = agent if agent is not None else Agent(ScriptedProvider(), **agent_options)

    @property
    def mock(self) -> ScriptedProvider:
        """The agent's scripted provider, to queue responses on."""
        provider = self.agent.provider
        if not isinstance(provider, ScriptedProvider):
            raise TypeError(f"the agent's model is {provider!r}, not a ScriptedProvider")
        return provider

    async def run(self, message: str | Sequence[Message], *, deps: Any = None) -> RunResult:
        """Run the agent on one message."""
        return await self.agent.run(message, deps=deps)


__all__ = [
    "AgentTestClient",
    "ScriptExhausted",
    "ScriptStep",
    "ScriptedProvider",
    "call",
    "calls",
    "estimate_tokens",
    "text",
    "verdict",
]

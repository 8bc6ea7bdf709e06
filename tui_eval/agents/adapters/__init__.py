"""Adapters: agents built with other frameworks, and their traces, as tui-eval runs.

Each framework is an optional extra and is imported only by the adapter that runs it;
converting a framework's result object (`from_framework`) never imports the framework.
"""

from __future__ import annotations

from typing import Any

from tui_eval.agents.messages import RunResult
from tui_eval.agents.run_spec import Input


def from_framework(value: Any, input: Input, latency_ms: float) -> RunResult | None:
    """An Agents SDK, LangGraph/LangChain or pydantic-ai result as our `RunResult` (told
    apart by their types' modules); None for any other value."""
    module = type(value).__module__ or ""
    if module.startswith("pydantic_ai"):
        from tui_eval.agents.adapters import pydantic_ai

        if pydantic_ai.is_result(value):
            return pydantic_ai.from_result(value, latency_ms)
    if module.split(".")[0] == "agents":
        from tui_eval.agents.adapters import openai_agents

        if openai_agents.is_result(value):
            return openai_agents.from_result(value, input, latency_ms)
    if module.startswith("langchain") or isinstance(value, (dict, list)):
        from tui_eval.agents.adapters import langgraph

        return langgraph.from_value(value, input, latency_ms)
    return None

"""tui-eval: evaluate LLM agents with cases and checks, live in the terminal and in CI."""

from tui_eval.agents import Agent, Completion, Message, RunResult, ToolCall, Usage

__all__ = ["Agent", "Completion", "Message", "RunResult", "ToolCall", "Usage"]

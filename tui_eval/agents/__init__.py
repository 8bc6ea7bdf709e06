"""The system under test: run records, the agent loop, tools, providers and agent sources."""

from tui_eval.agents.agent import (
    Agent,
    AgentRunError,
    MaxTurnsExceeded,
    OutputValidationError,
    TokenLimitExceeded,
)
from tui_eval.agents.messages import Completion, Message, RunResult, ToolCall, Usage
from tui_eval.agents.tools import RunContext, Tool

__all__ = [
    "Agent",
    "AgentRunError",
    "Completion",
    "MaxTurnsExceeded",
    "Message",
    "OutputValidationError",
    "RunContext",
    "RunResult",
    "TokenLimitExceeded",
    "Tool",
    "ToolCall",
    "Usage",
]

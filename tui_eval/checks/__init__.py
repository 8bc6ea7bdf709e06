"""Checks: the check protocol, built-in matchers, combinators and the LLM judge."""

from tui_eval.checks.base import Check, CheckContext, CheckResult, check_name, run_check
from tui_eval.checks.choice import choice
from tui_eval.checks.combinators import all_of, any_of, weighted
from tui_eval.checks.expected import equals_expected, matches_expected, stop_reason
from tui_eval.checks.judge import Verdict, llm_judge, verdict_reply
from tui_eval.checks.matchers import (
    contains,
    equals,
    is_instance,
    matches,
    max_latency,
    max_tokens,
    max_turns,
    no_error,
    not_contains,
    regex,
    tool_called,
    tool_not_called,
    tool_sequence,
)

__all__ = [
    "Check",
    "CheckContext",
    "CheckResult",
    "Verdict",
    "all_of",
    "any_of",
    "check_name",
    "choice",
    "contains",
    "equals",
    "equals_expected",
    "is_instance",
    "llm_judge",
    "matches",
    "matches_expected",
    "max_latency",
    "max_tokens",
    "max_turns",
    "no_error",
    "not_contains",
    "regex",
    "run_check",
    "stop_reason",
    "tool_called",
    "tool_not_called",
    "tool_sequence",
    "verdict_reply",
    "weighted",
]

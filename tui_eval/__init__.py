"""tui-eval: evaluate LLM agents with cases and checks, live in the terminal and in CI.

Public names load on first use (PEP 562): `import tui_eval` and `tui-eval --help` stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AccuracyEval": "tui_eval.run.evaluators",
    "Agent": "tui_eval.agents",
    "Calibration": "tui_eval.calibration.calibrate",
    "Case": "tui_eval.core.cases",
    "CaseResult": "tui_eval.report.report",
    "Check": "tui_eval.checks",
    "CheckContext": "tui_eval.checks",
    "CheckResult": "tui_eval.checks",
    "Completion": "tui_eval.agents",
    "Diff": "tui_eval.report.report",
    "EvalDataset": "tui_eval.run.evaluators",
    "EvalExample": "tui_eval.run.evaluators",
    "EvalReport": "tui_eval.run.evaluators",
    "EvalResult": "tui_eval.run.evaluators",
    "Message": "tui_eval.agents",
    "PerformanceEval": "tui_eval.run.evaluators",
    "Report": "tui_eval.report.report",
    "RunResult": "tui_eval.agents",
    "RunSettings": "tui_eval.core.settings",
    "SampleResult": "tui_eval.report.report",
    "Suite": "tui_eval.suites",
    "ToolCall": "tui_eval.agents",
    "TrajectoryEval": "tui_eval.run.evaluators",
    "TuiEvalError": "tui_eval.util.errors",
    "Usage": "tui_eval.agents",
    "Verdict": "tui_eval.checks",
    "all_of": "tui_eval.checks",
    "any_of": "tui_eval.checks",
    "contains": "tui_eval.checks",
    "equals": "tui_eval.checks",
    "calibrate": "tui_eval.calibration.calibrate",
    "equals_expected": "tui_eval.checks",
    "compare_agents": "tui_eval.run.sequential",
    "decide": "tui_eval.run.sequential",
    "evaluate": "tui_eval.run.runner",
    "evaluate_iter": "tui_eval.run.runner",
    "http_client": "tui_eval.agents.http.client",
    "http_client_sync": "tui_eval.agents.http.client",
    "llm_judge": "tui_eval.checks",
    "matches": "tui_eval.checks",
    "matches_expected": "tui_eval.checks",
    "max_latency": "tui_eval.checks",
    "max_tokens": "tui_eval.checks",
    "max_turns": "tui_eval.checks",
    "no_error": "tui_eval.checks",
    "not_contains": "tui_eval.checks",
    "recheck": "tui_eval.run.runner",
    "regex": "tui_eval.checks",
    "run_check": "tui_eval.checks",
    "stop_reason": "tui_eval.checks",
    "tool_called": "tui_eval.checks",
    "tool_not_called": "tui_eval.checks",
    "tool_sequence": "tui_eval.checks",
    "weighted": "tui_eval.checks",
    "ScriptedUser": "tui_eval.agents.users",
    "SimulatedUser": "tui_eval.agents.users",
    "Conversation": "tui_eval.agents.messages",
    "Turn": "tui_eval.agents.messages",
    "Fault": "tui_eval.checks.faults",
    "current_state": "tui_eval.agents.state",
    "state_equals": "tui_eval.checks.conversations",
    "state_matches": "tui_eval.checks.conversations",
    "goal_reached": "tui_eval.checks.conversations",
    "every_turn": "tui_eval.checks.conversations",
    "at_turn": "tui_eval.checks.conversations",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tui_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from tui_eval.agents import Agent as Agent
    from tui_eval.agents import Completion as Completion
    from tui_eval.agents import Message as Message
    from tui_eval.agents import RunResult as RunResult
    from tui_eval.agents import ToolCall as ToolCall
    from tui_eval.agents import Usage as Usage
    from tui_eval.agents.http.client import http_client as http_client
    from tui_eval.agents.http.client import http_client_sync as http_client_sync
    from tui_eval.agents.messages import Conversation as Conversation
    from tui_eval.agents.messages import Turn as Turn
    from tui_eval.agents.state import current_state as current_state
    from tui_eval.agents.users import ScriptedUser as ScriptedUser
    from tui_eval.agents.users import SimulatedUser as SimulatedUser
    from tui_eval.calibration.calibrate import calibrate as calibrate
    from tui_eval.calibration.results import Calibration as Calibration
    from tui_eval.checks import Check as Check
    from tui_eval.checks import CheckContext as CheckContext
    from tui_eval.checks import CheckResult as CheckResult
    from tui_eval.checks import Verdict as Verdict
    from tui_eval.checks import all_of as all_of
    from tui_eval.checks import any_of as any_of
    from tui_eval.checks import contains as contains
    from tui_eval.checks import equals as equals
    from tui_eval.checks import equals_expected as equals_expected
    from tui_eval.checks import llm_judge as llm_judge
    from tui_eval.checks import matches as matches
    from tui_eval.checks import matches_expected as matches_expected
    from tui_eval.checks import max_latency as max_latency
    from tui_eval.checks import max_tokens as max_tokens
    from tui_eval.checks import max_turns as max_turns
    from tui_eval.checks import no_error as no_error
    from tui_eval.checks import not_contains as not_contains
    from tui_eval.checks import regex as regex
    from tui_eval.checks import run_check as run_check
    from tui_eval.checks import stop_reason as stop_reason
    from tui_eval.checks import tool_called as tool_called
    from tui_eval.checks import tool_not_called as tool_not_called
    from tui_eval.checks import tool_sequence as tool_sequence
    from tui_eval.checks import weighted as weighted
    from tui_eval.checks.conversations import at_turn as at_turn
    from tui_eval.checks.conversations import every_turn as every_turn
    from tui_eval.checks.conversations import goal_reached as goal_reached
    from tui_eval.checks.conversations import state_equals as state_equals
    from tui_eval.checks.conversations import state_matches as state_matches
    from tui_eval.checks.faults import Fault as Fault
    from tui_eval.core.cases import Case as Case
    from tui_eval.core.results import CaseResult as CaseResult
    from tui_eval.core.results import SampleResult as SampleResult
    from tui_eval.core.settings import RunSettings as RunSettings
    from tui_eval.report.diff import Diff as Diff
    from tui_eval.report.report import Report as Report
    from tui_eval.run.evaluators import AccuracyEval as AccuracyEval
    from tui_eval.run.evaluators import EvalDataset as EvalDataset
    from tui_eval.run.evaluators import EvalExample as EvalExample
    from tui_eval.run.evaluators import EvalReport as EvalReport
    from tui_eval.run.evaluators import EvalResult as EvalResult
    from tui_eval.run.evaluators import PerformanceEval as PerformanceEval
    from tui_eval.run.evaluators import TrajectoryEval as TrajectoryEval
    from tui_eval.run.runner import evaluate as evaluate
    from tui_eval.run.runner import evaluate_iter as evaluate_iter
    from tui_eval.run.runner import recheck as recheck
    from tui_eval.run.sequential import compare_agents as compare_agents
    from tui_eval.run.sequential import decide as decide
    from tui_eval.suites import Suite as Suite
    from tui_eval.util.errors import TuiEvalError as TuiEvalError

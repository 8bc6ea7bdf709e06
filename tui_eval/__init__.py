"""tui-eval: evaluate LLM agents with cases and checks, live in the terminal and in CI.

The public names load on first use (PEP 562), so `import tui_eval` and `tui-eval --help`
stay fast; `from tui_eval import Case` works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AccuracyEval": "tui_eval.evaluators",
    "Agent": "tui_eval.agents",
    "Calibration": "tui_eval.calibration",
    "Case": "tui_eval.cases",
    "CaseResult": "tui_eval.report",
    "Check": "tui_eval.checks",
    "CheckResult": "tui_eval.checks",
    "Completion": "tui_eval.agents",
    "Diff": "tui_eval.report",
    "EvalDataset": "tui_eval.evaluators",
    "EvalExample": "tui_eval.evaluators",
    "EvalReport": "tui_eval.evaluators",
    "EvalResult": "tui_eval.evaluators",
    "Message": "tui_eval.agents",
    "PerformanceEval": "tui_eval.evaluators",
    "Report": "tui_eval.report",
    "RunResult": "tui_eval.agents",
    "SampleResult": "tui_eval.report",
    "Suite": "tui_eval.suites",
    "ToolCall": "tui_eval.agents",
    "TrajectoryEval": "tui_eval.evaluators",
    "Usage": "tui_eval.agents",
    "Verdict": "tui_eval.checks",
    "all_of": "tui_eval.checks",
    "any_of": "tui_eval.checks",
    "contains": "tui_eval.checks",
    "equals": "tui_eval.checks",
    "calibrate": "tui_eval.calibration",
    "equals_expected": "tui_eval.checks",
    "compare_agents": "tui_eval.sequential",
    "decide": "tui_eval.sequential",
    "evaluate": "tui_eval.runner",
    "evaluate_iter": "tui_eval.runner",
    "llm_judge": "tui_eval.checks",
    "matches": "tui_eval.checks",
    "matches_expected": "tui_eval.checks",
    "max_latency": "tui_eval.checks",
    "max_tokens": "tui_eval.checks",
    "max_turns": "tui_eval.checks",
    "no_error": "tui_eval.checks",
    "not_contains": "tui_eval.checks",
    "regex": "tui_eval.checks",
    "run_check": "tui_eval.checks",
    "stop_reason": "tui_eval.checks",
    "tool_called": "tui_eval.checks",
    "tool_not_called": "tui_eval.checks",
    "tool_sequence": "tui_eval.checks",
    "weighted": "tui_eval.checks",
}

__all__ = [
    "AccuracyEval",
    "Agent",
    "Calibration",
    "Case",
    "CaseResult",
    "Check",
    "CheckResult",
    "Completion",
    "Diff",
    "EvalDataset",
    "EvalExample",
    "EvalReport",
    "EvalResult",
    "Message",
    "PerformanceEval",
    "Report",
    "RunResult",
    "SampleResult",
    "Suite",
    "ToolCall",
    "TrajectoryEval",
    "Usage",
    "Verdict",
    "all_of",
    "any_of",
    "calibrate",
    "compare_agents",
    "contains",
    "decide",
    "equals",
    "equals_expected",
    "evaluate",
    "evaluate_iter",
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
    "weighted",
]


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
    from tui_eval.agents import (
        Agent,
        Completion,
        Message,
        RunResult,
        ToolCall,
        Usage,
    )
    from tui_eval.calibration import Calibration, calibrate
    from tui_eval.cases import (
        Case,
    )
    from tui_eval.checks import (
        Check,
        CheckResult,
        Verdict,
        all_of,
        any_of,
        contains,
        equals,
        equals_expected,
        llm_judge,
        matches,
        matches_expected,
        max_latency,
        max_tokens,
        max_turns,
        no_error,
        not_contains,
        regex,
        run_check,
        stop_reason,
        tool_called,
        tool_not_called,
        tool_sequence,
        weighted,
    )
    from tui_eval.evaluators import (
        AccuracyEval,
        EvalDataset,
        EvalExample,
        EvalReport,
        EvalResult,
        PerformanceEval,
        TrajectoryEval,
    )
    from tui_eval.report import (
        CaseResult,
        Diff,
        Report,
        SampleResult,
    )
    from tui_eval.runner import (
        evaluate,
        evaluate_iter,
    )
    from tui_eval.sequential import compare_agents, decide
    from tui_eval.suites import (
        Suite,
    )

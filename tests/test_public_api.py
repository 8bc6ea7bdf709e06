"""The public API is a contract: what `from tui_eval import …` offered at f84efee still works."""

from __future__ import annotations

import subprocess
import sys

import tui_eval

# `tui_eval.__all__` as of f84efee, before the modules moved into concept packages.
PUBLIC_AT_F84EFEE = [
    "AccuracyEval", "Agent", "Calibration", "Case", "CaseResult", "Check", "CheckResult",
    "Completion", "Diff", "EvalDataset", "EvalExample", "EvalReport", "EvalResult", "Message",
    "PerformanceEval", "Report", "RunResult", "RunSettings", "SampleResult", "Suite", "ToolCall",
    "TrajectoryEval", "Usage", "Verdict", "all_of", "any_of", "calibrate", "compare_agents",
    "contains", "decide", "equals", "equals_expected", "evaluate", "evaluate_iter", "llm_judge",
    "matches", "matches_expected", "max_latency", "max_tokens", "max_turns", "no_error",
    "not_contains", "regex", "run_check", "stop_reason", "tool_called", "tool_not_called",
    "tool_sequence", "weighted",
]  # fmt: skip


def test_every_public_name_of_f84efee_is_still_exported_and_imports_from_the_root():
    missing = sorted(set(PUBLIC_AT_F84EFEE) - set(tui_eval.__all__))
    assert missing == []
    # Each name resolves from the root in a fresh interpreter (the names load lazily).
    names = ", ".join(PUBLIC_AT_F84EFEE)
    code = f"from tui_eval import {names}\nfrom tui_eval.testing import ScriptedProvider, call, text, AgentTestClient"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_documented_submodule_paths_still_import():
    from tui_eval.agents.adapters.langgraph import wrap as langgraph_wrap
    from tui_eval.agents.adapters.openai_agents import wrap as openai_agents_wrap
    from tui_eval.agents.adapters.otel import capture
    from tui_eval.stats.two_sample import reachable_margin

    assert all(map(callable, [langgraph_wrap, openai_agents_wrap, capture, reachable_margin]))


def test_the_top_level_holds_at_most_six_modules():
    from pathlib import Path

    root = Path(tui_eval.__file__).parent
    modules = {p.name for p in root.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert len(modules) <= 6, sorted(modules)


def test_python_dash_m_tui_eval_is_the_cli():
    proc = subprocess.run(
        [sys.executable, "-m", "tui_eval", "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "tui-eval run PATH" in proc.stdout, proc.stderr

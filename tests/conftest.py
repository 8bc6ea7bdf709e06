"""Shared fixtures: every test gets its own TUI_EVAL_HOME and no judge model from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolate_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("tui_eval_home")
    monkeypatch.setenv("TUI_EVAL_HOME", str(home))
    # The example suites' simulated model latency, at a tenth: same results, less waiting.
    monkeypatch.setenv("TUI_EVAL_EXAMPLE_PACE", "0.1")
    for var in ("TUI_EVAL_JUDGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"

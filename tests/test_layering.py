"""The library is headless and light: what a fresh process has loaded after using it."""

from __future__ import annotations

import json
import subprocess
import sys

# One fresh interpreter (each costs ~0.5 CPU-seconds to import the package) goes through
# the steps a user takes, and reports what it has loaded after each. Modules stay loaded,
# so "not loaded after step N" holds for step N run on its own too. Trio is unimportable
# in it, as in a plain `pip install` (a bug once built the trio backend at import);
# `scripts/smoke_http.py`, which .ci/run runs in a fresh virtualenv, sends real HTTP there.
FRESH_PROCESS = """
import contextlib, io, json, sys
sys.modules["trio"] = None

def loaded(*roots):
    return sorted(m for m in sys.modules if m.split(".")[0] in roots)

import anyio
from tui_eval import Case, evaluate

async def agent(x):
    return {"messages": [x], "answer": 1}

anyio.run(evaluate, agent, [Case("a"), Case({"q": 1})])
frameworks = loaded("agents", "langgraph", "langchain_core", "opentelemetry", "pydantic_ai")

import tui_eval.cli.commands, tui_eval.run.evaluators, tui_eval.cli.headless, tui_eval.run.ray_executor
import tui_eval.service.suite_run, tui_eval.suites, tui_eval.testing, tui_eval.agents.providers.openai
import tui_eval.agents.providers.anthropic, tui_eval.agents.http

imported = {"textual": loaded("textual"), "ray": loaded("ray")}

help_text = io.StringIO()
with contextlib.redirect_stdout(help_text), contextlib.suppress(SystemExit):
    tui_eval.cli.commands.main(["--help"])

print(json.dumps({
    "after a plain run": frameworks,
    "after importing the library": imported,
    "after --help": loaded("textual"),
    "help": help_text.getvalue(),
}))
"""


def test_the_library_its_cli_and_a_plain_run_load_no_textual_no_ray_and_no_framework():
    proc = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = json.loads(proc.stdout)
    # Running plain agents never imports the adapters' frameworks.
    assert seen["after a plain run"] == []
    # Importing the library (its CLI, headless runner, suites, Ray executor) loads neither
    # Textual nor Ray.
    assert seen["after importing the library"] == {"textual": [], "ray": []}
    # `tui-eval --help` answers without loading Textual.
    assert "tui-eval run PATH" in seen["help"]
    assert seen["after --help"] == []

"""The library is headless: importing it must not load Textual."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_library_does_not_import_textual():
    code = (
        "import sys, tui_eval, tui_eval.testing, tui_eval.cli, tui_eval.headless, tui_eval.suites, tui_eval.evaluators\n"
        "loaded = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(loaded)\n"
        "assert not loaded, loaded\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_running_plain_agents_never_imports_the_adapters_frameworks():
    code = (
        "import sys, anyio\n"
        "from tui_eval import Case, evaluate\n"
        "async def agent(x):\n"
        "    return {'messages': [x], 'answer': 1}\n"
        "anyio.run(evaluate, agent, [Case('a'), Case({'q': 1})])\n"
        "roots = {'agents', 'langgraph', 'langchain_core', 'opentelemetry', 'pydantic_ai'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in roots))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"

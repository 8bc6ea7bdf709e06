"""Hardening, as a user meets it: the headless CLI in a subprocess, its files and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tui_eval import Report

HOSTILE = """
from tui_eval import Agent, Case, Suite, contains
from tui_eval.testing import ScriptedProvider, call, text

def raw_bytes() -> bytes:
    \"\"\"Returns bytes that are not UTF-8.\"\"\"
    return b"\\xff\\x00\\xfe"

def loop():
    d = {"name": "loop"}
    d["self"] = d
    return d

async def agent(question: str):
    if question == "bytes":
        return b"\\xff\\xfe not utf-8"
    if question == "surrogate":
        return "lone \\ud800 surrogate"
    if question == "cycle":
        return loop()
    return "fine " + question

tool_agent = Agent(ScriptedProvider.factory([call("raw_bytes", {}), text("done")]), tools=[raw_bytes])

suite = Suite("hostile", agent=agent, concurrency=2, cases=[
    Case("bytes", checks=[contains("not utf-8")]),
    Case("surrogate", checks=[contains("lone")]),
    Case("cycle", checks=[lambda run: True]),
    Case("plain", checks=[contains("fine")]),
])
tools = Suite("tools", agent=tool_agent, cases=[Case("call it", checks=[contains("done")])])
"""


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui_eval.cli", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_outputs_that_are_not_json_are_stored_and_the_run_goes_on(tmp_path):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "hostile_suite.py").write_text(HOSTILE)
    result = cli(
        "run",
        "suites",
        "--headless",
        "--json",
        "all.json",
        "--junit",
        "junit.xml",
        "--markdown",
        "summary.md",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "ExceptionGroup" not in result.stderr
    assert "eval: 4/4 cases passed" in result.stdout and "eval: 1/1 cases passed" in result.stdout
    report = Report.load(tmp_path / "all.json")
    outputs = {c.name.split(" / ")[-1]: c.samples[0].output for c in report.cases}
    assert outputs["bytes"] == repr(b"\xff\xfe not utf-8")
    assert outputs["surrogate"] == "lone \\ud800 surrogate"
    assert outputs["cycle"] == {"name": "loop", "self": "<circular reference>"}
    tool_call = next(c for c in report.cases if c.name.endswith("call it")).samples[0].run
    assert tool_call.tool_calls[0].result == repr(b"\xff\x00\xfe")
    ET.parse(tmp_path / "junit.xml")
    assert "hostile" in (tmp_path / "summary.md").read_text()
    # The journals read back: nothing to resume, and the history lists both runs.
    assert cli("resume", cwd=tmp_path).stdout.startswith("nothing to resume")
    history = cli("history", cwd=tmp_path)
    assert history.stdout.count("finished") == 2, history.stdout
    journal = next(
        Path(os.environ["TUI_EVAL_HOME"]).glob("projects/*/runs/*hostile*/journal.jsonl")
    )
    assert all(json.loads(line) for line in journal.read_text().splitlines())

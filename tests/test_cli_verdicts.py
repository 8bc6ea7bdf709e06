"""What the headless CLI concludes: verdicts that must not lie (a case never reached is not
"removed", a run that ran nothing is not a pass), the reports it writes even then, and the
messages and usage errors a user or a CI log reads."""

from __future__ import annotations

from pathlib import Path

from tests.cli_in_process import Completed
from tests.cli_in_process import cli as run_cli
from tui_eval import Report

SUITES = """
import os
from tui_eval import Case, Suite, contains

WRONG = set(os.environ.get("WRONG", "").split(","))
SKIP = set(os.environ.get("SKIP", "").split(","))

async def agent(question: str) -> str:
    return "wrong" if question in WRONG else "answer to " + question

alpha = Suite("alpha", agent=agent, concurrency=1, skip="no API key" if "alpha" in SKIP else None, cases=[
    Case(name, checks=[contains("answer")]) for name in ["a1", "a2", "a3", "a4", "a5"]
])
beta = Suite("beta", agent=agent, skip="no API key" if "beta" in SKIP else None, cases=[
    Case(name, checks=[contains("answer")]) for name in ["b1", "b2"]
])
"""

NOTHING_RAN = 5
"""The exit code of a run that ran no case (pytest's "no tests collected")."""


def project(tmp_path: Path) -> Path:
    (tmp_path / "suites").mkdir(exist_ok=True)
    (tmp_path / "suites" / "pair_suite.py").write_text(SUITES)
    return tmp_path


def cli(*args: str, cwd: Path, **env: str) -> Completed:
    return run_cli(*args, cwd=cwd, env=env)


# -- #35 item 1: --fail-fast ----------------------------------------------------------------
def test_fail_fast_does_not_call_the_cases_it_never_reached_removed(tmp_path):
    root = project(tmp_path)
    assert cli("run", "suites", "--headless", "--save-baseline", cwd=root).returncode == 0
    args = ["run", "suites/pair_suite.py", "--headless", "--fail-fast"]
    stopped = cli(*args, "--fail-on", "removed", cwd=root, WRONG="a2")
    assert "0 removed" in stopped.stdout and "- removed" not in stopped.stdout, stopped.stdout
    assert "baseline case(s) removed" not in stopped.stdout
    assert stopped.returncode == 0, stopped.stdout
    # Saving its baseline keeps the cases it never reached.
    saved = cli(*args, "--save-baseline", cwd=root, WRONG="a2")
    assert saved.returncode == 1
    kept = Report.load(root / "suites" / "__baselines__" / "alpha.json")
    assert sorted(c.name for c in kept.cases) == ["a1", "a2", "a3", "a4", "a5"]
    assert not next(c for c in kept.cases if c.name == "a2").passed

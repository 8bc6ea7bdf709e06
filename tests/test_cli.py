"""The headless CLI, run as a user runs it, with its exit codes (in this process, except
where a test is about the process: kill, Ctrl-C, start-up)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.cli_in_process import cli
from tui_eval import Report

SUITE = """
import os
from pathlib import Path
from tui_eval import Case, Suite, contains
import anyio

LOG = Path(__file__).with_name("calls.log")
DELAY = float(os.environ.get("AGENT_DELAY", "0"))
WRONG = os.environ.get("WRONG_CASE", "")

async def agent(question: str) -> str:
    with LOG.open("a") as handle:
        handle.write(question + "\\n")
    await anyio.sleep(DELAY)
    return "wrong" if question == WRONG else f"answer to {question}"

suite = Suite("demo", agent=agent, concurrency=1,
              cases=[Case(f"q{i}", checks=[contains("answer")]) for i in range(N)])
"""


def make_suite(folder: Path, cases: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "demo_suite.py"
    path.write_text(SUITE.replace("N)", f"{cases})"))
    return path


def test_good_suite_runs_beside_broken_ones(tmp_path):
    make_suite(tmp_path / "suites")
    (tmp_path / "suites" / "broken.py").write_text("from tui_eval import Suite\nsuite = Suite(\n")
    (tmp_path / "suites" / "bad.yaml").write_text(
        "model: openai:x\ncases:\n  - name: typo\n    input: a\n    samples: lots\n"
    )
    result = cli("run", "suites", "--headless", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "eval: 3/3 cases passed (100%)" in result.stdout
    assert "broken.py:2: syntax error" in result.stderr
    assert "bad.yaml: case 1 ('typo'): field 'samples'" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_exit_codes_and_exports(tmp_path):
    make_suite(tmp_path / "suites")
    ok = cli(
        "run",
        "suites",
        "--headless",
        "--junit",
        "j.xml",
        "--json",
        "r.json",
        "--markdown",
        "s.md",
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    failing = cli(
        "run", "suites", "--headless", "--junit", "j2.xml", cwd=tmp_path, env={"WRONG_CASE": "q1"}
    )
    assert failing.returncode == 1
    root = ET.parse(tmp_path / "j2.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["q0", "q1", "q2"]
    failure = cases[1].find("failure")
    assert failure is not None and "expected 'answer' in output, got 'wrong'" in failure.get(
        "message"
    )
    assert root.get("tests") == "3" and root.get("failures") == "1"
    assert Report.load(tmp_path / "r.json").passed
    assert "| ✓ | q0 | 1/1 | 100% |" in (tmp_path / "s.md").read_text()


def test_usage_errors_exit_2(tmp_path):
    assert cli("run", "nowhere", "--headless", cwd=tmp_path).returncode == 2
    bad_flag = cli("run", "--concurrency", "0", cwd=tmp_path)
    assert bad_flag.returncode == 2 and "must be at least 1" in bad_flag.stderr


def test_baseline_regression_then_compare(tmp_path):
    make_suite(tmp_path / "suites")
    saved = cli(
        "run", "suites", "--headless", "--save-baseline", "--json", "before.json", cwd=tmp_path
    )
    assert saved.returncode == 0, saved.stderr
    baseline = tmp_path / "suites" / "__baselines__" / "demo.json"
    assert baseline.exists() and "baseline saved to" in saved.stdout
    regressed = cli(
        "run",
        "suites",
        "--headless",
        "--json",
        "after.json",
        cwd=tmp_path,
        env={"WRONG_CASE": "q2"},
    )
    assert regressed.returncode == 1
    assert "1 regression(s)" in regressed.stdout and "✗ regressed   q2" in regressed.stdout
    compared = cli("compare", "after.json", "before.json", cwd=tmp_path)
    assert compared.returncode == 1 and "✗ regressed   q2" in compared.stdout
    assert cli("compare", "before.json", "before.json", cwd=tmp_path).returncode == 0


def test_corrupt_baseline_is_an_error_and_kept(tmp_path):
    make_suite(tmp_path / "suites")
    baseline = tmp_path / "suites" / "__baselines__" / "demo.json"
    baseline.parent.mkdir(parents=True)
    baseline.write_text('{"kind": "tui-eval-report", "schema_version": 1, "rep')
    result = cli("run", "suites", "--headless", "--save-baseline", cwd=tmp_path)
    assert result.returncode == 2
    assert "suites/__baselines__/demo.json: not valid JSON" in result.stderr
    assert baseline.read_text().endswith('"rep')


def test_filter_samples_and_history(tmp_path):
    make_suite(tmp_path / "suites", cases=12)
    result = cli("run", "suites", "--headless", "--filter", "q1", "--samples", "2", cwd=tmp_path)
    assert result.returncode == 0
    assert "eval: 3/3 cases passed (100%) · 6 samples" in result.stdout  # q1, q10, q11
    history = cli("history", cwd=tmp_path)
    assert (
        "finished" in history.stdout and "demo" in history.stdout and "3/3 cases" in history.stdout
    )


def test_kill_then_resume_runs_only_missing_samples(tmp_path):
    make_suite(tmp_path / "suites", cases=20)
    env = {**os.environ, "AGENT_DELAY": "0.1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval", "run", "suites", "--headless"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    home = Path(os.environ["TUI_EVAL_HOME"])
    deadline = time.monotonic() + 30
    journaled: list[str] = []
    while time.monotonic() < deadline:
        journals = list(home.glob("projects/*/runs/*/journal.jsonl"))
        if journals:
            journaled = [
                json.loads(line)["sample"]["case_name"]
                for line in journals[0].read_text().splitlines()
                if '"kind":"sample"' in line
            ]
            if len(journaled) >= 5:
                break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 5 <= len(journaled) < 20
    resumed = cli("resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "eval: 20/20 cases passed (100%) · 20 samples" in resumed.stdout
    calls = (tmp_path / "suites" / "calls.log").read_text().split()
    # Samples journaled before the kill were not run again; at most the in-flight one was.
    for name in journaled:
        assert calls.count(name) == 1, name
    assert len(calls) <= 21 and set(calls) == {f"q{i}" for i in range(20)}
    assert cli("resume", cwd=tmp_path).stdout.startswith("nothing to resume")


def test_recheck_uses_saved_outputs_without_the_agent(tmp_path):
    suite = make_suite(tmp_path / "suites")
    assert cli("run", "suites", "--headless", "--json", "r.json", cwd=tmp_path).returncode == 0
    log = tmp_path / "suites" / "calls.log"
    calls = log.read_text()
    suite.write_text(suite.read_text().replace('contains("answer")', 'contains("answer to q0")'))
    result = cli("recheck", "r.json", "suites", "--json", "re.json", cwd=tmp_path)
    assert result.returncode == 1
    assert "eval: 1/3 cases passed" in result.stdout and "2 regression(s)" in result.stdout
    assert log.read_text() == calls  # the agent was not called
    assert (
        Report.load(tmp_path / "re.json")
        .cases[1]
        .samples[0]
        .checks[0]
        .reason.startswith("expected 'answer to q0'")
    )


# `tui-eval --help` never loading Textual: tests/test_layering.py (one fresh process).


def test_ctrl_c_keeps_the_partial_report(tmp_path):
    make_suite(tmp_path / "suites", cases=40)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui_eval",
            "run",
            "suites",
            "--headless",
            "--json",
            "partial.json",
        ],
        cwd=tmp_path,
        env={**os.environ, "AGENT_DELAY": "0.05"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "suites" / "calls.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 5):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "interrupted (Ctrl+C): stopping the run" in err
    assert "run cancelled: kept" in out and "Traceback" not in err
    report = Report.load(tmp_path / "partial.json")
    assert report.cancelled and 4 <= len(report.samples) < 40
    # A cancelled run is not lost: `resume` finishes it.
    resumed = cli("resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "eval: 40/40 cases passed" in resumed.stdout


def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path, monkeypatch, capsys):
    """`tui-eval run … | head -1`: once the reader is gone, the command stops like any Unix
    tool — no error message, no traceback — and what it ran is kept."""
    from tui_eval.cli.commands import main

    make_suite(tmp_path / "suites")
    monkeypatch.chdir(tmp_path)
    for args in (["run", "suites", "--headless"], ["history"], ["--help"]):
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader left
        closed = open(write_end, "w", buffering=1)  # noqa: SIM115 - closed below
        real_stdout, sys.stdout = sys.stdout, closed
        try:
            code = main(args)
        except SystemExit as exit_:  # argparse's --help
            code = exit_.code
        finally:
            sys.stdout = real_stdout
        closed.close()  # what was left in its buffer goes nowhere, without an error
        assert code == 1, args
        err = capsys.readouterr().err
        assert "BrokenPipe" not in err and "Traceback" not in err and "Broken pipe" not in err
    assert "finished" in cli("history", cwd=tmp_path).stdout

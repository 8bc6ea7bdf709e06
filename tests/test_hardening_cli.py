"""Hardening, as a user meets it: the headless CLI in a subprocess, its files and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_cli import cli
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


SLOW = """
import os
from pathlib import Path
from tui_eval import Case, Suite, contains
import anyio

LOG = Path(__file__).with_name("calls.log")
DELAY = float(os.environ.get("AGENT_DELAY", "0"))
GATE = os.environ.get("AGENT_GATE")  # a file: when set, calls wait until it exists
HOLD = int(os.environ.get("AGENT_HOLD_AFTER", "0"))  # after this many calls, new ones wait

async def agent(question: str) -> str:
    await anyio.sleep(DELAY)
    # Held until the test stops the process: the run cannot finish first, however slowly
    # the test gets to send its signal.
    while HOLD and LOG.exists() and len(LOG.read_text().split()) >= HOLD:
        await anyio.sleep(0.01)
    if GATE:
        LOG.with_name("entered.log").touch()  # a call has started: the run holds its lock
    while GATE and not Path(GATE).exists():
        await anyio.sleep(0.01)
    with LOG.open("a") as handle:
        handle.write(question + "\\n")
    return "answer to " + question

first = Suite("first", agent=agent, concurrency=2,
              cases=[Case(f"a{i}", checks=[contains("answer")]) for i in range(COUNT)])
second = Suite("second", agent=agent, concurrency=2,
               cases=[Case(f"b{i}", checks=[contains("answer")]) for i in range(COUNT)])
"""


def slow_suites(folder: Path, count: int = 20) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "slow_suite.py").write_text(SLOW.replace("COUNT", str(count)))
    return folder


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().split() if log.exists() else []


def start(
    tmp_path: Path, *args: str, delay: float = 0.05, hold_after: int = 0, **popen
) -> subprocess.Popen[str]:
    """`tui-eval run suites --headless ARGS` in a process; with `hold_after`, the agent
    calls after that many wait until the process is stopped."""
    return subprocess.Popen(
        [sys.executable, "-m", "tui_eval", "run", "suites", "--headless", *args],
        cwd=tmp_path,
        env={**os.environ, "AGENT_DELAY": str(delay), "AGENT_HOLD_AFTER": str(hold_after)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def wait_for_calls(
    folder: Path, count: int, proc: subprocess.Popen[str], timeout: float = 180
) -> None:
    """Wait until the agent was called `count` times (a loaded machine may take long to
    start a process: the timeout only ends a hung test, and says so); a process that ended
    first fails the test at once, with what it printed."""
    deadline = time.monotonic() + timeout
    while len(calls(folder)) < count:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the run ended after {len(calls(folder))} calls: {out}{err}")
        assert time.monotonic() < deadline, f"{len(calls(folder))} calls after {timeout} s"
        time.sleep(0.01)


def assert_each_once(folder: Path, expected: set[str]) -> None:
    seen = calls(folder)
    assert set(seen) == expected
    duplicated = sorted({name for name in seen if seen.count(name) > 1})
    # A sample in flight when the process died may run again; a journaled one never does.
    assert len(duplicated) <= 2, duplicated


import signal  # noqa: E402


def test_sigterm_is_like_ctrl_c_and_every_suite_of_the_run_resumes(tmp_path):
    folder = slow_suites(tmp_path / "suites")
    proc = start(tmp_path, "--json", "partial.json", "--markdown", "partial.md", hold_after=6)
    wait_for_calls(folder, 6, proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "interrupted" in err and "Traceback" not in err
    assert "run cancelled: kept" in out and "tui-eval resume" in out
    partial = Report.load(tmp_path / "partial.json")
    assert partial.cancelled and 4 <= len(partial.samples) < 40
    assert (tmp_path / "partial.md").exists()
    # Both suites — the interrupted one and the one that never started — resume.
    resumed = cli("resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "eval: 20/20 cases passed" in resumed.stdout
    assert resumed.stdout.count("eval: 20/20 cases passed") == 2
    assert_each_once(folder, {f"a{i}" for i in range(20)} | {f"b{i}" for i in range(20)})
    assert cli("resume", cwd=tmp_path).stdout.startswith("nothing to resume")


def test_a_killed_multi_suite_run_resumes_every_suite(tmp_path):
    folder = slow_suites(tmp_path / "suites")
    proc = start(tmp_path, hold_after=6)
    wait_for_calls(folder, 6, proc)
    proc.kill()
    proc.wait()
    resumed = cli("resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.count("eval: 20/20 cases passed") == 2
    assert_each_once(folder, {f"a{i}" for i in range(20)} | {f"b{i}" for i in range(20)})


def test_resume_writes_the_reports_the_run_was_started_with(tmp_path):
    folder = slow_suites(tmp_path / "suites", count=8)
    exports = ("--json", "all.json", "--junit", "j.xml", "--csv", "s.csv", "--markdown", "s.md")
    # The first suite finishes (8 calls), the second is killed after 3 of its own.
    proc = start(tmp_path, *exports, hold_after=11)
    wait_for_calls(folder, 11, proc)
    proc.kill()
    proc.wait()
    assert not (tmp_path / "all.json").exists()
    resumed = cli("resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "all.json").exists(), resumed.stdout + resumed.stderr
    # Every suite of the invocation is in the files: the one resumed and the one that had
    # finished before the kill.
    report = Report.load(tmp_path / "all.json")
    assert sorted((c.suite, c.name) for c in report.cases) == sorted(
        [("first", f"a{i}") for i in range(8)] + [("second", f"b{i}") for i in range(8)]
    )
    assert report.passed and not report.cancelled
    junit = ET.parse(tmp_path / "j.xml").getroot()
    assert junit.get("tests") == "16" and junit.get("failures") == "0"
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 17
    assert "first" in (tmp_path / "s.md").read_text()
    assert "report written to all.json" in resumed.stderr


def test_two_resumes_at_once_the_second_refuses(tmp_path):
    folder = slow_suites(tmp_path / "suites", count=10)
    proc = start(tmp_path, hold_after=3)
    wait_for_calls(folder, 3, proc)
    proc.kill()
    proc.wait()
    gate = tmp_path / "gate"
    first = subprocess.Popen(
        [sys.executable, "-m", "tui_eval", "resume"],
        cwd=tmp_path,
        # The first resume's agent calls wait at the gate, so it is certainly still running
        # (and holding its lock) when the second starts, however loaded the machine is.
        env={**os.environ, "AGENT_DELAY": "0", "AGENT_GATE": str(gate)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock_taken = tmp_path / "suites" / "entered.log"
    deadline = time.monotonic() + 180
    while not lock_taken.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lock_taken.exists(), first.stderr.read() if first.poll() is not None else "hung"
    second = cli("resume", cwd=tmp_path)
    gate.touch()
    _out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert second.returncode == 2 and "another tui-eval process" in second.stderr
    assert_each_once(folder, {f"a{i}" for i in range(10)} | {f"b{i}" for i in range(10)})


def test_a_damaged_journal_resumes_every_sample_exactly_once(tmp_path):
    folder = slow_suites(tmp_path / "suites", count=8)
    proc = start(tmp_path, hold_after=5)
    wait_for_calls(folder, 5, proc)
    proc.kill()
    proc.wait()
    journal = sorted(
        Path(os.environ["TUI_EVAL_HOME"]).glob("projects/*/runs/*first*/journal.jsonl")
    )[0]
    lines = journal.read_bytes().splitlines(keepends=True)
    header, samples = lines[0], lines[1:]
    assert len(samples) >= 3
    damaged = [header, samples[0], samples[0], b"%%% garbage %%%\n", *samples[1:], b'{"kind": "sam']
    journal.write_bytes(b"".join(damaged))
    resumed = cli("resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    report_path = journal.with_name("report.json")
    report = Report.load(report_path)
    names = [s.case_name for s in report.samples]
    assert sorted(names) == sorted(f"a{i}" for i in range(8))
    # The journal reads cleanly after the resume: the torn line did not swallow the next one.
    from tui_eval.service.store import read_journal_samples

    done = read_journal_samples(journal)
    assert sorted(done) == sorted(f"a{i}" for i in range(8))
    assert all(len(samples) == 1 for samples in done.values())


def _limit_file_size() -> None:
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2500, 2500))


def test_disk_full_while_journaling_stops_cleanly_and_stays_resumable(tmp_path):
    folder = slow_suites(tmp_path / "suites", count=20)
    proc = start(
        tmp_path,
        "--json",
        "big.json",
        "--markdown",
        "small.md",
        delay=0.0,
        preexec_fn=_limit_file_size,
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    assert "cannot write the journal" in err and "journal.jsonl" in err
    assert "eval:" in out  # the summary of what ran
    assert (tmp_path / "small.md").exists()  # an export small enough to write
    assert "big.json" in err  # the one that could not be, named
    resumed = cli("resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.count("eval: 20/20 cases passed") == 2
    assert_each_once(folder, {f"a{i}" for i in range(20)} | {f"b{i}" for i in range(20)})


def test_a_baseline_with_duplicate_cases_is_named_kept_and_exports_still_written(tmp_path):
    folder = slow_suites(tmp_path / "suites", count=3)
    baselines = folder / "__baselines__"
    baselines.mkdir()
    from tui_eval.core.results import CaseResult, SampleResult

    twice = [CaseResult("a0", [SampleResult("a0", 0, "passed")], planned=1)] * 2
    Report("first", twice).save(baselines / "first.json")
    before = (baselines / "first.json").read_bytes()
    result = cli(
        "run",
        "suites/slow_suite.py",
        "--headless",
        "--save-baseline",
        "--junit",
        "j.xml",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "first.json" in result.stderr and "duplicate case names ['a0']" in result.stderr
    assert (baselines / "first.json").read_bytes() == before
    assert (tmp_path / "j.xml").exists()


def test_recheck_against_a_suite_without_the_reports_cases_is_an_error(tmp_path):
    folder = slow_suites(tmp_path / "suites", count=2)
    Report("first", []).save(tmp_path / "empty.json")
    from tui_eval.core.results import CaseResult, SampleResult

    other = [CaseResult("zzz", [SampleResult("zzz", 0, "passed")], planned=1)]
    Report("first", other).save(tmp_path / "other.json")
    result = cli("recheck", "other.json", str(folder / "slow_suite.py"), cwd=tmp_path)
    assert result.returncode == 2
    assert "none of the 1 cases of other.json is in suite 'first'" in result.stderr


LEAKY = """
from tui_eval import Agent, Case, Suite, contains
from tui_eval.testing import ScriptedProvider, call, text
import os

KEY = os.environ["ACME_API_KEY"]

def lookup(city: str) -> str:
    \"\"\"Looks a city up.\"\"\"
    raise RuntimeError(f"auth failed with key {KEY}")

echoing = Agent(
    ScriptedProvider.factory([call("lookup", {"city": KEY}), text(f"my key is {KEY}")]),
    tools=[lookup],
)

async def plain(question: str) -> str:
    return {"note": f"the key {KEY} again", "nested": [KEY]}

suite = Suite("leaky", agent=echoing, cases=[Case("tell me", checks=[contains("nothing")])])
other = Suite("leaky2", agent=plain, cases=[Case("again", checks=[contains("zzz")])])
"""


def test_an_api_key_from_the_environment_lands_in_no_artefact(tmp_path):
    key = "sk-acme-" + "7" * 32
    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / "leaky_suite.py").write_text(LEAKY)
    (folder / "broken_suite.py").write_text(
        "import os\nfrom tui_eval import Suite\nraise RuntimeError('cannot use ' + os.environ['ACME_API_KEY'])\n"
    )
    env = {"ACME_API_KEY": key}
    run = cli(
        "run",
        "suites",
        "--headless",
        "--save-baseline",
        "--json",
        "all.json",
        "--junit",
        "j.xml",
        "--markdown",
        "s.md",
        cwd=tmp_path,
        env=env,
    )
    assert run.returncode == 2  # the broken file
    assert "cannot use ***" in run.stderr
    history = cli("history", cwd=tmp_path, env=env)
    artefacts = {
        "stdout": run.stdout,
        "stderr": run.stderr,
        "history": history.stdout,
        **{
            str(path): path.read_text(errors="replace")
            for path in [
                *tmp_path.rglob("*.json"),
                *tmp_path.rglob("*.xml"),
                *tmp_path.rglob("*.md"),
            ]
        },
        **{
            str(path): path.read_text(errors="replace")
            for path in Path(os.environ["TUI_EVAL_HOME"]).rglob("*")
            if path.is_file()
        },
    }
    assert len(artefacts) > 8
    leaked = [name for name, body in artefacts.items() if key in body]
    assert not leaked, leaked
    assert "***" in (tmp_path / "all.json").read_text()


def test_control_characters_in_names_are_printed_visibly(tmp_path):
    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / "names_suite.py").write_text(
        "from tui_eval import Case, Suite, contains\n"
        "async def agent(q):\n    return 'no'\n"
        "def check(run):\n    return False\n"
        "check.name = 'bad\\x07check'\n"
        "suite = Suite('evil\\x1b]0;pwned\\x07suite', agent=agent, cases=["
        "Case('q', name='case\\x1b[31m\\x00\\r\\x07x', checks=[check, contains('yes')])])\n"
    )
    result = cli("run", "suites", "--headless", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    for stream in (result.stdout, result.stderr):
        assert not any(ch in stream for ch in "\x1b\x07\x00\r"), repr(stream)
    assert "case␛[31m" in result.stdout and "evil␛]0;pwned␇suite" in result.stdout


def test_a_suite_name_never_writes_a_baseline_outside_its_folder(tmp_path):
    from tui_eval import Suite

    for name in ("../../escape", "/etc/passwd", "a/b\\\\c", "..", ".hidden", ""):
        suite = Suite(name or "x", agent=print)
        suite.path = tmp_path / "suites" / "s.py"
        target = suite.baseline_path.resolve()
        assert target.parent == (tmp_path / "suites" / "__baselines__").resolve(), (name, target)
        assert target.suffix == ".json"


@pytest.mark.slow  # kills real processes at random points: .ci/run runs it
def test_kill_trials_lose_and_duplicate_nothing():
    """bench/kill_trials.py with two trials (the note has the figure for twenty)."""
    script = Path(__file__).parents[1] / "bench" / "kill_trials.py"
    result = subprocess.run(
        [sys.executable, str(script), "--trials", "2", "--seed", "7"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kills: 0 lost, 0 duplicated" in result.stdout

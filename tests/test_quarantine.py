"""Quarantine: a flaky case runs and shows but does not gate, until it expires or passes
often enough; and `tui-eval failures` groups a saved report's failures."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.cli_in_process import cli

SUITE = """
from pathlib import Path
from tui_eval import Case, Suite, contains

MODE = Path(__file__).with_name("mode.txt")

async def agent(question: str) -> str:
    if question == "flaky" and MODE.read_text().strip() == "fail":
        return "nope"
    return "ok " + question

suite = Suite("demo", agent=agent, cases=[
    Case("good", checks=[contains("ok")]),
    Case("flaky", checks=[contains("ok")]),
])
"""


def make(tmp_path: Path, mode: str = "fail") -> Path:
    folder = tmp_path / "suites"
    folder.mkdir(exist_ok=True)
    (folder / "demo_suite.py").write_text(SUITE)
    (folder / "mode.txt").write_text(mode)
    return folder


def set_mode(tmp_path: Path, mode: str) -> None:
    (tmp_path / "suites" / "mode.txt").write_text(mode)


def run(tmp_path: Path, *extra: str):
    return cli("run", "suites", "--headless", "--junit", "j.xml", *extra, cwd=tmp_path)


def skipped(tmp_path: Path) -> dict[str, str]:
    root = ET.parse(tmp_path / "j.xml").getroot()
    return {
        case.get("name"): case.find("skipped").get("message")
        for case in root.iter("testcase")
        if case.find("skipped") is not None
    }


def quarantine_file(tmp_path: Path) -> Path:
    return tmp_path / "suites" / "__baselines__" / "quarantine.json"


def test_a_quarantined_failing_case_does_not_gate_until_it_passes_n_runs(tmp_path):
    make(tmp_path)
    assert run(tmp_path).returncode == 1  # the flaky case fails the run
    made = cli(
        "quarantine", "flaky", "--reason", "the judge flips", "--release-after", "2", cwd=tmp_path
    )
    assert made.returncode == 0, made.stderr
    assert "quarantined 'flaky' of 'demo'" in made.stdout
    stored = json.loads(quarantine_file(tmp_path).read_text())
    assert stored["suites"]["demo"]["flaky"]["reason"] == "the judge flips"

    failing = run(tmp_path, "--markdown", "s.md")
    assert failing.returncode == 0, failing.stdout + failing.stderr
    summary = (tmp_path / "s.md").read_text()
    assert "**Quarantined** (they ran, and do not gate): 1" in summary
    assert summary.startswith("## ✅ demo")  # the heading agrees with the exit code
    assert "**Failure modes** (1, new first)" in summary
    assert "quarantined (does not gate): flaky failed — the judge flips" in failing.stdout
    assert skipped(tmp_path) == {"flaky": "quarantined: the judge flips"}
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.get("failures") == "0" and root.get("skipped") == "1"

    set_mode(tmp_path, "pass")
    first = run(tmp_path)
    assert first.returncode == 0 and "released" not in first.stdout
    second = run(tmp_path)
    assert second.returncode == 0
    assert "flaky: released from quarantine after 2 passing run(s) in a row" in second.stdout
    assert not quarantine_file(tmp_path).exists()  # nothing left in it

    set_mode(tmp_path, "fail")
    assert run(tmp_path).returncode == 1  # it gates again
    assert skipped(tmp_path) == {}


def test_a_failing_run_starts_the_count_again(tmp_path):
    make(tmp_path, "pass")
    cli("quarantine", "flaky", "--reason", "r", "--release-after", "2", cwd=tmp_path)
    run(tmp_path)
    set_mode(tmp_path, "fail")
    run(tmp_path)
    entry = json.loads(quarantine_file(tmp_path).read_text())["suites"]["demo"]["flaky"]
    assert entry["passing_runs"] == 0


def test_a_quarantine_past_its_until_gates_again_and_says_so(tmp_path):
    make(tmp_path)
    yesterday = dt.date.today() - dt.timedelta(days=1)
    path = quarantine_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "suites": {
                    "demo": {
                        "flaky": {"reason": "r", "since": "2026-01-01", "until": str(yesterday)}
                    }
                },
            }
        )
    )
    result = run(tmp_path)
    assert result.returncode == 1
    assert f"flaky: quarantine ended on {yesterday}; it gates again" in result.stdout


def test_quarantine_usage_errors_name_the_problem(tmp_path):
    make(tmp_path)
    missing = cli("quarantine", "nope", "--reason", "r", cwd=tmp_path)
    assert missing.returncode == 2 and "no case named 'nope'" in missing.stderr
    no_reason = cli("quarantine", "flaky", cwd=tmp_path)
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr
    past = cli("quarantine", "flaky", "--reason", "r", "--until", "2001-01-01", cwd=tmp_path)
    assert past.returncode == 2 and "in the past" in past.stderr
    bad = cli("quarantine", "flaky", "--reason", "r", "--until", "soon", cwd=tmp_path)
    assert bad.returncode == 2 and "not a date" in bad.stderr
    assert not quarantine_file(tmp_path).exists()
    released = cli("quarantine", "flaky", "--release", cwd=tmp_path)
    assert released.returncode == 2 and "not quarantined" in released.stderr


def test_failures_command_groups_and_compares(tmp_path):
    make(tmp_path)
    cli("run", "suites", "--headless", "--json", "base.json", cwd=tmp_path)
    (tmp_path / "suites" / "mode.txt").write_text("fail")
    cli("run", "suites", "--headless", "--json", "now.json", cwd=tmp_path)
    shown = cli("failures", "now.json", "--against", "base.json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "1 failed sample(s) in 1 mode(s)" in shown.stdout
    assert "contains: expected ‹…› in output, got ‹…›" in shown.stdout
    written = cli("failures", "now.json", "--json", "modes.json", cwd=tmp_path)
    assert written.returncode == 0
    data = json.loads((tmp_path / "modes.json").read_text())
    assert data["failed"] == 1 and data["modes"][0]["cases"] == ["flaky"]
    markdown = cli("failures", "now.json", "--markdown", cwd=tmp_path)
    assert markdown.stdout.startswith("| samples | cases | failure |")
    broken = cli("failures", "nowhere.json", cwd=tmp_path)
    assert broken.returncode == 2 and "nowhere.json" in broken.stderr


def test_a_case_at_half_over_five_recorded_runs_is_flaky_and_a_stable_one_is_not(tmp_path):
    from tui_eval.service.flaky import case_histories
    from tui_eval.service.store import RunHistory

    make(tmp_path)
    for mode in ("fail", "pass", "fail", "pass", "fail"):
        set_mode(tmp_path, mode)
        cli("run", "suites", "--headless", cwd=tmp_path)
    found = case_histories(RunHistory(tmp_path), "demo", {"good": 1.0, "flaky": 1.0})
    assert len(found["flaky"].runs) == 5 and found["flaky"].flaky
    assert found["flaky"].flips == 4
    assert not found["good"].flaky

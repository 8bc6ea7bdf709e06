"""What the headless CLI concludes: verdicts that must not lie (a case never reached is not
"removed", a run that ran nothing is not a pass), the reports it writes even then, and the
messages and usage errors a user or a CI log reads."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

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


# -- #35 item 2: a run where nothing ran ------------------------------------------------------
EXPORTS = ("--json", "r.json", "--junit", "j.xml", "--markdown", "m.md", "--csv", "c.csv")


def assert_empty_exports(root: Path) -> None:
    report = Report.load(root / "r.json")
    assert report.cases == []
    junit = ET.parse(root / "j.xml").getroot()
    assert junit.get("tests") == "0" and junit.findall(".//testcase") == []
    assert "nothing ran" in (root / "m.md").read_text()
    assert (root / "c.csv").read_text().startswith("suite,case,index")


def test_a_filter_that_matches_nothing_fails_and_still_writes_empty_reports(tmp_path):
    root = project(tmp_path)
    result = cli("run", "suites", "--headless", "--filter", "zzz", *EXPORTS, cwd=root)
    assert result.returncode == NOTHING_RAN, result.stdout + result.stderr
    assert "nothing ran" in result.stdout
    assert_empty_exports(root)
    from tui_eval.cli.commands import DESCRIPTION

    assert f"{NOTHING_RAN} nothing ran" in DESCRIPTION


def test_a_run_whose_every_suite_is_skipped_fails_and_still_writes_empty_reports(tmp_path):
    root = project(tmp_path)
    result = cli("run", "suites", "--headless", *EXPORTS, cwd=root, SKIP="alpha,beta")
    assert result.returncode == NOTHING_RAN, result.stdout + result.stderr
    assert "- alpha: no API key" in result.stdout
    assert_empty_exports(root)
    # A skipped suite beside one that runs is no reason to fail.
    one = cli("run", "suites", "--headless", cwd=root, SKIP="alpha")
    assert one.returncode == 0, one.stdout


def test_a_decide_run_that_selects_nothing_says_nothing_ran(tmp_path):
    root = project(tmp_path)
    cli("run", "suites", "--headless", "--save-baseline", cwd=root)
    decide = cli("run", "suites", "--headless", "--decide", "--filter", "zzz", cwd=root)
    assert decide.returncode == NOTHING_RAN, decide.stdout + decide.stderr


# -- #35 item 3: an empty shard --------------------------------------------------------------
def test_an_empty_shard_writes_an_empty_report_that_merge_accepts(tmp_path):
    root = project(tmp_path)
    shards = 9  # more shards than the 7 cases: some are empty
    for i in range(1, shards + 1):
        shard = cli(
            "run", "suites", "--headless", "--shard", f"{i}/{shards}", "--json", f"s{i}.json",
            cwd=root,
        )  # fmt: skip
        assert shard.returncode == 0, shard.stdout + shard.stderr
        assert (root / f"s{i}.json").exists(), i
    empty = [i for i in range(1, shards + 1) if not Report.load(root / f"s{i}.json").cases]
    assert len(empty) == 2
    files = [f"s{i}.json" for i in range(1, shards + 1)]
    merged = cli("merge", *files, "-o", "all.json", cwd=root)
    assert merged.returncode == 0, merged.stderr
    assert len(Report.load(root / "all.json").cases) == 7
    # A missing empty shard is still missed.
    gap = cli("merge", *[f for f in files if f != f"s{empty[0]}.json"], "-o", "x.json", cwd=root)
    assert gap.returncode == 2 and f"missing shard(s) {empty[0]}/{shards}" in gap.stderr
    # When no shard has a case (the filter matches nothing), each says nothing ran.
    for i in (1, 2):
        args = ("--shard", f"{i}/2", "--filter", "zzz", "--json", f"none{i}.json")
        none = cli("run", "suites", "--headless", *args, cwd=root)
        assert none.returncode == NOTHING_RAN, none.stdout
    merged_none = cli("merge", "none1.json", "none2.json", "-o", "none.json", cwd=root)
    assert merged_none.returncode == NOTHING_RAN and "nothing ran" in merged_none.stdout


# -- #35 item 27: messages ---------------------------------------------------------------------
def test_the_gate_line_names_the_suites(tmp_path):
    root = project(tmp_path)
    result = cli("run", "suites", "--headless", cwd=root, WRONG="a2,b1")
    assert result.returncode == 1
    gate = next(line for line in result.stdout.splitlines() if line.startswith("failing"))
    assert "alpha: 1 case(s) failed" in gate and "beta: 1 case(s) failed" in gate, gate


def test_merge_names_the_suites_of_its_summary(tmp_path):
    root = project(tmp_path)
    for i in (1, 2):
        args = ("run", "suites", "--headless", "--shard", f"{i}/2", "--json", f"s{i}.json")
        cli(*args, cwd=root, WRONG="b2")
    merged = cli("merge", "s1.json", "s2.json", "-o", "all.json", cwd=root)
    assert merged.returncode == 0, merged.stderr
    assert "── alpha" in merged.stdout and "── beta" in merged.stdout, merged.stdout
    assert "eval: 5/5 cases passed" in merged.stdout and "eval: 1/2 cases passed" in merged.stdout


def test_an_unknown_option_of_a_command_prints_that_commands_usage(tmp_path):
    result = cli("run", "--bogus", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: tui-eval run"), result.stderr
    assert "unrecognized arguments: --bogus" in result.stderr


def test_the_csv_shows_control_characters_of_names_visibly(tmp_path):
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.exporters import samples_csv

    sample = SampleResult("evil\x1b[31mcase", 0, "failed", error="boom\x1b[0m")
    report = Report("suite\x1b]0;x\x07", [CaseResult("evil\x1b[31mcase", [sample], planned=1)])
    text = samples_csv([report]).decode()
    assert not any(ch in text for ch in "\x1b\x07"), repr(text)
    (row,) = csv.DictReader(io.StringIO(text))
    assert row["case"] == "evil␛[31mcase" and row["suite"] == "suite␛]0;x␇"


def test_one_sample_is_one_sample():
    from tui_eval.core.results import CaseResult, SampleResult

    report = Report("s", [CaseResult("c", [SampleResult("c", 0, "passed")], planned=1)])
    assert "· 1 sample ·" in report.header(), report.header()
    assert "· 0 tokens ·" in report.header()
    two = Report("s", [CaseResult("c", [SampleResult("c", i, "passed") for i in (0, 1)])])
    assert "· 2 samples ·" in two.header()


# -- #35 item 27b: a word that is neither a command nor a path --------------------------------
@pytest.fixture
def app_opened(monkeypatch):
    """The app launch, replaced: a test must never open it (or hang on it)."""
    opened: list[list[str]] = []

    def fake_open_app(paths, **_kwargs):
        opened.append(list(paths))
        return 0

    from tui_eval.cli import commands

    monkeypatch.setattr(commands, "_open_app", fake_open_app)
    return opened


def test_a_mistyped_command_is_a_usage_error_naming_the_closest(tmp_path, app_opened):
    result = cli("comapre", "a.json", "b.json", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "'comapre'" in result.stderr and "tui-eval compare" in result.stderr, result.stderr
    unknown = cli("flakes", "r.json", cwd=tmp_path)
    assert unknown.returncode == 2 and "'flakes'" in unknown.stderr
    assert "commands: run, compare" in unknown.stderr  # nothing close: the list
    watched = cli("--watch", "siutes", cwd=tmp_path)
    assert watched.returncode == 2 and "'siutes'" in watched.stderr
    assert app_opened == []
    # Existing paths still open the app.
    project(tmp_path)
    assert cli("suites", cwd=tmp_path).returncode == 0
    assert cli(cwd=tmp_path).returncode == 0
    assert app_opened == [["suites"], []]

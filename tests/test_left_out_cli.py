"""`count_user_faults` as every front-end gives it (keywords, `Suite`, YAML, CLI flags, the
journal), and what a headless run says and exits with when the user simulator failed some
conversations (issue #37, item 4)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.cli_in_process import cli
from tests.test_suite_run import simulate_kill
from tests.user_faults import LEFT_OUT, write_suite
from tui_eval import Report, RunSettings, Suite
from tui_eval.cli import commands
from tui_eval.cli.commands import request_from_args
from tui_eval.service.request import RunRequest
from tui_eval.service.run_plan import plan_run
from tui_eval.service.store import RunHistory
from tui_eval.service.suite_run import SuiteRun
from tui_eval.suites import load_suites
from tui_eval.suites.declarative import SuiteSettings
from tui_eval.suites.suite import SUITE_SETTINGS


# -- the setting, wherever settings are given -------------------------------------------------
# Every entry point takes it as a keyword: tests/test_settings.py checks them all.
def test_a_suite_and_a_suite_file_give_count_user_faults(tmp_path: Path) -> None:
    assert "count_user_faults" in SUITE_SETTINGS
    assert SuiteSettings.model_fields["count_user_faults"].default is None
    assert Suite("s", count_user_faults=True).settings.given() == {"count_user_faults": True}
    (tmp_path / "shop.yaml").write_text(
        "name: shop\nmodel: openai:gpt-4o-mini\ncount_user_faults: true\ncases:\n  - input: hi\n"
    )
    (suite,) = load_suites([tmp_path / "shop.yaml"]).suites
    assert suite.settings.count_user_faults is True
    (tmp_path / "bad.yaml").write_text("name: bad\ncount_user_faults: maybe\ncases: []\n")
    (error,) = load_suites([tmp_path / "bad.yaml"]).errors
    assert "count_user_faults" in error.message


@pytest.mark.parametrize(
    "command",
    [["run"], ["ab", "--a", "x:y", "--b", "x:z"], ["recheck", "r.json", "suites"]],
    ids=lambda c: c[0],
)
def test_the_cli_flag_gives_the_setting_and_is_journaled(command: list[str]) -> None:
    parser = commands._parser()
    plain = request_from_args(parser.parse_args(command))
    assert "count_user_faults" not in plain.settings.given()
    flagged = request_from_args(parser.parse_args([*command, "--count-user-faults"]))
    assert flagged.settings.given() == {"count_user_faults": True}
    unflagged = request_from_args(parser.parse_args([*command, "--no-count-user-faults"]))
    assert unflagged.settings.given() == {"count_user_faults": False}
    again = RunRequest.model_validate_json(flagged.model_dump_json())
    assert again.settings.count_user_faults is True


@pytest.mark.anyio
async def test_a_resumed_run_keeps_counting_user_faults(tmp_path: Path) -> None:
    path = write_suite(tmp_path)
    history = RunHistory(tmp_path)
    (suite,) = load_suites([path]).suites
    options = RunRequest(settings=RunSettings(count_user_faults=True))
    await SuiteRun.start(plan_run(suite, options), history=history, invocation="t").run()
    simulate_kill(history, keep=3)  # "never tested" and the first of "partly left out"
    record = history.interrupted()[0]
    assert record.request.settings.count_user_faults is True
    resumed = SuiteRun.resume(record, history=history)
    report = await resumed.run()
    assert report.samples_left_out == 0 and report.metadata["count_user_faults"] is True
    cases = {c.name: c for c in report.cases}
    assert [s.excluded for s in cases["never tested"].samples] == [False, False]
    assert cases["partly left out"].pass_rate == 2 / 3 and not report.passed


@pytest.mark.anyio
async def test_the_journal_keeps_each_samples_fault_and_whether_it_was_left_out(
    tmp_path: Path,
) -> None:
    path = write_suite(tmp_path)
    history = RunHistory(tmp_path)
    (suite,) = load_suites([path]).suites
    await SuiteRun.start(plan_run(suite, RunRequest()), history=history, invocation="t").run()
    simulate_kill(history, keep=6)
    report = await SuiteRun.resume(history.interrupted()[0], history=history).run()
    never = next(c for c in report.cases if c.name == "never tested")
    assert never.undecided and all(s.fault is not None for s in never.samples)
    assert never.samples[0].fault.party == "user"  # type: ignore[union-attr]
    assert report.samples_left_out == 3


# -- a headless run, its files and its exit code ----------------------------------------------
EXPORTS = ("--json", "r.json", "--junit", "j.xml", "--markdown", "m.md")


def test_a_headless_run_says_what_it_left_out_everywhere_and_exits_on_counted_samples(
    tmp_path: Path,
) -> None:
    write_suite(tmp_path)
    run = cli("run", "suites", "--headless", *EXPORTS, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"3 samples {LEFT_OUT}" in run.stdout
    assert "2/2 (1 left out)" in run.stdout
    assert "undecided (does not gate): never tested" in run.stdout
    markdown = (tmp_path / "m.md").read_text()
    assert f"3 samples {LEFT_OUT}" in markdown and "2/2 (1 left out)" in markdown
    junit = ET.parse(tmp_path / "j.xml").getroot()
    assert (junit.get("failures"), junit.get("skipped")) == ("0", "1")
    skipped = junit.find(".//testcase[@name='never tested']/skipped")
    assert skipped is not None and "the user simulator's fault" in (skipped.get("message") or "")
    report = Report.load(tmp_path / "r.json")
    assert report.samples_left_out == 3 and report.passed
    history = cli("history", cwd=tmp_path).stdout
    assert "6 samples, 3 left out" in history

    counted = cli("run", "suites", "--headless", "--count-user-faults", *EXPORTS, cwd=tmp_path)
    assert counted.returncode == 1, counted.stdout + counted.stderr
    assert "left out:" not in counted.stdout and "(1 left out)" not in counted.stdout
    assert "3 samples the user simulator failed are counted" in counted.stdout
    assert "failing (--fail-on failures,regressions): shop: 2 case(s) failed" in counted.stdout
    junit = ET.parse(tmp_path / "j.xml").getroot()
    assert (junit.get("failures"), junit.get("skipped")) == ("2", "0")
    assert Report.load(tmp_path / "r.json").metadata["count_user_faults"] is True


def test_a_suite_file_may_count_user_faults_and_the_flag_shows_in_help(tmp_path: Path) -> None:
    path = write_suite(tmp_path)
    path.write_text(
        path.read_text().replace("concurrency=1,", "concurrency=1, count_user_faults=True,")
    )
    assert cli("run", "suites", "--headless", cwd=tmp_path).returncode == 1
    shown = cli("run", "--help", cwd=tmp_path).stdout
    assert "--count-user-faults" in shown and "--no-count-user-faults" in shown
    # The command line wins over the suite file, either way.
    left_out = cli("run", "suites", "--headless", "--no-count-user-faults", cwd=tmp_path)
    assert left_out.returncode == 0, left_out.stdout + left_out.stderr
    assert "1 case undecided" in left_out.stdout


def test_compare_reads_both_reports_under_the_setting_it_is_given(tmp_path: Path) -> None:
    write_suite(tmp_path)
    assert cli("run", "suites", "--headless", "--json", "base.json", cwd=tmp_path).returncode == 0
    assert cli("run", "suites", "--headless", "--json", "now.json", cwd=tmp_path).returncode == 0
    plain = cli("compare", "now.json", "base.json", cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    counted = cli("compare", "now.json", "base.json", "--count-user-faults", cwd=tmp_path)
    assert counted.returncode == 0, counted.stdout + counted.stderr
    assert "user simulator failed are counted" in counted.stdout, counted.stdout
    assert "user simulator failed are counted" not in plain.stdout
    parser = commands._parser()
    assert parser.parse_args(["compare", "a.json"]).count_user_faults is None
    assert (
        parser.parse_args(["compare", "a.json", "--no-count-user-faults"]).count_user_faults
        is False
    )


def test_a_baseline_saved_leaving_faults_out_is_compared_under_the_runs_setting(
    tmp_path: Path,
) -> None:
    write_suite(tmp_path)
    saved = cli("run", "suites", "--headless", "--save-baseline", cwd=tmp_path)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    args = ("run", "suites", "--headless", "--count-user-faults", "--fail-on", "regressions")
    counted = cli(*args, cwd=tmp_path)
    assert "0 regression(s)" in counted.stdout, counted.stdout
    assert counted.returncode == 0, counted.stdout
    again = cli("run", "suites", "--headless", cwd=tmp_path)
    assert again.returncode == 0 and "1 undecided" in again.stdout, again.stdout


def test_failures_says_which_samples_were_left_out(tmp_path: Path) -> None:
    write_suite(tmp_path)
    cli("run", "suites", "--headless", "--json", "r.json", cwd=tmp_path)
    shown = cli("failures", "r.json", cwd=tmp_path)
    assert shown.returncode == 0
    assert f"3 samples {LEFT_OUT}" in shown.stdout and "left out · " in shown.stdout
    cli("failures", "r.json", "--json", "modes.json", cwd=tmp_path)
    import json

    payload = json.loads((tmp_path / "modes.json").read_text())
    assert (payload["failed"], payload["left_out"]) == (3, 3)


def test_a_decide_run_says_how_many_samples_its_tests_left_out(tmp_path: Path) -> None:
    write_suite(tmp_path)
    assert cli("run", "suites", "--headless", "--save-baseline", cwd=tmp_path).returncode == 0
    decided = cli("run", "suites", "--headless", "--decide", "--max-samples", "6", cwd=tmp_path)
    assert decided.returncode == 0, decided.stdout + decided.stderr
    lines = decided.stdout.splitlines()
    never = next(line for line in lines if "never tested" in line)
    assert never.lstrip().startswith("? never tested") and "undecided" in never
    partly = next(line for line in lines if "partly left out" in line)
    assert "2/2 (1 left out) → " in partly and "left out)" in partly.split("→")[1]
    total = next(line for line in lines if "samples left out: the user simulator's fault" in line)
    assert "not in the tests" in total

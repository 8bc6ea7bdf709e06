"""Samples the user simulator failed are left out of pass rates, pass^k, the gate, diffs and
`decide()` by default — and never silently: every summary says how many, and why; the
`count_user_faults` setting keeps them in (issue #37, item 4)."""

from __future__ import annotations

import dataclasses
import io
import json
import xml.etree.ElementTree as ET
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from tests.user_faults import LEFT_OUT, shop_report, shop_suite
from tui_eval import (
    Agent,
    Case,
    Report,
    ScriptedUser,
    compare_agents,
    decide,
    evaluate_iter,
    state_equals,
)
from tui_eval.agents.providers.scripted import ScriptedProvider, call, text
from tui_eval.cli.failures import render
from tui_eval.cli.outcomes import SuiteOutcome, print_decisions, print_outcome
from tui_eval.cli.progress import Progress
from tui_eval.report.baselines import baseline_json
from tui_eval.report.exporters import junit_xml, markdown_summary, samples_csv
from tui_eval.report.failure_modes import failure_modes, markdown
from tui_eval.report.gate import RUN_DEFAULT, gate_failures, not_gating

pytestmark = pytest.mark.anyio


def by_name(report: Report) -> dict[str, Any]:
    return {case.name: case for case in report.cases}


# -- the run's own numbers and its summary ----------------------------------------------------
async def test_the_summary_says_how_many_samples_were_left_out_and_why(tmp_path: Path) -> None:
    report = await shop_report(tmp_path)
    assert report.passed and report.pass_rate == 1.0  # the undecided case has no verdict
    assert (report.cases_passed, report.cases_undecided, report.samples_left_out) == (2, 1, 3)
    assert report.sample_pass_rate == 1.0 and report.pass_hat_k(2) == 1.0
    summary = str(report)
    head, *lines = summary.splitlines()
    assert head.startswith("eval: 2/2 cases passed (100%) · 1 case undecided · 6 samples")
    assert f"3 samples {LEFT_OUT}" in head
    rows = {line.split()[1]: line for line in lines}
    assert "2/2 (1 left out)" in rows["partly"]
    assert rows["never"].lstrip().startswith("? never tested")
    assert "0/0 (2 left out)" in rows["never"]
    assert "undecided: every sample left out (2 of 2): the user simulator's fault" in rows["never"]
    assert "the user ended the conversation" in rows["never"]
    assert "(1 left out)" not in rows["plain"]


async def test_counting_user_faults_fails_the_cases_and_says_so(tmp_path: Path) -> None:
    report = await shop_report(tmp_path, count_user_faults=True)
    cases = by_name(report)
    assert not report.passed and report.cases_undecided == 0 and report.samples_left_out == 0
    assert not cases["never tested"].passed and cases["partly left out"].pass_rate == 2 / 3
    assert report.metadata["count_user_faults"] is True
    head = report.header()
    assert head.startswith("eval: 1/3 cases passed (33%)")
    assert "3 samples the user simulator failed are counted (count_user_faults)" in head
    assert "2/3  state_equals" in str(report) and "(1 left out)" not in str(report)


async def test_a_failing_case_names_a_counted_failure_not_a_left_out_one(tmp_path: Path) -> None:
    report = await shop_report(tmp_path)
    case = by_name(report)["partly left out"]
    assert case.samples[1].excluded  # the left-out sample comes first
    case.samples[2] = dataclasses.replace(case.samples[2], status="timeout", error="too slow")
    assert not case.passed
    assert case.first_failure == "timeout: too slow"  # not the left-out sample's check


# -- the gate -----------------------------------------------------------------------------------
async def test_an_undecided_case_neither_passes_nor_fails_the_gate(tmp_path: Path) -> None:
    report = await shop_report(tmp_path)
    assert gate_failures(RUN_DEFAULT, report, None) == []
    assert not_gating(report) == [
        "undecided (does not gate): never tested — every sample left out (2 of 2): "
        "the user simulator's fault"
    ]
    kept = await shop_report(tmp_path, count_user_faults=True)
    assert gate_failures(RUN_DEFAULT, kept, None) == ["2 case(s) failed"]
    assert not_gating(kept) == []


async def test_the_cli_outcome_prints_the_cases_that_do_not_gate(tmp_path: Path) -> None:
    report = await shop_report(tmp_path)
    out = io.StringIO()
    with redirect_stdout(out):
        print_outcome(SuiteOutcome(suite=shop_suite(tmp_path), report=report))
    printed = out.getvalue()
    assert f"3 samples {LEFT_OUT}" in printed
    assert "undecided (does not gate): never tested" in printed


# -- diffs against a baseline -----------------------------------------------------------------
async def test_a_diff_counts_the_counted_samples_and_sets_undecided_cases_apart(
    tmp_path: Path,
) -> None:
    baseline = await shop_report(tmp_path, count_user_faults=True)
    for sample in by_name(baseline)["partly left out"].samples:
        sample.status, sample.fault, sample.checks = "passed", None, []
    current = await shop_report(tmp_path)
    diff = current.compare(baseline)
    assert diff.undecided == ["never tested"]
    assert diff.regressions == [] and sorted(diff.unchanged) == ["partly left out", "plain"]
    change = next(c for c in diff.changes if c.name == "partly left out")
    assert (change.baseline_passed, change.baseline_total) == (3, 3)
    assert (change.current_passed, change.current_total, change.current_left_out) == (2, 2, 1)
    assert change.current_rate == 1.0
    assert "3/3 → 2/2 (1 left out)" in change.describe()
    assert "? undecided" in str(diff) and "1 undecided" in str(diff)
    assert [c.name for c in diff.changes] == ["partly left out", "plain"]


async def test_a_baseline_made_under_the_other_setting_is_read_under_this_runs(
    tmp_path: Path,
) -> None:
    """A run that counts user faults, against a baseline that left them out: the baseline's
    left-out samples count too, so a case is not called a regression for the setting."""
    baseline = await shop_report(tmp_path)  # left out: "partly left out" passed, 2/2
    current = await shop_report(tmp_path, count_user_faults=True)  # counted: it fails, 2/3
    diff = current.compare(baseline)
    assert diff.regressions == [] and diff.undecided == []
    change = next(c for c in diff.changes if c.name == "partly left out")
    assert (change.baseline_passed, change.baseline_total, change.baseline_left_out) == (2, 3, 0)
    # And the other way round: a baseline that counted them is read leaving them out.
    back = baseline.compare(current)
    assert back.improvements == [] and back.undecided == ["never tested"]


# -- the files CI reads -----------------------------------------------------------------------
async def test_junit_marks_left_out_samples_and_skips_an_undecided_case(tmp_path: Path) -> None:
    report = await shop_report(tmp_path)
    root = ET.fromstring(junit_xml([report]))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "0", "1")
    assert root.get("skipped") == "1"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["samples left out"] == f"3 samples {LEFT_OUT}"
    assert props["partly left out:samples_left_out"] == "1"
    assert props["partly left out:pass_rate"] == "1.0000"
    assert "plain:samples_left_out" not in props and "never tested:pass_rate" not in props
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    skipped = cases["never tested"].find("skipped")
    assert skipped is not None and skipped.get("message") == (
        "undecided: every sample left out (2 of 2): the user simulator's fault"
    )
    assert "the user ended the conversation" in (skipped.text or "")
    assert (cases["never tested"].findtext("system-out") or "").startswith("undecided: ")
    assert cases["partly left out"].find("skipped") is None
    out = cases["partly left out"].findtext("system-out") or ""
    assert f"(2/2; 1 sample {LEFT_OUT})" in out


async def test_junit_lists_left_out_samples_of_a_failing_case(tmp_path: Path) -> None:
    report = await shop_report(tmp_path, count_user_faults=True)
    failure = ET.fromstring(junit_xml([report])).find(
        ".//testcase[@name='partly left out']/failure"
    )
    assert failure is not None and "sample 2: failed" in (failure.text or "")
    ours = await shop_report(tmp_path)
    case = by_name(ours)["partly left out"]
    case.samples[0].status = "failed"
    text_ = ET.fromstring(junit_xml([ours])).findtext(
        ".//testcase[@name='partly left out']/failure"
    )
    assert f"sample 2: failed [{LEFT_OUT}]" in (text_ or "")


async def test_markdown_states_the_left_out_samples_per_case_and_in_total(tmp_path: Path) -> None:
    report = await shop_report(tmp_path)
    md = markdown_summary([report])
    assert md.startswith("## ✅ shop")
    assert f"3 samples {LEFT_OUT}" in md
    assert "| ? | never tested | 0/0 (2 left out) | — |" in md
    row = next(line for line in md.splitlines() if "| partly left out |" in line)
    assert row.startswith("| ✓ | partly left out | 2/2 (1 left out) | 100% |")
    assert row.endswith("|  |")  # a left-out sample's failure is not the case's
    assert f"**3 samples {LEFT_OUT}** (in 2 cases; `--count-user-faults` counts them)" in md
    assert f"- never tested: 2 samples {LEFT_OUT} — undecided, it does not gate" in md
    assert f"- partly left out: 1 sample {LEFT_OUT}" in md


async def test_the_per_sample_export_has_the_fault_and_whether_it_was_left_out(
    tmp_path: Path,
) -> None:
    report = await shop_report(tmp_path)
    lines = samples_csv([report]).decode().splitlines()
    assert lines[0].endswith(",fault,left_out")
    assert lines[1].endswith(",user,true") and lines[-1].endswith(",,false")


async def test_faults_and_left_out_samples_round_trip_through_report_files(
    tmp_path: Path,
) -> None:
    report = await shop_report(tmp_path)
    report.duration_s = 0.0  # a baseline keeps no duration: the headers compare the rest
    for data in (report.to_json(), baseline_json(report)):
        again = Report.from_json(data)
        sample = by_name(again)["never tested"].samples[0]
        assert sample.excluded and sample.fault is not None
        assert (sample.fault.party, sample.fault.turn, sample.fault.by) == ("user", 1, "rule")
        assert again.samples_left_out == 3 and again.header() == report.header()
    kept = await shop_report(tmp_path, count_user_faults=True)
    assert json.loads(kept.to_json())["report"]["metadata"]["count_user_faults"] is True
    assert Report.from_json(kept.to_json()).compare(kept).regressions == []


# -- failure modes ----------------------------------------------------------------------------
async def test_left_out_samples_are_a_failure_mode_of_their_own(tmp_path: Path) -> None:
    report = await shop_report(tmp_path)
    modes = failure_modes(report)
    (mode,) = modes
    assert mode.signature.kind == "left out" and mode.count == 3
    assert str(mode.signature).startswith("left out · the user simulator's fault: the user ended")
    shown = render(modes, report_name="r.json", against=None)
    assert f"3 failed sample(s) in 1 mode(s); 3 samples {LEFT_OUT}" in shown.splitlines()[0]
    assert "not in the pass rates" in markdown(modes)
    kept = failure_modes(await shop_report(tmp_path, count_user_faults=True))
    assert {m.signature.kind for m in kept} == {"failed"}  # counted: failures like any


# -- decide() and compare_agents() ------------------------------------------------------------
SHOP = {"orders": {"A-17": {"status": "paid"}}}
CANCELLED = {"orders": {"A-17": {"status": "cancelled"}}}


def cancel(order_id: str, state: dict[str, Any]) -> str:
    """Cancel an order."""
    state["orders"][order_id]["status"] = "cancelled"
    return "cancelled"


def alternating_agent(pattern: list[bool]) -> Any:
    """A factory: each sample's agent cancels (True) or only asks (False), in turn."""
    turns = iter(pattern * 200)

    def make() -> Agent:
        if next(turns):
            steps = [call("cancel", {"order_id": "A-17"}), text("Cancelled.")]
        else:
            steps = [text("Which order do you want cancelled?")]
        return Agent(ScriptedProvider(steps), tools=[cancel])

    return make


CASE = Case(
    "Cancel A-17.",
    name="cancel",
    user=ScriptedUser([]),
    state=SHOP,
    samples=10,
    checks=[state_equals(CANCELLED)],
)


async def test_decide_leaves_out_the_samples_the_user_simulator_failed() -> None:
    baseline = await shop_baseline()
    diff = await decide(alternating_agent([True, False]), [CASE], baseline, max_samples=60)
    (change,) = diff.changes
    assert change.label != "regression", change
    assert change.current_left_out > 0
    assert change.current_passed == change.current_total > 0  # every counted sample passed
    out = io.StringIO()
    with redirect_stdout(out):
        print_decisions("shop", diff)
    assert f"({change.current_left_out} left out)" in out.getvalue()
    counted = await decide(
        alternating_agent([True, False]), [CASE], baseline, max_samples=60, count_user_faults=True
    )
    assert counted.changes[0].label == "regression"
    assert counted.changes[0].current_left_out == 0


async def shop_baseline() -> Report:
    from tui_eval import evaluate

    return await evaluate(
        alternating_agent([True]), [dataclasses.replace(CASE, samples=30)], concurrency=1
    )


async def test_compare_agents_drops_the_pairs_a_user_simulator_failed() -> None:
    diff = await compare_agents(
        alternating_agent([True]), alternating_agent([True, False]), [CASE], max_samples=60
    )
    (change,) = diff.changes
    assert change.label != "regression" and change.current_left_out > 0
    counted = await compare_agents(
        alternating_agent([True]),
        alternating_agent([True, False]),
        [CASE],
        max_samples=60,
        count_user_faults=True,
    )
    assert counted.changes[0].label == "regression"


async def test_a_decision_whose_every_sample_was_left_out_is_shown_undecided() -> None:
    baseline = await shop_baseline()
    diff = await decide(alternating_agent([False]), [CASE], baseline, max_samples=20)
    assert diff.changes == [] and diff.undecided == ["cancel"]
    out = io.StringIO()
    with redirect_stdout(out):
        print_decisions("shop", diff)
    assert "? cancel" in out.getvalue()
    assert "every sample of one side left out (the user simulator's fault)" in out.getvalue()


# -- progress ---------------------------------------------------------------------------------
async def test_progress_lines_count_left_out_samples_apart_from_failures(tmp_path: Path) -> None:
    suite = shop_suite(tmp_path)
    progress = Progress(live=False)
    err = io.StringIO()
    with redirect_stderr(err):
        async for event in evaluate_iter(suite.agent, suite.cases, concurrency=1):
            progress.on_event(event)
    last = err.getvalue().strip().splitlines()[-1]
    assert last.endswith("6/6 samples · 3 passed · 0 failed · 3 left out"), last
    assert progress.state.samples_left_out == 3


async def test_run_lists_count_passed_cases_out_of_the_decided_ones(tmp_path: Path) -> None:
    from tui_eval.service.store import RunSummary

    summary = RunSummary.of(await shop_report(tmp_path))
    assert (summary.cases_passed, summary.cases_decided, summary.cases_undecided) == (2, 2, 1)
    assert summary.cases_text() == "2/2 ⊘1"  # the Suites list, History and `tui-eval history`

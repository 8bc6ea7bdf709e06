"""Samples the user simulator failed are left out of pass rates, pass^k, the gate, diffs and
`decide()` by default — and never silently: every summary says how many, and why; the
`count_user_faults` setting keeps them in (issue #37, item 4)."""

from __future__ import annotations

import dataclasses
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from tests.user_faults import LEFT_OUT, shop_report, shop_suite
from tui_eval import (
    Report,
    evaluate_iter,
)
from tui_eval.cli.outcomes import SuiteOutcome, print_outcome
from tui_eval.cli.progress import Progress
from tui_eval.report.baseline_file import baseline_json
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


async def test_faults_and_left_out_samples_round_trip_through_report_files(
    tmp_path: Path,
) -> None:
    report = await shop_report(tmp_path)
    for data in (report.to_json(), baseline_json(report)):
        again = Report.from_json(data)
        sample = by_name(again)["never tested"].samples[0]
        assert sample.excluded and sample.fault is not None
        assert (sample.fault.party, sample.fault.turn, sample.fault.by) == ("user", 1, "rule")
        assert again.samples_left_out == 3 and again.header() == report.header()
    kept = await shop_report(tmp_path, count_user_faults=True)
    assert json.loads(kept.to_json())["report"]["metadata"]["count_user_faults"] is True
    assert Report.from_json(kept.to_json()).compare(kept).regressions == []


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

"""The bundled demo suites (`suites/`) show what the README says they show."""

from __future__ import annotations

import shutil

import pytest

from tests.test_suite_run import run_service, simulate_kill
from tui_eval.report.report import Report
from tui_eval.service.request import RunRequest
from tui_eval.service.store import RunHistory
from tui_eval.service.suite_run import SuiteRun

pytestmark = pytest.mark.anyio

FLAKY = ("explain to a child", "rounding (flaky)")


def outputs(report: Report) -> dict[tuple[str, int], tuple[object, bool]]:
    """Each sample's output and verdict, by (case, sample index)."""
    return {
        (case.name, sample.index): (sample.output, sample.passed)
        for case in report.cases
        for sample in case.samples
    }


async def test_the_calculator_demo_gives_a_sample_the_same_answer_after_a_resume(
    tmp_path, example_suites
):
    """Its flaky cases vary by sample, not by how many samples this process ran: a
    resumed run (in this process, or another) shows what the whole run would have."""
    folder = tmp_path / "suites"
    folder.mkdir()
    path = folder / "calculator.py"
    shutil.copy(example_suites / "calculator.py", path)
    history = RunHistory(tmp_path / "home")
    request = RunRequest(cases=FLAKY)
    whole = await run_service(path, request, history)
    assert whole.report is not None
    expected = outputs(whole.report)
    assert len({output for output, _ in expected.values()}) > 2  # it does vary

    for keep in (1, 3, 6):
        again = await run_service(path, request, history)
        assert again.report is not None and outputs(again.report) == expected
        simulate_kill(history, keep=keep)
        resumed = await SuiteRun.resume(history.interrupted()[0], history=history).run()
        assert outputs(resumed) == expected, f"resumed after {keep} samples"
        assert [c.passed for c in resumed.cases] == [c.passed for c in whole.report.cases]

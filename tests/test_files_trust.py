"""Files a hostile world writes into: CSV cells that a spreadsheet would run, reports
merged with duplicates, a baseline case that has no samples."""

from __future__ import annotations

import csv
import io

import pytest

from tui_eval.checks.base import CheckResult
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.exporters import MergeError, merge_reports, samples_csv
from tui_eval.report.report import Report


def _sample(case: str, reason: str, status: str = "failed") -> SampleResult:
    check = CheckResult(reason[:20] or "check", False, 0.0, reason)
    return SampleResult(case, 0, status, checks=[check], error=reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "evil",
    [
        '=HYPERLINK("http://x","click")',
        "+1+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(A1:A2)",
        "\t=1+1",
        "\r=1+1",
    ],
)
def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(evil):
    report = Report("s", [CaseResult(evil, [_sample(evil, evil)])])
    rows = list(csv.DictReader(io.StringIO(samples_csv([report]).decode(), newline="")))
    row = rows[0]
    for column in ("case", "first_failing_check", "reason"):
        cell = row[column]
        assert cell and cell[0] not in "=+-@\t\r", (column, cell)
    assert row["case"] == "'" + evil  # the text itself, shown as text


def test_csv_numbers_and_plain_text_are_left_alone():
    sample = SampleResult("plain case", 0, "passed", cost=0.5)
    rows = list(
        csv.DictReader(
            io.StringIO(samples_csv([Report("s", [CaseResult("plain case", [sample])])]).decode())
        )
    )
    assert rows[0]["case"] == "plain case" and rows[0]["cost"] == "0.5"
    assert rows[0]["status"] == "passed"


def test_merge_names_each_duplicated_case_once():
    def report(*names: str) -> Report:
        return Report(
            "s",
            [CaseResult(n, [SampleResult(n, 0, "passed")]) for n in names],
            metadata={"suites": ["s"]},
        )

    with pytest.raises(MergeError) as raised:
        merge_reports([report("a", "b"), report("a", "c"), report("a", "b")])
    message = str(raised.value)
    assert message.startswith("2 case(s) are in more than one report")
    assert message.count("s / a") == 1 and message.count("s / b") == 1, message


def test_a_baseline_case_without_samples_is_no_improvement_and_does_not_move_delta():
    def case(name: str, passed: int, total: int) -> CaseResult:
        return CaseResult(
            name,
            [SampleResult(name, i, "passed" if i < passed else "failed") for i in range(total)],
        )

    baseline = Report("s", [case("empty", 0, 0), case("steady", 2, 2)])
    current = Report("s", [case("empty", 3, 3), case("steady", 2, 2)])
    diff = current.compare(baseline)
    assert not diff.improvements and not diff.regressions
    assert "empty" not in [c.name for c in diff.changes]
    assert diff.delta == 0.0
    assert "empty" in diff.added  # nothing to compare it with: as if new
    assert "improved" not in str(diff) and "0/0 →" not in str(diff)

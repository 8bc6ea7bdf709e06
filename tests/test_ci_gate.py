"""CI gating that can't be fooled, and CI at scale: shards, merge, exports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.cli_in_process import Completed
from tests.cli_in_process import cli as run_cli
from tui_eval import Case, Report, contains
from tui_eval.core.results import CaseResult, SampleResult

SUITES = """
import os
from tui_eval import Case, Suite, contains

WRONG = set(os.environ.get("WRONG", "").split(","))
CHECK = os.environ.get("CHECK", "answer")
DROP = os.environ.get("DROP", "")

async def agent(question: str) -> str:
    return "wrong" if question in WRONG else "answer to " + question

alpha = Suite("alpha", agent=agent, cases=[
    Case(name, checks=[contains(CHECK)]) for name in ["a1", "a2", "shared"] if name != DROP
])
beta = Suite("beta", agent=agent, cases=[
    Case(name, checks=[contains("answer")]) for name in ["b1", "b2", "b3", "shared"]
])
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "suites").mkdir(exist_ok=True)
    (tmp_path / "suites" / "pair_suite.py").write_text(SUITES)
    return tmp_path


def cli(*args: str, cwd: Path, **env: str) -> Completed:
    return run_cli(*args, cwd=cwd, env=env)


def test_a_multi_suite_report_is_compared_by_suite_and_case(tmp_path):
    root = project(tmp_path)
    assert cli("run", "suites", "--headless", "--save-baseline", cwd=root).returncode == 0
    run = cli("run", "suites", "--headless", "--json", "all.json", cwd=root, WRONG="b2")
    assert run.returncode == 1
    # One suite's baseline against the whole report: the regression is found, the other
    # suite's cases are neither "added" nor "removed".
    one = cli("compare", "all.json", "suites/__baselines__/beta.json", cwd=root)
    assert one.returncode == 1, one.stdout
    assert "1 regression(s)" in one.stdout and "beta / b2" in one.stdout
    assert "0 added, 0 removed" in one.stdout
    # Every suite against its own baseline (found beside the suites, or in a folder).
    both = cli("compare", "all.json", cwd=root)
    assert both.returncode == 1 and "1 regression(s)" in both.stdout, both.stderr
    folder = cli("compare", "all.json", "--baseline-dir", "suites/__baselines__", cwd=root)
    assert folder.returncode == 1 and "beta / b2" in folder.stdout
    # Multi against multi: a merged baseline.
    cli("run", "suites", "--headless", "--json", "base.json", cwd=root)
    multi = cli("compare", "all.json", "base.json", cwd=root)
    assert multi.returncode == 1 and "beta / b2" in multi.stdout
    # And a multi-suite report rechecks suite by suite.
    recheck = cli("recheck", "all.json", "suites", cwd=root)
    assert recheck.returncode == 1 and "eval: 6/7 cases passed" in recheck.stdout, recheck.stderr


def test_two_suites_with_a_case_of_the_same_name_never_collide():
    def report(name: str, outcome: str) -> Report:
        sample = SampleResult("shared", 0, outcome)
        return Report(name, [CaseResult("shared", [sample], planned=1, suite=name)])

    from tui_eval.report.exporters import merge_reports

    before = merge_reports([report("alpha", "passed"), report("beta", "passed")])
    after = merge_reports([report("alpha", "passed"), report("beta", "failed")])
    diff = after.compare(before)
    assert [c.name for c in diff.regressions] == ["beta / shared"]
    assert diff.unchanged == ["alpha / shared"]


def test_a_changed_definition_is_reported_and_can_gate(tmp_path):
    root = project(tmp_path)
    cli("run", "suites/pair_suite.py", "--headless", "--save-baseline", cwd=root)
    changed = cli("run", "suites", "--headless", cwd=root, CHECK="to")
    assert changed.returncode == 0  # by default a changed definition alone does not fail
    assert "3 definition changed" in changed.stdout
    assert "~ definition changed  a1" in changed.stdout
    gated = cli(
        "run", "suites", "--headless", "--fail-on", "definition-changed", cwd=root, CHECK="to"
    )
    assert gated.returncode == 1 and "3 case definition(s) changed" in gated.stdout
    md = cli("run", "suites", "--headless", "--markdown", "s.md", cwd=root, CHECK="to")
    assert md.returncode == 0 and "definition changed" in (root / "s.md").read_text()


@pytest.mark.parametrize(
    ("env", "fail_on", "code"),
    [
        ({"WRONG": "a1"}, None, 1),  # failures (default)
        ({"WRONG": "a1"}, "regressions", 0),  # a1 failed in the baseline too: no regression
        ({"WRONG": "a2"}, "regressions", 1),  # a2 passed in the baseline: a regression
        ({"DROP": "a2"}, None, 0),  # a removed case does not fail by default...
        ({"DROP": "a2"}, "removed", 1),  # ...unless asked
        ({"WRONG": "a1"}, "removed", 0),
    ],
)
def test_each_fail_on_condition(tmp_path, env, fail_on, code):
    root = project(tmp_path)
    cli("run", "suites", "--headless", "--save-baseline", cwd=root, WRONG="a1")
    args = ["run", "suites", "--headless"] + (["--fail-on", fail_on] if fail_on else [])
    result = cli(*args, cwd=root, **env)
    assert result.returncode == code, result.stdout + result.stderr


def test_fail_on_for_compare_and_unknown_values(tmp_path):
    root = project(tmp_path)
    cli("run", "suites/pair_suite.py", "--headless", "--json", "base.json", cwd=root)
    cli("run", "suites/pair_suite.py", "--headless", "--json", "now.json", cwd=root, DROP="a2")
    assert cli("compare", "now.json", "base.json", cwd=root).returncode == 0
    removed = cli("compare", "now.json", "base.json", "--fail-on", "removed", cwd=root)
    assert removed.returncode == 1 and "1 baseline case(s) removed" in removed.stdout
    bad = cli("compare", "now.json", "base.json", "--fail-on", "vibes", cwd=root)
    assert bad.returncode == 2 and "unknown --fail-on value 'vibes'" in bad.stderr


def test_shards_merge_into_the_full_run(tmp_path):
    root = project(tmp_path)
    full = cli("run", "suites", "--headless", "--json", "full.json", cwd=root, WRONG="b1")
    assert full.returncode == 1
    for i in (1, 2, 3):
        shard = cli(
            "run",
            "suites",
            "--headless",
            "--shard",
            f"{i}/3",
            "--json",
            f"shard-{i}.json",
            cwd=root,
            WRONG="b1",
        )
        assert shard.returncode in (0, 1), shard.stderr
    merged = cli(
        "merge", "shard-1.json", "shard-2.json", "shard-3.json", "-o", "all.json", cwd=root
    )
    assert merged.returncode == 0, merged.stderr
    whole, parts = Report.load(root / "full.json"), Report.load(root / "all.json")

    def verdicts(report: Report) -> dict[tuple[str, str], bool]:
        return {(c.suite, c.name): c.passed for c in report.cases}

    assert verdicts(parts) == verdicts(whole) and len(verdicts(whole)) == 7
    # Each case ran in exactly one shard.
    names = [
        (c.suite, c.name) for i in (1, 2, 3) for c in Report.load(root / f"shard-{i}.json").cases
    ]
    assert sorted(names) == sorted(verdicts(whole))
    # A shard never fails on baseline cases that live in other shards.
    cli("run", "suites", "--headless", "--save-baseline", cwd=root, WRONG="b1")
    shard = cli(
        "run",
        "suites",
        "--headless",
        "--shard",
        "1/3",
        "--fail-on",
        "removed,regressions",
        cwd=root,
        WRONG="b1",
    )
    assert shard.returncode == 0, shard.stdout
    # The gate then runs on the merged report.
    gate = cli("compare", "all.json", "full.json", "--fail-on", "regressions,removed", cwd=root)
    assert gate.returncode == 0, gate.stdout
    # Overlapping or missing shards are refused, by name.
    twice = cli("merge", "shard-1.json", "shard-1.json", "-o", "x.json", cwd=root)
    assert twice.returncode == 2 and "in more than one report" in twice.stderr
    gap = cli("merge", "shard-1.json", "shard-3.json", "-o", "x.json", cwd=root)
    assert gap.returncode == 2 and "missing shard(s) 2/3" in gap.stderr
    assert "planned case(s) are in no report" in gap.stderr
    assert not (root / "x.json").exists()


def test_junit_reads_in_a_third_party_parser(tmp_path):
    from junitparser import Failure, JUnitXml

    root = project(tmp_path)
    cli("run", "suites", "--headless", "--save-baseline", cwd=root)
    cli("run", "suites", "--headless", "--junit", "j.xml", cwd=root, WRONG="b2")
    xml = JUnitXml.fromfile(str(root / "j.xml"))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"alpha", "beta"}
    assert suites["beta"].tests == 4 and suites["beta"].failures == 1
    cases = {case.name: case for case in suites["beta"]}
    (failure,) = [r for r in cases["b2"].result if isinstance(r, Failure)]
    assert failure.message.startswith("contains — expected 'answer' in output")
    properties = {p.name: p.value for p in suites["beta"].properties()}
    assert properties["b2:pass_rate"] == "0.0000" and properties["b2:samples"] == "1"
    assert properties["b2:flaky"] == "false" and properties["b1:pass_rate"] == "1.0000"
    # The same verdicts as the terminal and Markdown: the suite line and each case's label.
    assert properties["against the baseline"].startswith("pass rate 100% → 75%")
    assert properties["b2:label"].startswith("too few samples")


def test_per_sample_csv_and_jsonl_round_trip(tmp_path):
    from tui_eval.report.exporters import sample_rows

    root = project(tmp_path)
    result = cli(
        "run",
        "suites",
        "--headless",
        "--json",
        "all.json",
        "--csv",
        "s.csv",
        "--samples-jsonl",
        "s.jsonl",
        cwd=root,
        WRONG="a2",
    )
    assert result.returncode == 1
    expected = sample_rows([Report.load(root / "all.json")])
    lines = [json.loads(line) for line in (root / "s.jsonl").read_text().splitlines()]
    assert lines == expected and len(lines) == 7
    rows = list(csv.DictReader(io.StringIO((root / "s.csv").read_text())))
    assert [r["case"] for r in rows] == [r["case"] for r in expected]
    wrong = next(r for r in rows if r["case"] == "a2")
    assert (wrong["suite"], wrong["status"], wrong["first_failing_check"]) == (
        "alpha",
        "failed",
        "contains",
    )
    assert "expected 'answer'" in wrong["reason"]


def test_github_step_summary_is_written_when_set(tmp_path):
    root = project(tmp_path)
    summary = tmp_path / "summary.md"
    cli("run", "suites", "--headless", cwd=root, GITHUB_STEP_SUMMARY=str(summary))
    text = summary.read_text()
    assert "alpha" in text and "beta" in text


def test_resume_with_nothing_to_resume_has_its_own_exit_code(tmp_path):
    result = cli("resume", cwd=project(tmp_path))
    assert result.returncode == 3 and result.stdout.startswith("nothing to resume")
    from tui_eval.cli.commands import DESCRIPTION

    assert "3 nothing to resume" in DESCRIPTION


def test_case_definition_fingerprints():
    from tui_eval.core.cases import fingerprint

    base = Case("q", checks=[contains("x")], samples=2)
    assert fingerprint(base) == fingerprint(Case("q", checks=[contains("x")], samples=2))
    for changed in (
        Case("q2", checks=[contains("x")], samples=2),
        Case("q", checks=[contains("y")], samples=2),
        Case("q", checks=[contains("x")], samples=3),
        Case("q", checks=[contains("x")], samples=2, pass_threshold=0.5),
        Case("q", checks=[contains("x")], samples=2, expected="z"),
    ):
        assert fingerprint(changed) != fingerprint(base)


def test_junit_keeps_to_the_common_jenkins_junit_schema(tmp_path):
    """The rules of the Jenkins xunit plugin's junit-10.xsd that an exporter can break:
    which elements may nest where, the required attributes, and the time format."""
    import re
    import xml.etree.ElementTree as ET

    root = project(tmp_path)
    cli("run", "suites", "--headless", "--junit", "j.xml", cwd=root, WRONG="b2,a1")
    tree = ET.parse(root / "j.xml").getroot()
    time_format = re.compile(r"^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$")
    assert tree.tag == "testsuites" and time_format.match(tree.get("time", ""))
    assert {child.tag for child in tree} == {"testsuite"}
    for suite in tree:
        assert {"name", "tests", "failures", "errors"} <= set(suite.attrib)
        assert time_format.match(suite.get("time", ""))
        assert {c.tag for c in suite} <= {
            "testsuite",
            "properties",
            "testcase",
            "system-out",
            "system-err",
        }
        for prop in suite.iter("property"):
            assert {"name", "value"} <= set(prop.attrib)
        for case in suite.iter("testcase"):
            assert "name" in case.attrib
            assert {c.tag for c in case} <= {
                "skipped",
                "error",
                "failure",
                "system-out",
                "system-err",
            }


SEEDED = """
import os
import random
from tui_eval import Case, Suite, contains

def seeded(p, seed):
    rng = random.Random(seed)
    async def agent(question):
        return "ok" if rng.random() < p else "no"
    return agent

strong = seeded(0.9, 1)
weak = seeded(0.6, 2)
current = seeded(float(os.environ.get("RATE", "0.9")), 3)

suite = Suite("coin", agent=current, cases=[Case("q", checks=[contains("ok")], samples=10, pass_threshold=0.5)])
"""


def test_run_decide_and_ab(tmp_path):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "coin_suite.py").write_text(SEEDED)
    no_baseline = cli("run", "suites", "--decide", cwd=tmp_path)
    assert no_baseline.returncode == 2 and "--decide compares with a baseline" in no_baseline.stderr
    cli("run", "suites", "--headless", "--save-baseline", cwd=tmp_path, RATE="0.95", FORCE="1")
    worse = cli("run", "suites", "--decide", cwd=tmp_path, RATE="0.2")
    assert worse.returncode == 1 and "regression" in worse.stdout, worse.stdout + worse.stderr
    ab = cli("ab", "suites", "--a", "coin_suite:strong", "--b", "coin_suite:weak", cwd=tmp_path)
    assert ab.returncode == 1 and "✗ q" in ab.stdout and "regression" in ab.stdout, ab.stdout
    same = cli("ab", "suites", "--a", "coin_suite:strong", "--b", "coin_suite:strong", cwd=tmp_path)
    assert same.returncode == 0, same.stdout
    bad = cli("ab", "suites", "--a", "nonsense", "--b", "coin_suite:weak", cwd=tmp_path)
    assert bad.returncode == 2 and "neither a model spec" in bad.stderr

"""Every CLI flow goes through the suite-run layer: gates, shards, decide, A/B, recheck."""

from __future__ import annotations

from tests.test_ci_gate import cli, project
from tui_eval import Report
from tui_eval.gate import Shard, assign_shards, parse_fail_on


# -- bug 5: compare --fail-on failures, and an empty --fail-on ------------------------------
def test_compare_fail_on_failures_reads_the_current_report(tmp_path):
    root = project(tmp_path)
    cli("run", "suites/pair_suite.py", "--headless", "--json", "base.json", cwd=root, WRONG="a1")
    cli("run", "suites/pair_suite.py", "--headless", "--json", "now.json", cwd=root, WRONG="a1")
    # a1 fails in both: no regression, but a failure.
    assert cli("compare", "now.json", "base.json", cwd=root).returncode == 0
    gated = cli("compare", "now.json", "base.json", "--fail-on", "failures", cwd=root)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "1 case(s) failed" in gated.stdout


def test_an_empty_fail_on_is_a_usage_error(tmp_path):
    root = project(tmp_path)
    cli("run", "suites/pair_suite.py", "--headless", "--json", "base.json", cwd=root)
    for value in (",", "", " ", " , "):
        run = cli("run", "suites", "--headless", "--fail-on", value, cwd=root, WRONG="a1")
        assert run.returncode == 2 and "--fail-on" in run.stderr, (value, run.stderr)
        compare = cli("compare", "base.json", "base.json", "--fail-on", value, cwd=root)
        assert compare.returncode == 2 and "--fail-on" in compare.stderr, (value, compare.stderr)
    try:
        parse_fail_on(",")
    except ValueError as exc:
        assert "failures" in str(exc)
    else:
        raise AssertionError("an empty --fail-on was accepted")


# -- bug 6: shard membership is a function of the suite only ---------------------------------
def test_shards_do_not_depend_on_the_run_history(tmp_path):
    root = project(tmp_path)
    fresh = {}
    for i in (1, 2, 3):
        run = cli(
            "run", "suites", "--headless", "--shard", f"{i}/3", "--json", f"f{i}.json", cwd=root
        )
        assert run.returncode == 0, run.stderr
        fresh[i] = {(c.suite, c.name) for c in Report.load(root / f"f{i}.json").cases}
    # A history whose durations are lopsided: one case took far longer than the rest.
    for _ in range(2):
        cli("run", "suites", "--headless", cwd=root, WRONG="b2")
    for i in (1, 2, 3):
        cli("run", "suites", "--headless", "--shard", f"{i}/3", "--json", f"h{i}.json", cwd=root)
        seen = {(c.suite, c.name) for c in Report.load(root / f"h{i}.json").cases}
        assert seen == fresh[i], i


def test_assign_shards_is_pure_balanced_and_stable():
    keys = [("s", f"case-{n}") for n in range(10)]
    one = assign_shards(keys, 3)
    assert one == assign_shards(list(reversed(keys)), 3)
    sizes = sorted(list(one.values()).count(n) for n in (1, 2, 3))
    assert sizes == [3, 3, 4]
    assert Shard.parse("2/3") == Shard(2, 3)

"""Every CLI flow goes through the suite-run layer: gates, shards, decide, A/B, recheck."""

from __future__ import annotations

from pathlib import Path

from tests.test_ci_gate import cli, project
from tui_eval import Report
from tui_eval.core.settings import RunSettings
from tui_eval.report.gate import Shard, assign_shards, parse_fail_on
from tui_eval.service.request import ABRun, DecideRun


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


# -- one settings object, one export list ----------------------------------------------------
def test_the_export_list_is_the_one_list():
    import ast

    import tui_eval

    source = Path(tui_eval.__file__).read_text()
    guarded = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
    )
    typed = {alias.asname for node in guarded.body for alias in node.names}  # type: ignore[attr-defined]
    assert set(tui_eval.__all__) == typed == set(tui_eval._EXPORTS)
    assert "RunSettings" in tui_eval.__all__
    for name in tui_eval.__all__:
        assert getattr(tui_eval, name) is not None


# -- bug 3: decide, A/B and recheck go through SuiteRun ---------------------------------------
SETTINGS_SUITE = """
import os
from tui_eval import Case, Suite
from tui_eval.agents.http.context import current_sample
from tui_eval.agents.http.options import ProviderOptions


def seen() -> str:
    run = current_sample().run
    options = run.provider or ProviderOptions()
    cache = run.cache
    return (
        f"base_url={options.base_url} retries={options.max_retries} rpm={options.rpm} "
        f"cache={cache.mode if cache else 'off'}"
    )


async def agent(question: str) -> str:
    return seen()


agent_b = agent


def settings_reached(run) -> bool:
    # A check runs in the run's context too: what a judge's calls would use.
    return seen() == os.environ["EXPECTED"] and run.output == os.environ["EXPECTED"]


suite = Suite(
    "settings",
    agent=agent,
    provider=ProviderOptions(rpm=600),
    cases=[Case(f"q{i}", checks=[settings_reached], samples=2) for i in range(2)],
)
"""

EXPECTED = "base_url=http://proxy.test/v1 retries=7 rpm=600.0 cache=read-only"
FLAGS = ("--base-url", "http://proxy.test/v1", "--max-retries", "7", "--cache", "read-only")


def settings_project(tmp_path: Path) -> Path:
    (tmp_path / "suites").mkdir(exist_ok=True)
    (tmp_path / "suites" / "settings_suite.py").write_text(SETTINGS_SUITE)
    return tmp_path


def test_decide_honours_the_settings_and_writes_the_exports(tmp_path):
    root = settings_project(tmp_path)
    saved = cli(
        "run", "suites", "--headless", "--save-baseline", *FLAGS, cwd=root, EXPECTED=EXPECTED
    )
    assert saved.returncode == 0, saved.stdout + saved.stderr
    run = cli(
        "run", "suites", "--decide", "--max-samples", "6", *FLAGS,
        "--json", "d.json", "--junit", "d.xml", cwd=root, EXPECTED=EXPECTED,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = Report.load(root / "d.json")
    outputs = {s.output for c in report.cases for s in c.samples}
    assert outputs == {EXPECTED} and all(s.passed for c in report.cases for s in c.samples)
    assert (root / "d.xml").read_text().count("<testcase") == 2
    # The rounds were journaled like any run.
    from tui_eval.service.store import RunHistory

    record = RunHistory(root).runs()[0]
    assert isinstance(record.request.kind, DecideRun) and record.finished
    journaled = sum(
        1 for line in record.journal_path.read_text().splitlines() if '"sample"' in line
    )
    assert journaled == sum(len(c.samples) for c in report.cases) >= 4


def test_ab_honours_the_settings_and_writes_the_exports(tmp_path):
    root = settings_project(tmp_path)
    ab = cli(
        "ab", "suites", "--a", "settings_suite:agent", "--b", "settings_suite:agent_b",
        "--max-samples", "4", *FLAGS, "--json", "ab.json", "--junit", "ab.xml",
        cwd=root, EXPECTED=EXPECTED,
    )  # fmt: skip
    assert ab.returncode == 0, ab.stdout + ab.stderr
    report = Report.load(root / "ab.json")
    assert {s.output for c in report.cases for s in c.samples} == {EXPECTED}
    assert (root / "ab.xml").exists()


def test_recheck_honours_the_settings_and_writes_the_exports(tmp_path):
    root = settings_project(tmp_path)
    cli("run", "suites", "--headless", "--json", "r.json", *FLAGS, cwd=root, EXPECTED=EXPECTED)
    other = "base_url=http://other.test retries=7 rpm=600.0 cache=read-only"
    # The saved outputs name the first settings; the checks now see the new ones.
    re = cli(
        "recheck", "r.json", "suites", "--base-url", "http://other.test", "--max-retries", "7",
        "--cache", "read-only", "--json", "re.json", "--junit", "re.xml", cwd=root, EXPECTED=other,
    )  # fmt: skip
    assert re.returncode == 1, re.stdout + re.stderr  # outputs differ from EXPECTED: checks fail
    rechecked = Report.load(root / "re.json")
    assert {s.output for c in rechecked.cases for s in c.samples} == {EXPECTED}
    assert (root / "re.xml").exists()
    same = cli("recheck", "r.json", "suites", *FLAGS, cwd=root, EXPECTED=EXPECTED)
    assert same.returncode == 0, same.stdout + same.stderr


COIN_SUITE = """
from pathlib import Path

import pytest
from tui_eval import Case, Suite, contains

LOG = Path(__file__).with_name("calls.log")


async def agent(question: str) -> str:
    with LOG.open("a") as handle:
        handle.write(question + "\\n")
    return "ok"


other = agent

suite = Suite("coin", agent=agent, price=lambda usage: 1.0, concurrency=50,
              cases=[Case(f"q{i}", checks=[contains("ok")], samples=3) for i in range(3)])
"""


def coin_project(tmp_path: Path) -> Path:
    (tmp_path / "suites").mkdir(exist_ok=True)
    (tmp_path / "suites" / "flow_coin_suite.py").write_text(COIN_SUITE)
    return tmp_path / "suites" / "flow_coin_suite.py"


def calls(path: Path) -> int:
    log = path.with_name("calls.log")
    return len(log.read_text().split()) if log.exists() else 0


async def run_decision(path: Path, options, history):
    from tui_eval.service.run_plan import plan_run
    from tui_eval.service.suite_run import SuiteRun
    from tui_eval.suites import load_suites

    (suite,) = load_suites([path]).suites
    service = SuiteRun.start(plan_run(suite, options), history=history, invocation="test")
    report = await service.run()
    return service, report


def sample_counts(report: Report) -> dict[str, int]:
    return {c.name: len(c.samples) for c in report.cases}


def test_a_killed_decide_run_resumes_where_it_stopped(tmp_path):
    import anyio

    from tests.test_suite_run import simulate_kill
    from tui_eval.service.request import RunRequest
    from tui_eval.service.store import RunHistory
    from tui_eval.service.suite_run import SuiteRun

    path = coin_project(tmp_path)
    history = RunHistory(tmp_path)
    first, _ = anyio.run(run_decision, path, RunRequest(), history)
    assert (
        first.baseline_store.save(first.report, first.coverage).status.value == "saved"
    )  # 3 of 3 per case
    path.with_name("calls.log").unlink()
    service, whole = anyio.run(run_decision, path, RunRequest(kind=DecideRun()), history)
    assert service.decision is not None and not whole.cancelled
    total = sum(sample_counts(whole).values())
    assert total > 9 and calls(path) == total  # more rounds than the first
    # The same decision, killed after 7 journaled samples, then resumed:
    path.with_name("calls.log").unlink()
    anyio.run(run_decision, path, RunRequest(kind=DecideRun()), history)
    simulate_kill(history, keep=7)
    before = calls(path)
    record = history.interrupted()[0]
    assert isinstance(record.request.kind, DecideRun)

    async def resume():
        resumed = SuiteRun.resume(record, history=history)
        return resumed, await resumed.run()

    resumed, report = anyio.run(resume)
    assert calls(path) - before == total - 7  # only what the journal lacked ran
    assert sample_counts(report) == sample_counts(whole)
    assert [c.label for c in resumed.decision.diff.changes] == [
        c.label for c in service.decision.diff.changes
    ]
    assert history.runs()[0].finished and not history.interrupted()


def test_a_killed_ab_run_resumes_both_sides(tmp_path):
    import anyio

    from tests.test_suite_run import simulate_kill
    from tui_eval.service.request import RunRequest
    from tui_eval.service.store import RunHistory, read_journal_samples
    from tui_eval.service.suite_run import SuiteRun

    path = coin_project(tmp_path)
    history = RunHistory(tmp_path)
    options = RunRequest(
        kind=ABRun(a="flow_coin_suite:agent", b="flow_coin_suite:other"),
        settings=RunSettings(max_samples=20),
    )
    _, whole = anyio.run(run_decision, path, options, history)
    total = calls(path)
    record = history.runs()[0]
    a_side = read_journal_samples(record.journal_path, arm="a")
    assert sum(map(len, a_side.values())) + sum(len(c.samples) for c in whole.cases) == total
    path.with_name("calls.log").unlink()
    anyio.run(run_decision, path, options, history)
    simulate_kill(history, keep=10)
    before = calls(path)

    async def resume():
        resumed = SuiteRun.resume(history.interrupted()[0], history=history)
        return resumed, await resumed.run()

    resumed, report = anyio.run(resume)
    assert calls(path) - before == total - 10
    assert sample_counts(report) == sample_counts(whole)
    assert resumed.decision is not None and resumed.decision.other is not None


def test_decide_max_cost_bounds_every_round(tmp_path):
    import anyio

    from tui_eval.service.request import RunRequest
    from tui_eval.service.store import RunHistory

    path = coin_project(tmp_path)
    history = RunHistory(tmp_path)
    first, _ = anyio.run(run_decision, path, RunRequest(), history)
    first.baseline_store.save(first.report, first.coverage)
    path.with_name("calls.log").unlink()
    # $1 a sample at concurrency 50: the first round alone would spend $9.
    service, report = anyio.run(
        run_decision, path, RunRequest(kind=DecideRun(), settings=RunSettings(max_cost=4)), history
    )
    assert report.cost is not None and report.cost <= 4
    assert calls(path) == 4 and "max_cost $4 reached" in (report.stopped or "")
    assert all(c.label.startswith("undecided") for c in service.decision.diff.changes)


def test_decide_against_a_baseline_report_passed_in_is_journaled(tmp_path):
    """The app's Diff screen decides against a report it holds (the previous run's): no
    baseline file is read, and the rounds are journaled like any run."""
    import anyio

    from tui_eval.service.request import RunRequest
    from tui_eval.service.run_plan import plan_run
    from tui_eval.service.store import RunHistory, read_journal_samples
    from tui_eval.service.suite_run import SuiteRun
    from tui_eval.suites import load_suites

    path = coin_project(tmp_path)
    history = RunHistory(tmp_path)
    _, previous = anyio.run(run_decision, path, RunRequest(), history)
    (suite,) = load_suites([path]).suites
    assert not suite.baseline_path.exists()  # nothing to read: the report is the baseline

    async def decide():
        service = SuiteRun.start(
            plan_run(suite, RunRequest(kind=DecideRun()), baseline=previous),
            history=history,
            invocation="t",
        )
        return service, await service.run()

    service, report = anyio.run(decide)
    assert service.plan.baseline is previous and service.decision is not None
    assert [c.name for c in service.decision.diff.changes] == [c.name for c in previous.cases]
    record = history.runs()[0]
    assert isinstance(record.request.kind, DecideRun) and record.finished
    journaled = read_journal_samples(record.journal_path)
    assert sample_counts(report) == {name: len(s) for name, s in journaled.items()}


def test_a_killed_decide_run_against_a_previous_run_resumes_against_it(tmp_path):
    """The app's diff since the previous run starts its decide run (`m`) against that run's
    report, not the baseline file: a resume (the app's or `tui-eval resume`) compares with
    the same report, and says so when that report is gone."""
    import anyio

    from tests.test_suite_run import simulate_kill
    from tui_eval.service.request import RunRequest
    from tui_eval.service.run_plan import plan_run
    from tui_eval.service.store import RunHistory
    from tui_eval.service.suite_run import ResumeError, SuiteRun
    from tui_eval.suites import load_suites

    path = coin_project(tmp_path)
    history = RunHistory(tmp_path)
    # A baseline file of 6 samples a case, then a previous run of 3: they differ.
    saved, _ = anyio.run(run_decision, path, RunRequest(settings=RunSettings(samples=6)), history)
    assert saved.baseline_store.save(saved.report, saved.coverage).status.value == "saved"
    _, previous = anyio.run(run_decision, path, RunRequest(), history)
    previous_file = history.runs()[0].report_path
    options = RunRequest(kind=DecideRun(against=str(previous_file)))

    async def decide():
        (suite,) = load_suites([path]).suites
        service = SuiteRun.start(
            plan_run(suite, options, baseline=previous), history=history, invocation="t"
        )
        return service, await service.run()

    def verdicts(service):
        return [(c.name, c.baseline_total, c.label) for c in service.decision.diff.changes]

    whole, _ = anyio.run(decide)
    assert [total for _, total, _ in verdicts(whole)] == [3, 3, 3]
    anyio.run(decide)
    simulate_kill(history, keep=4)
    record = history.interrupted()[0]
    assert record.request.kind.against == str(previous_file)
    resumed = SuiteRun.resume(record, history=history)
    anyio.run(resumed.run)
    assert resumed.report is not None and not resumed.report.cancelled
    assert verdicts(resumed) == verdicts(whole)  # against the previous run, not the file
    assert str(previous_file) in resumed.compare().message
    # `tui-eval resume` does the same; and when that report is gone, it says which.
    anyio.run(decide)
    simulate_kill(history, keep=4)
    done = cli("resume", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 →" in done.stdout and "6/6 →" not in done.stdout
    anyio.run(decide)
    simulate_kill(history, keep=4)
    previous_file.unlink()
    gone = cli("resume", cwd=tmp_path)
    assert gone.returncode == 2, gone.stdout + gone.stderr
    assert str(previous_file) in gone.stderr and "no longer exists" in gone.stderr
    try:
        SuiteRun.resume(history.interrupted()[0], history=history)
    except ResumeError as exc:
        assert str(previous_file) in str(exc)
    else:
        raise AssertionError("resumed against a report that is gone")


def test_front_ends_import_neither_the_runner_nor_sequential():
    """What the `.importlinter` front-ends contract enforces, checked without it too."""
    import ast
    import configparser

    import tui_eval

    root = Path(tui_eval.__file__).parent
    config = configparser.ConfigParser()
    config.read(root.parent / ".importlinter")
    contract = config["importlinter:contract:front-ends"]
    fronts = contract["source_modules"].split()
    assert {"tui_eval.cli", "tui_eval.tui"} <= set(fronts)
    forbidden = contract["forbidden_modules"].split()
    assert {"tui_eval.run.runner", "tui_eval.run.sequential"} <= set(forbidden)
    files = []
    for module in fronts:
        path = root / (module.removeprefix("tui_eval.").replace(".", "/") + ".py")
        files += [path] if path.exists() else sorted(path.with_suffix("").rglob("*.py"))
    assert len(files) > 10  # the packages were walked, not just their __init__
    for path in files:
        module = str(path.relative_to(root.parent))
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                assert not name.startswith(tuple(forbidden)), (
                    module,
                    name,
                )


# -- issue 23/24: resume guards, interrupted runs, missing baselines, --last-failed ---------
def test_resume_refuses_when_the_suite_changed_unless_forced(tmp_path):
    import anyio

    from tests.test_suite_run import run_service, simulate_kill, write_suite
    from tui_eval.service.request import RunRequest
    from tui_eval.service.store import RunHistory

    path = write_suite(tmp_path / "suites")
    history = RunHistory(tmp_path)
    anyio.run(run_service, path, RunRequest(), history)
    simulate_kill(history, keep=2)
    path.write_text(path.read_text().replace('contains("answer")', 'contains("answer to")'))
    refused = cli("resume", cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        "changed since the run started" in refused.stderr and "6 case(s) changed" in refused.stderr
    )
    assert "--force" in refused.stderr and history.interrupted()  # still resumable
    forced = cli("resume", "--force", cwd=tmp_path)
    assert forced.returncode == 1, forced.stdout + forced.stderr  # bad-keep fails, as before
    assert not history.interrupted()


def test_a_journal_line_of_a_newer_schema_is_a_clear_error(tmp_path):
    import json

    import anyio

    from tests.test_suite_run import run_service, simulate_kill, write_suite
    from tui_eval.service.request import RunRequest
    from tui_eval.service.store import JOURNAL_SCHEMA_VERSION, RunHistory

    path = write_suite(tmp_path / "suites")
    history = RunHistory(tmp_path)
    anyio.run(run_service, path, RunRequest(), history)
    simulate_kill(history, keep=2)
    journal = history.runs()[0].journal_path
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    lines[2]["schema_version"] = JOURNAL_SCHEMA_VERSION + 1  # otherwise a valid sample line
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = cli("resume", cwd=tmp_path)
    assert result.returncode == 2 and "newer tui-eval" in result.stderr, result.stderr
    assert f"schema_version {JOURNAL_SCHEMA_VERSION + 1}" in result.stderr


def test_an_interrupted_run_does_not_report_unrun_cases_as_removed(tmp_path):
    import anyio

    from tests.test_suite_run import write_suite
    from tui_eval.service.request import RunRequest
    from tui_eval.service.run_plan import plan_run
    from tui_eval.service.store import RunHistory
    from tui_eval.service.suite_run import SuiteRun
    from tui_eval.suites import load_suites

    path = write_suite(tmp_path / "suites")
    slow = "import anyio\n" + path.read_text().replace(
        "async def agent(question: str) -> str:\n",
        "async def agent(question: str) -> str:\n    await anyio.sleep(0.01)\n",
    )
    path.write_text(slow)
    (suite,) = load_suites([path]).suites

    async def run(stop_after: int | None):
        finished = []

        def on_event(event):
            from tui_eval.run.events import SampleFinished

            if isinstance(event, SampleFinished):
                finished.append(event)
                if stop_after is not None and len(finished) == stop_after:
                    service.cancel()  # what Ctrl+C does

        service = SuiteRun.start(
            plan_run(suite, RunRequest()), history=RunHistory(tmp_path), invocation="t"
        )
        service.on_event = on_event
        await service.run()
        return service

    full = anyio.run(run, None)
    assert full.baseline_store.save(full.report, full.coverage).status.value == "saved"
    cut = anyio.run(run, 2)
    assert cut.report is not None and cut.report.cancelled and len(cut.report.cases) == 2
    diff = cut.compare().diff
    assert diff is not None and diff.removed == []
    # A case really gone from the suite is still "removed", cut short or not.
    path.write_text(path.read_text().replace('"drop-1"', ""))
    (suite,) = load_suites([path]).suites
    cut = anyio.run(run, 2)
    assert cut.compare().diff.removed == ["drop-1"]


def test_fail_on_regressions_without_any_baseline_says_so_and_fails_closed(tmp_path):
    root = project(tmp_path)
    default = cli("run", "suites", "--headless", cwd=root)
    assert default.returncode == 0  # a new project's first run passes...
    gated = cli("run", "suites", "--headless", "--fail-on", "regressions", cwd=root)
    assert gated.returncode == 1, (
        gated.stdout + gated.stderr
    )  # ...but an explicit gate has nothing to check
    assert "no baseline for suite 'alpha'" in gated.stderr
    assert "no baseline to check regressions against" in gated.stdout
    # One suite with a baseline: the other is new, said so, and does not fail the gate.
    cli("run", "suites", "--headless", "--save-baseline", "--filter", "a", cwd=root)
    (root / "suites" / "__baselines__" / "beta.json").unlink(missing_ok=True)
    one = cli("run", "suites", "--headless", "--fail-on", "regressions", cwd=root)
    assert one.returncode == 0, one.stdout + one.stderr
    assert "no baseline for suite 'beta'" in one.stderr


def test_the_ci_gate_compares_a_new_suite_as_new_not_as_an_error(tmp_path):
    root = project(tmp_path)
    cli("run", "suites", "--headless", "--save-baseline", cwd=root)
    (root / "suites" / "__baselines__" / "beta.json").unlink()
    cli("run", "suites", "--headless", "--json", "all.json", cwd=root, WRONG="a2")
    gate = cli("compare", "all.json", "--fail-on", "regressions,removed", cwd=root)
    assert gate.returncode == 1 and "1 regression(s)" in gate.stdout, gate.stdout + gate.stderr
    assert "no baseline for suite 'beta'" in gate.stderr and "4 case(s) are new" in gate.stderr
    fine = cli("run", "suites", "--headless", "--json", "ok.json", cwd=root)
    assert cli("compare", "ok.json", "--fail-on", "regressions,removed", cwd=root).returncode == 0
    assert fine.returncode == 0
    for name in ("alpha.json",):
        (root / "suites" / "__baselines__" / name).unlink()
    none = cli("compare", "ok.json", cwd=root)
    assert none.returncode == 2 and "no baseline for suite" in none.stderr


def test_last_failed_reruns_what_failed_in_each_suites_last_run(tmp_path):
    root = project(tmp_path)
    first = cli("run", "suites", "--headless", "--last-failed", cwd=root, WRONG="a1,b2")
    assert "no recorded run" in first.stdout and first.returncode == 1
    again = cli("run", "suites", "--headless", "--lf", "--json", "lf.json", cwd=root)
    assert again.returncode == 0, again.stdout + again.stderr
    ran = {(c.suite, c.name) for c in Report.load(root / "lf.json").cases}
    assert ran == {("alpha", "a1"), ("beta", "b2")}
    everything = cli("run", "suites", "--headless", "--lf", "--json", "all.json", cwd=root)
    assert "no failure in its last run" in everything.stdout
    assert len(Report.load(root / "all.json").cases) == 7


def test_results_diff_and_stored_values_have_no_cycle_even_in_annotations():
    """The cycle report → diff → report held only because `if TYPE_CHECKING:` imports
    were left out of the graph; the result types now live below both."""
    import grimp

    graph = grimp.build_graph("tui_eval", exclude_type_checking_imports=False)
    for lower in ("tui_eval.report.diff", "tui_eval.report.stored_values", "tui_eval.core.results"):
        assert (
            graph.find_shortest_chain(importer=lower, imported="tui_eval.report.report") is None
        ), lower
    assert (
        graph.find_shortest_chain(importer="tui_eval.core.results", imported="tui_eval.report.diff")
        is None
    )

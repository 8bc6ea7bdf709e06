"""Baseline files are made for git: pretty, stable, and the same bytes for the same results."""

from __future__ import annotations

import json

import anyio
import pytest

from tui_eval import Agent, Case, Suite, contains
from tui_eval.report.baselines import BaselineStatus
from tui_eval.report.report import Report
from tui_eval.service.request import RunRequest
from tui_eval.service.run_plan import plan_run
from tui_eval.service.suite_run import SuiteRun
from tui_eval.testing import ScriptedProvider, call, text

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def make_suite(tmp_path, order: list[str], wrong: frozenset[str] = frozenset()) -> Suite:
    delays = iter([0.03, 0.0, 0.02, 0.01] * 10)

    async def slow_add(a: int, b: int) -> int:
        """Add two numbers."""
        await anyio.sleep(next(delays))  # latencies differ from run to run
        return a + b

    def script(name: str) -> list:
        return [call("slow_add", {"a": 1, "b": 2}), text("nope" if name in wrong else "3 " + name)]

    cases = [
        Case(name, checks=[contains("3")], model=lambda name=name: ScriptedProvider(script(name)))
        for name in order
    ]
    agent = Agent(ScriptedProvider(name="unused"), tools=[slow_add])
    suite = Suite("git", agent=agent, cases=cases, price=lambda usage: 0.001 * usage.requests)
    suite.path = tmp_path / "git_suite.py"
    return suite


async def run_and_save(suite: Suite) -> SuiteRun:
    run = SuiteRun.start(plan_run(suite, RunRequest()), history=None, invocation="test")
    await run.run()
    assert run.baseline_store.save(run.report, run.coverage).status is BaselineStatus.SAVED
    return run


async def test_saving_an_unchanged_run_again_leaves_the_file_byte_identical(tmp_path):
    await run_and_save(make_suite(tmp_path, ["b", "a", "c"]))
    path = tmp_path / "__baselines__" / "git.json"
    first = path.read_bytes()
    # Another run, other latencies, timestamps and case order; the same results.
    await run_and_save(make_suite(tmp_path, ["c", "a", "b"]))
    assert path.read_bytes() == first
    text_ = first.decode()
    assert text_.endswith("}\n") and text_.count("\n") > 50  # pretty-printed
    for volatile in ('"latency_ms"', '"started_at"', '"duration_s"', '"run_id"', '"cost"'):
        assert volatile not in text_
    document = json.loads(text_)
    assert [case["name"] for case in document["report"]["cases"]] == ["a", "b", "c"]
    # One case per block: each case starts on its own line at the same indentation.
    assert [line for line in text_.splitlines() if line.startswith('        "name": ')] == [
        '        "name": "a",',
        '        "name": "b",',
        '        "name": "c",',
    ]
    loaded = Report.load(path)
    assert [c.name for c in loaded.cases] == ["a", "b", "c"] and loaded.passed


async def test_a_changed_result_changes_only_its_case_block(tmp_path):
    await run_and_save(make_suite(tmp_path, ["a", "b", "c"]))
    path = tmp_path / "__baselines__" / "git.json"
    before = path.read_text().splitlines()
    await run_and_save(make_suite(tmp_path, ["a", "b", "c"], wrong=frozenset({"b"})))
    after = path.read_text().splitlines()
    changed = [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]
    assert changed  # and every changed line is inside case b's block
    starts = [i for i, line in enumerate(after) if line.startswith('        "name": ')]
    b_block = range(starts[1], starts[2])
    assert all(i in b_block for i in changed)


async def test_an_old_single_line_baseline_still_loads_and_compares(tmp_path):
    suite = make_suite(tmp_path, ["a", "b"])
    run = SuiteRun.start(plan_run(suite, RunRequest()), history=None, invocation="test")
    report = await run.run()
    path = tmp_path / "__baselines__" / "git.json"
    report.save(path)  # how earlier versions wrote baselines: one line, with latencies
    assert path.read_text().count("\n") == 0
    outcome = run.compare()
    assert outcome.status is BaselineStatus.COMPARED and outcome.diff is not None
    assert outcome.diff.ok and len(outcome.diff.unchanged) == 2

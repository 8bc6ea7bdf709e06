"""`compare_agents()` pairs sample i of A with sample i of B: each round runs both sides at
once, so drift in the API between A's samples and B's falls on both."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import anyio
import pytest

from tui_eval import Case, contains
from tui_eval.run.sequential import compare_agents

pytestmark = pytest.mark.anyio


class Rendezvous:
    """Agents A and B whose sample k of a case waits until the other side's sample k of
    that case has started: it can finish only if the two run at the same time."""

    def __init__(self) -> None:
        self.started: dict[tuple[str, str, int], anyio.Event] = defaultdict(anyio.Event)
        self.calls: dict[tuple[str, str], int] = defaultdict(int)
        self.most_at_once = 0
        self.running = 0

    def side(self, name: str, other: str) -> Any:
        async def agent(question: Any) -> str:
            index = self.calls[name, question]
            self.calls[name, question] += 1
            self.started[name, question, index].set()
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            try:
                with anyio.fail_after(5):  # a stuck guard: sequential sides never meet
                    await self.started[other, question, index].wait()
            finally:
                self.running -= 1
            return "ok"

        return agent


async def test_a_and_b_samples_of_a_round_run_side_by_side():
    meeting = Rendezvous()
    cases = [Case(f"q{i}", checks=[contains("ok")], samples=2) for i in range(5)]
    diff = await compare_agents(
        meeting.side("a", "b"), meeting.side("b", "a"), cases, max_samples=12, concurrency=4
    )
    # Every sample met its pair (none gave up waiting), so both sides passed throughout.
    assert len(diff.changes) == 5
    assert all(c.baseline_passed == c.baseline_total for c in diff.changes)
    assert all(c.current_passed == c.current_total for c in diff.changes)
    assert all(c.label != "regression" for c in diff.changes)
    assert meeting.calls["a", "q0"] == meeting.calls["b", "q0"] >= 2
    # Half the concurrency each: no more samples at once than the run's concurrency.
    assert meeting.most_at_once <= 4


PAIRED_SUITE = """
from collections import defaultdict

import anyio

from tui_eval import Case, Suite, contains

started = defaultdict(anyio.Event)
calls = defaultdict(int)
running = {"now": 0, "most": 0}
hold = {"until": None}  # an anyio.Event: samples wait for it, when set by the test
both_waiting = {"event": None}


def side(name, other):
    async def agent(question):
        index = calls[name, question]
        calls[name, question] += 1
        started[name, question, index].set()
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        try:
            if hold["until"] is not None:
                if running["now"] >= 2 and both_waiting["event"] is not None:
                    both_waiting["event"].set()
                await hold["until"].wait()
            with anyio.fail_after(5):  # a stuck guard: sequential sides never meet
                await started[other, question, index].wait()
        finally:
            running["now"] -= 1
        return "ok"

    return agent


a = side("a", "b")
b = side("b", "a")

suite = Suite("paired", agent=b, concurrency=4,
              cases=[Case(f"q{i}", checks=[contains("ok")], samples=2) for i in range(5)])
"""


def _paired_project(tmp_path):
    (tmp_path / "suites").mkdir()
    path = tmp_path / "suites" / "paired_rounds_suite.py"
    path.write_text(PAIRED_SUITE)
    return path


def _start(path, tmp_path):
    from tui_eval.core.settings import RunSettings
    from tui_eval.service.request import ABRun, RunRequest
    from tui_eval.service.run_plan import plan_run
    from tui_eval.service.store import RunHistory
    from tui_eval.service.suite_run import SuiteRun
    from tui_eval.suites import load_suites

    (suite,) = load_suites([path]).suites
    options = RunRequest(
        kind=ABRun(a="paired_rounds_suite:a", b="paired_rounds_suite:b"),
        settings=RunSettings(max_samples=12),
    )
    return SuiteRun.start(plan_run(suite, options), history=RunHistory(tmp_path), invocation="test")


async def test_an_ab_suite_run_runs_both_sides_of_a_round_at_once(tmp_path):
    import sys

    service = _start(_paired_project(tmp_path), tmp_path)
    report = await service.run()
    module = sys.modules["paired_rounds_suite"]
    assert service.decision is not None and service.decision.other is not None
    assert all(c.samples_passed == len(c.samples) for c in report.cases)
    assert all(c.samples_passed == len(c.samples) for c in service.decision.other.cases)
    assert module.running["most"] <= 4  # the suite's concurrency, shared by the two sides


async def test_cancelling_an_ab_run_stops_both_sides(tmp_path):
    import sys

    service = _start(_paired_project(tmp_path), tmp_path)
    module = sys.modules["paired_rounds_suite"]
    module.hold["until"] = anyio.Event()
    module.both_waiting["event"] = anyio.Event()
    result: list = []

    async def run() -> None:
        result.append(await service.run())

    with anyio.fail_after(20):  # a stuck guard: a side left running never ends
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await module.both_waiting["event"].wait()
            service.cancel()
    assert result and result[0].cancelled

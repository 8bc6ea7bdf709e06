"""Hardening: runs that neither lie nor die, whatever the agent, its checks or its model do."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

from tui_eval import Case, CheckResult, contains, evaluate, llm_judge
from tui_eval.testing import ScriptedProvider, text

pytestmark = pytest.mark.anyio


# -- checks that return nonsense -----------------------------------------------------------
@pytest.mark.parametrize("returned", ["false", "no", "FAILED", "", b"yes", [True], {"ok": 1}])
async def test_a_check_returning_something_else_is_an_error_naming_it(returned):
    def verdict_as_text(run):
        return returned

    report = await evaluate(_echo, [Case("q", checks=[verdict_as_text])])
    check = report.cases[0].samples[0].checks[0]
    assert not check.passed
    assert "verdict_as_text" in check.reason and "must return" in check.reason


@pytest.mark.parametrize("score", [1.5, -0.1, float("nan"), float("inf")])
async def test_a_score_outside_0_1_is_an_error(score):
    def scored(run):
        return score

    def result(run):
        return CheckResult("custom", True, score)

    report = await evaluate(_echo, [Case("q", checks=[scored, result])])
    first, second = report.cases[0].samples[0].checks
    assert not first.passed and "outside 0..1" in first.reason
    assert not second.passed and "outside 0..1" in second.reason


async def test_a_judge_verdict_with_a_boolean_score_fails_closed():
    judge = ScriptedProvider([text('{"score": true, "reasoning": "looks fine"}')])
    report = await evaluate(_echo, [Case("q", checks=[llm_judge("anything", model=judge)])])
    check = report.cases[0].samples[0].checks[0]
    assert not check.passed and "score" in check.reason


# -- exceptions that look like cancellation ------------------------------------------------
@pytest.mark.parametrize("raised", [asyncio.CancelledError, KeyboardInterrupt, SystemExit])
async def test_an_agent_raising_a_control_exception_fails_only_its_sample(raised):
    async def agent(question: str) -> str:
        if question == "bad":
            raise raised()
        await anyio.sleep(0.01)
        return "ok " + question

    cases = [Case(name, checks=[contains("ok")]) for name in ("a", "bad", "b", "c")]
    report = await evaluate(agent, cases, concurrency=2)
    assert not report.cancelled and not report.passed
    assert [c.name for c in report.cases] == ["a", "bad", "b", "c"]
    bad = report.cases[1].samples[0]
    assert bad.status == "error" and raised.__name__ in bad.error
    assert all(c.passed for c in report.cases if c.name != "bad")


async def test_a_check_raising_cancelled_fails_only_that_check():
    def sneaky(run):
        raise asyncio.CancelledError()

    report = await evaluate(_echo, [Case("q", checks=[sneaky, contains("q")])])
    first, second = report.cases[0].samples[0].checks
    assert not first.passed and "CancelledError" in first.reason and second.passed


async def test_a_real_cancellation_from_outside_still_cancels():
    started, cancelled = anyio.Event(), anyio.Event()

    async def slow(question: str) -> str:
        started.set()
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "ok"

    finished = False
    with anyio.fail_after(60):  # a hang guard, not a timing assertion
        with anyio.CancelScope() as outside:

            async def cancel_once_started() -> None:
                await started.wait()
                outside.cancel()

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_once_started)
                await evaluate(slow, [Case("q", checks=[contains("ok")])])
                finished = True
    # The cancellation reached the agent and ended evaluate() instead of becoming a sample.
    assert outside.cancelled_caught and cancelled.is_set() and not finished


# -- timeouts that bound everything --------------------------------------------------------
async def test_case_timeout_bounds_a_judge_that_never_answers():
    class Hanging:
        async def complete(self, messages, tools, *, output_schema=None, settings=None):
            await anyio.sleep(3600)

    with anyio.fail_after(60):  # a hang guard: the case's own timeout must end it
        report = await evaluate(
            _echo, [Case("q", checks=[llm_judge("rubric", model=Hanging())], timeout=0.3)]
        )
    sample = report.cases[0].samples[0]
    assert sample.status == "timeout" and "checks" in sample.error
    assert sample.output == "q"  # the agent's answer is kept


async def test_an_agent_that_blocks_the_loop_past_its_timeout_is_a_timeout():
    async def blocking(question: str) -> str:
        time.sleep(0.4)  # blocks the event loop: no cancellation can reach it
        return "ok"

    report = await evaluate(blocking, [Case("q", checks=[contains("ok")], timeout=0.1)])
    sample = report.cases[0].samples[0]
    assert sample.status == "timeout" and "blocked" in sample.error


async def test_sync_agents_run_in_a_thread_and_time_out():
    started, loop_saw_it, release = threading.Event(), threading.Event(), threading.Event()
    answered: list[bool] = []

    def blocking_sync(question: str) -> str:
        started.set()
        # Only the event loop sets this: it can while the agent works in another thread.
        answered.append(loop_saw_it.wait(10))
        release.wait(10)  # held until after the run: only a timeout can end the sample
        return "ok"

    async def loop_side() -> None:
        while not started.is_set():
            await anyio.sleep(0.005)
        loop_saw_it.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(loop_side)
            report = await evaluate(
                blocking_sync, [Case("q", checks=[contains("ok")], timeout=0.2)]
            )
    finally:
        release.set()
    # Reported as a timeout although the thread ran on (a thread cannot be interrupted).
    assert report.cases[0].samples[0].status == "timeout"
    assert answered == [True]  # the loop kept turning while the agent worked


async def _echo(question: str) -> str:
    return question


async def test_a_10_mb_output_is_stored_once_per_sample(tmp_path):
    from tui_eval.report.report import Report
    from tui_eval.service.store import RunHistory, read_journal_samples

    huge = "A" * 10_000_000

    async def agent(question: str) -> str:
        return huge

    report = await evaluate(agent, [Case("q", checks=[contains("A")])])
    path = report.save(tmp_path / "r.json")
    assert 10_000_000 < path.stat().st_size < 10_100_000
    back = Report.load(path).cases[0].samples[0]
    assert back.output == huge and back.run.messages[-1].content == huge
    journal = RunHistory(tmp_path).start("s", "", invocation="t")
    journal.append(report.cases[0].samples[0])
    journal.close()
    assert journal.record.journal_path.stat().st_size < 10_100_000
    (sample,) = read_journal_samples(journal.record.journal_path)["q"]
    assert sample.run.messages[-1].content == huge
    # Nothing changed in memory.
    assert report.cases[0].samples[0].run.messages[-1].content == huge

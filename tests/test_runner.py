from __future__ import annotations

import re

import anyio
import anyio.lowlevel
import pytest

from tui_eval import (
    Agent,
    Case,
    RunResult,
    Usage,
    contains,
    evaluate,
    evaluate_iter,
    llm_judge,
    tool_called,
)
from tui_eval.checks import verdict_reply
from tui_eval.core.settings import RunSettings
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.events import (
    CaseFinished,
    RunFinished,
    RunStarted,
    SampleFinished,
    SampleStateChanged,
)
from tui_eval.testing import ScriptedProvider, call, text

pytestmark = pytest.mark.anyio


def calculator(expression: str) -> float:
    """Evaluate an arithmetic expression."""
    return float(eval(expression, {"__builtins__": {}}))


def seed_cases(judge: ScriptedProvider) -> list[Case]:
    return [
        Case("法国首都是哪里？", checks=[contains("巴黎")], model=ScriptedProvider([text("巴黎")])),
        Case(
            "23.4 * 91 等于多少？",
            checks=[tool_called("calculator")],
            model=ScriptedProvider(
                [call("calculator", {"expression": "23.4 * 91"}), text("2129.4")]
            ),
        ),
        Case(
            "为一家书店写一句雨天文案",
            checks=[llm_judge("不超过 30 个汉字，包含雨天和阅读意象，不使用感叹号", model=judge)],
            samples=4,
            pass_threshold=0.75,
            model=ScriptedProvider.factory([text("雨天，来书店读一本书")]),
        ),
    ]


async def test_seed_headline_example():
    judge = ScriptedProvider(
        [
            text(verdict_reply(0.9, "符合要求")),
            text(verdict_reply(0.55, "缺少阅读意象")),
            text(verdict_reply(0.8, "符合要求")),
            text(verdict_reply(0.4, "超过 30 个汉字")),
        ]
    )
    agent = Agent(ScriptedProvider([]), tools=[calculator])
    report = await evaluate(agent, seed_cases(judge), concurrency=1)
    printed = str(report)
    lines = printed.splitlines()
    assert re.fullmatch(
        r"eval: 2/3 cases passed \(67%\) · 6 samples · [\d,]+ tokens · \d+\.\ds · 95% CI 21–94%",
        lines[0],
    )
    assert lines[1].startswith("  ✓ 法国首都是哪里？") and lines[1].endswith("1/1")
    assert lines[3].startswith(
        "  ✗ 为一家书店写一句雨天文案  2/4  llm_judge (score 0.55 < 0.70) — 缺少阅读意象"
    )
    # CJK names are padded by terminal cells, so the counts line up.
    from rich.cells import cell_len

    assert len({cell_len(line.split("1/1")[0]) for line in lines[1:3]}) == 1
    assert not report.passed and report.pass_rate == pytest.approx(2 / 3)
    judged = report.cases[2]
    assert judged.pass_rate == 0.5 and judged.samples[0].judge_usage.requests == 1
    assert judged.samples[0].usage.total_tokens > judged.samples[0].run.usage.total_tokens
    assert report.usage.total_tokens == sum(s.usage.total_tokens for s in report.samples)


async def test_price_gives_cost():
    report = await evaluate(
        lambda: Agent(ScriptedProvider([text("x", usage=Usage(1000, 100))])),
        [Case("q", checks=[contains("x")], samples=2)],
        price=lambda u: u.input_tokens * 3e-6 + u.output_tokens * 15e-6,
    )
    assert report.cost == pytest.approx(2 * (0.003 + 0.0015))
    assert report.header().endswith("· $0.0090 · 95% CI 21–100%")


async def test_timeout_cancels_and_others_finish():
    async def agent(question: str) -> str:
        if question == "slow":
            await anyio.sleep(30)
        return "done"

    with anyio.fail_after(60):  # a hang guard: the 30 s sleep must be cut by the timeout
        report = await evaluate(
            agent,
            [
                Case("slow", checks=[contains("done")], timeout=0.2),
                Case("fast", checks=[contains("done")]),
            ],
        )
    slow, fast = report.cases
    assert slow.samples[0].status == "timeout" and "timeout of 0.2s" in slow.samples[0].error
    assert 0.2 <= slow.samples[0].latency_ms / 1000 < 30
    assert fast.passed


async def test_agent_error_is_an_error_sample_and_check_errors_fail_alone():
    async def agent(question: str) -> str:
        if question == "boom":
            raise RuntimeError("the database is down")
        return "fine"

    def broken(result: RunResult) -> bool:
        raise ValueError("bad check")

    report = await evaluate(
        agent,
        [Case("boom", checks=[contains("fine")]), Case("ok", checks=[contains("fine"), broken])],
    )
    boom, ok = report.cases
    assert boom.samples[0].status == "error"
    assert boom.samples[0].error == "RuntimeError: the database is down"
    assert "Traceback" in boom.samples[0].traceback
    assert ok.samples[0].status == "failed"
    assert [c.passed for c in ok.samples[0].checks] == [True, False]
    assert ok.samples[0].checks[1].reason == "check raised ValueError: bad check"


async def test_failed_agent_keeps_partial_trajectory():
    agent = Agent(ScriptedProvider([call("calculator", {"expression": "1+1"})]), tools=[calculator])
    report = await evaluate(agent, [Case("1+1", checks=[contains("2")])])
    sample = report.cases[0].samples[0]
    assert sample.status == "error" and "script exhausted" in sample.error
    assert sample.run is not None and sample.run.tool_names == ["calculator"]


async def test_concurrency_limit_and_serial_samples():
    in_flight: set[str] = set()
    peak = 0
    overlap_same_case = False
    seen: list[str] = []

    async def agent(question: str) -> str:
        nonlocal peak, overlap_same_case
        if question in in_flight:
            overlap_same_case = True
        in_flight.add(question)
        peak = max(peak, len(in_flight))
        seen.append(question)
        await anyio.sleep(0.01)
        in_flight.discard(question)
        return question

    cases = [Case(f"case {i}", checks=[contains("case")], samples=2) for i in range(8)]
    report = await evaluate(agent, cases, concurrency=4)
    assert report.passed and len(seen) == 16
    assert peak == 4
    assert not overlap_same_case


async def test_shared_agent_instance_is_reused_across_samples():
    agent = Agent(ScriptedProvider([text("once")]))
    report = await evaluate(agent, [Case("q", checks=[contains("once")], samples=2)])
    statuses = [s.status for s in report.cases[0].samples]
    assert statuses == ["passed", "error"]
    assert "script exhausted after 1 responses" in report.cases[0].samples[1].error


async def test_fail_fast_stops_after_first_failing_case():
    calls: list[str] = []

    async def agent(question: str) -> str:
        calls.append(question)
        return "no"

    cases = [Case(f"q{i}", checks=[contains("yes")]) for i in range(5)]
    report = await evaluate(agent, cases, fail_fast=True, concurrency=4)
    assert calls == ["q0"]
    assert [c.name for c in report.cases] == ["q0"]


async def test_events_cover_every_state_change():
    events = []
    judge = ScriptedProvider.factory([text(verdict_reply(1.0, "ok"))])
    cases = [Case("a", checks=[contains("a"), llm_judge("r", model=judge)], samples=2)]

    async def agent(q: str) -> str:
        return q

    report = await evaluate(agent, cases, on_event=events.append)
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    assert isinstance(events[0], RunStarted) and events[0].total_samples == 2
    states = [(e.sample_index, e.state) for e in events if isinstance(e, SampleStateChanged)]
    assert states == [(0, "running"), (0, "judging"), (1, "running"), (1, "judging")]
    assert sum(isinstance(e, SampleFinished) for e in events) == 2
    assert sum(isinstance(e, CaseFinished) for e in events) == 1
    assert events[-1].report is report


async def test_cancel_keeps_finished_samples():
    evaluation: Evaluation

    async def agent(q: str) -> str:
        await anyio.sleep(0.01 if q.startswith("fast") else 10)
        return q

    def on_event(event):
        if (
            isinstance(event, SampleFinished)
            and sum(len(c.samples) for c in evaluation.report.cases) >= 3
        ):
            evaluation.cancel()

    cases = [Case(f"fast {i}", checks=[contains("fast")]) for i in range(3)] + [
        Case("slow", checks=[])
    ]
    evaluation = Evaluation(agent, cases, settings=RunSettings(concurrency=4), on_event=on_event)
    with anyio.fail_after(5):
        report = await evaluation.run()
    assert report.cancelled and not report.passed
    assert [c.name for c in report.cases] == ["fast 0", "fast 1", "fast 2"]
    assert "cancelled" in report.header()


async def test_outer_cancellation_still_publishes_partial_report():
    finished: list[RunFinished] = []

    async def agent(q: str) -> str:
        await anyio.sleep(0 if q == "a" else 10)
        return q

    with anyio.move_on_after(0.3):
        await evaluate(
            agent,
            [Case("a"), Case("b")],
            on_event=lambda e: isinstance(e, RunFinished) and finished.append(e),
        )
    assert len(finished) == 1
    assert finished[0].report.cancelled and [c.name for c in finished[0].report.cases] == ["a"]


async def test_evaluate_iter_yields_events_and_stops_cleanly():
    async def agent(q: str) -> str:
        await anyio.sleep(0.001)
        return q

    cases = [Case(f"c{i}", checks=[contains("c")]) for i in range(5)]
    events = [event async for event in evaluate_iter(agent, cases)]
    assert isinstance(events[-1], RunFinished) and events[-1].report.passed

    seen = 0
    stream = evaluate_iter(agent, cases, concurrency=1)
    async for event in stream:
        if isinstance(event, SampleFinished):
            seen += 1
            break
    await stream.aclose()
    assert seen == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_runs_under_trio_and_asyncio(anyio_backend):
    judge = ScriptedProvider.factory([text(verdict_reply(0.9, "good"))])
    agent = Agent(ScriptedProvider([]), tools=[calculator])
    cases = [
        Case(
            "2+3",
            checks=[tool_called("calculator"), llm_judge("correct", model=judge)],
            model=ScriptedProvider.factory(
                [call("calculator", {"expression": "2+3"}), text("5", delay=0.01)]
            ),
            samples=3,
            timeout=5,
        )
    ]
    report = await evaluate(agent, cases)
    assert report.passed and len(report.samples) == 3


async def test_secrets_from_the_environment_never_reach_errors(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "sk-live-abcdef123456")

    async def agent(question: str) -> str:
        raise RuntimeError("auth failed for key sk-live-abcdef123456")

    def check(result: RunResult) -> bool:
        raise ValueError("sk-live-abcdef123456 leaked")

    report = await evaluate(agent, [Case("q", checks=[check])])
    sample = report.cases[0].samples[0]
    assert (
        "sk-live" not in sample.error
        and "***" in sample.error
        and "sk-live" not in sample.traceback
    )


async def test_every_check_runs_exactly_once_per_sample():
    seen: list[str] = []

    def counting(run: RunResult) -> bool:
        seen.append(run.output)
        return True

    async def later(run: RunResult) -> bool:
        await anyio.sleep(0)
        return True

    async def agent(question: str) -> str:
        return question

    # The second check looks synchronous but returns an awaitable.
    report = await evaluate(
        agent, [Case("a", checks=[counting, lambda r: later(r)]), Case("b", checks=[counting])]
    )
    assert report.passed
    assert sorted(seen) == ["a", "b"]


@pytest.mark.parametrize("parallel_samples", [False, True])
async def test_an_agent_that_never_waits_still_gives_the_event_loop_turns(parallel_samples):
    """The app's keys and Ctrl+C need the loop while samples that never block run back to back."""
    finished = 0
    seen_mid_run: list[int] = []

    def on_event(event: object) -> None:
        nonlocal finished
        if isinstance(event, SampleFinished):
            finished += 1

    async def agent(question: str) -> str:
        return question

    cases = [Case(f"q{i}", checks=[contains("q")], samples=5) for i in range(40)]
    evaluation = Evaluation(
        agent,
        cases,
        settings=RunSettings(concurrency=2, parallel_samples=parallel_samples),
        on_event=on_event,
    )

    async def watch() -> None:
        while not evaluation.finished:
            if 0 < finished < 200:
                seen_mid_run.append(finished)
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        await anyio.lowlevel.checkpoint()  # the watcher is waiting before the run starts
        report = await evaluation.run()
    assert len(report.samples) == 200
    assert seen_mid_run  # another task ran between samples


async def test_an_error_raised_from_none_does_not_name_the_error_it_replaced():
    """A sample's error names tui-eval's error an SDK wrapped; an agent that replaced one
    with `raise ... from None` (hiding it on purpose) got it named all the same."""
    from tui_eval.agents.providers.base import ProviderError

    def agent(prompt: str) -> str:
        try:
            raise ProviderError("the API said no")
        except ProviderError:
            raise RuntimeError("the agent gave up") from None

    report = await evaluate(agent, [Case("hi")])
    assert report.samples[0].error == "RuntimeError: the agent gave up"

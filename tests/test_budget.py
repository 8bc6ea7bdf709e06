"""`max_cost`: reserve before a sample starts, settle after; the spend's bound holds at
any concurrency, across `decide()`'s rounds, and every front-end states the same spend."""

from __future__ import annotations

import textwrap
from typing import Any

import anyio
import pytest

from tests.test_cli import cli
from tui_eval import Case, contains, evaluate
from tui_eval.agents.messages import RunResult, Usage
from tui_eval.core.budget import CostBudget
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.core.settings import RunSettings
from tui_eval.report.report import Report
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.events import SampleFinished, SampleStateChanged
from tui_eval.run.sequential import compare_agents, decide

pytestmark = pytest.mark.anyio


class CountingAgent:
    """Answers "ok" after a short wait; counts calls and the most running at once."""

    def __init__(self, delay: float = 0.01) -> None:
        self.delay = delay
        self.calls = 0
        self.running = 0
        self.most = 0

    async def __call__(self, question: Any) -> str:
        self.calls += 1
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await anyio.sleep(self.delay)
        finally:
            self.running -= 1
        return "ok"


def cases(n: int, samples: int = 1) -> list[Case]:
    return [Case(f"q{i}", checks=[contains("ok")], name=f"c{i}", samples=samples) for i in range(n)]


def dollar(usage: Any) -> float:
    return 1.0


async def test_max_cost_at_concurrency_50_spends_no_more_than_the_budget():
    agent = CountingAgent()
    report = await evaluate(agent, cases(100), concurrency=50, price=dollar, max_cost=3)
    # Today: $50 (the whole first wave started before anything was priced).
    assert agent.calls == 3 and report.cost == 3.0
    assert report.stopped == "max_cost $3 reached: $3.0000 spent, no new sample started"
    assert f"${report.cost:.4f}" in report.header()


async def test_until_one_sample_is_priced_samples_run_one_at_a_time():
    agent = CountingAgent()
    order: list[str] = []

    def on_event(event: Any) -> None:
        if isinstance(event, SampleStateChanged) and event.state == "running":
            order.append("start")
        elif isinstance(event, SampleFinished):
            order.append("finish")

    report = await evaluate(
        agent, cases(20), concurrency=10, price=dollar, max_cost=100, on_event=on_event
    )
    assert report.passed and agent.calls == 20
    assert order[:3] == ["start", "finish", "start"]  # the first sample ran alone
    assert agent.most > 1  # once priced, the run goes wide again


async def test_varying_costs_stay_within_one_wave_of_the_dearest_sample():
    # Each case costs its own price (its number of tokens, in dimes): estimates are off.
    async def agent(question: Any) -> RunResult:
        await anyio.sleep(0.001)
        number = int(str(question)[1:])
        return RunResult(output="ok", usage=Usage(1 + (number * 5) % 7, 0, 1))

    def price(usage: Usage) -> float:
        return 0.1 * usage.input_tokens

    report = await evaluate(agent, cases(60), concurrency=8, price=price, max_cost=2.0)
    assert report.stopped is not None
    assert report.cost is not None and report.cost <= 2.0 + 8 * 0.7
    assert f"${report.cost:.4f} spent" in report.stopped


async def test_a_resumed_run_counts_what_it_already_spent():
    done = {"c0": [SampleResult("c0", 0, "passed", cost=2.5)]}
    agent = CountingAgent()
    evaluation = Evaluation(
        agent,
        cases(10, samples=2),
        settings=RunSettings(concurrency=4, price=dollar, max_cost=3),
        done=done,
    )
    report = await evaluation.run()
    # $2.5 spent before; a sample costs $1 (learned from c0): none fits in the $0.5 left.
    assert agent.calls == 0 and report.cost == 2.5
    assert report.stopped is not None and "$2.5000 spent" in report.stopped


async def test_a_run_without_prices_is_not_serialised_by_a_budget():
    agent = CountingAgent()
    report = await evaluate(agent, cases(20), concurrency=10, max_cost=1)
    assert report.passed and agent.calls == 20 and agent.most > 1
    assert not report.priced and report.stopped is None


async def test_nonsense_prices_never_lower_the_spend():
    budget = CostBudget(1.0)
    budget.settle(SampleResult("a", 0, "passed", cost=0.5))
    budget.settle(SampleResult("a", 1, "passed", cost=-10.0))
    budget.settle(SampleResult("a", 2, "passed", cost=float("nan")))
    assert budget.spent == 0.5
    with pytest.raises(ValueError, match="max_cost"):
        CostBudget(float("nan"))
    with pytest.raises(ValueError, match="max_cost"):
        CostBudget(-1)


async def test_decide_never_spends_more_than_its_budget():
    baseline = Report(
        "b",
        [
            CaseResult(f"c{i}", [SampleResult(f"c{i}", j, "passed") for j in range(20)])
            for i in range(30)
        ],
    )
    agent = CountingAgent()
    await decide(agent, cases(30), baseline, concurrency=50, price=dollar, max_cost=5)
    # Today the first round alone spends $30 at concurrency 50.
    assert agent.calls <= 5


async def test_compare_agents_shares_one_budget_between_both_sides():
    a, b = CountingAgent(), CountingAgent()
    await compare_agents(a, b, cases(30), concurrency=50, price=dollar, max_cost=5)
    assert a.calls + b.calls <= 5


def test_report_stop_message_and_cli_agree_on_the_spend(tmp_path):
    suite = tmp_path / "costly.py"
    suite.write_text(
        textwrap.dedent(
            """
            import anyio
            from tui_eval import Case, Suite, contains

            async def agent(question):
                await anyio.sleep(0.01)
                return "ok"

            suite = Suite(
                "costly",
                agent=agent,
                cases=[Case(f"q{i}", checks=[contains("ok")], name=f"c{i}") for i in range(100)],
                concurrency=50,
                price=lambda usage: 1.0,
                max_cost=3,
            )
            """
        )
    )
    done = cli("run", "--headless", str(suite), "--json", str(tmp_path / "r.json"), cwd=tmp_path)
    assert "$3.0000" in done.stdout, done.stdout + done.stderr
    assert "max_cost $3 reached: $3.0000 spent" in done.stdout
    saved = Report.load(tmp_path / "r.json")
    assert saved.cost == 3.0 and saved.stopped is not None and "$3.0000 spent" in saved.stopped


async def test_samples_from_an_executor_stop_the_run_at_the_budget():
    class InOrder:
        """An executor that runs units one by one and hands each back, as Ray's does."""

        async def execute(self, evaluation: Evaluation, units: Any) -> None:
            for index, sample_index in units:
                if evaluation.cancel_requested:
                    return
                evaluation.accept(index, await evaluation.sample(index, sample_index))

    agent = CountingAgent()
    report = await evaluate(agent, cases(10), price=dollar, max_cost=3, executor=InOrder())
    assert agent.calls == 3 and report.cost == 3.0
    assert report.stopped == "max_cost $3 reached: $3.0000 spent, no new sample started"


async def test_a_budget_no_sample_can_be_held_to_is_said_once_as_soon_as_it_is_known():
    """A sample that finished without a price makes `max_cost` unenforceable: the progress
    says so once, as it happens (it was said only in the summary after the run), and the
    run's state, which the app's header reads, knows it."""
    import io
    from contextlib import redirect_stderr

    from tui_eval import evaluate_iter
    from tui_eval.cli.progress import Progress

    progress = Progress(live=False)
    err = io.StringIO()
    seen_at: list[int] = []
    with redirect_stderr(err):
        async for event in evaluate_iter(CountingAgent(0), cases(5), concurrency=1, max_cost=2):
            progress.on_event(event)
            if "cannot be enforced" in err.getvalue() and not seen_at:
                seen_at.append(progress.state.samples_done)
    said = [line for line in err.getvalue().splitlines() if "cannot be enforced" in line]
    assert len(said) == 1, err.getvalue()
    assert "max_cost $2 cannot be enforced: c0 #1 finished without a price" in said[0]
    assert seen_at == [1]  # at the first unpriced sample, not at the end
    assert progress.state.samples_unpriced == 5 and progress.state.budget_unenforced
    priced = Progress(live=False)
    err = io.StringIO()
    with redirect_stderr(err):
        async for event in evaluate_iter(
            CountingAgent(0), cases(3), concurrency=1, max_cost=20, price=dollar
        ):
            priced.on_event(event)
    assert "cannot be enforced" not in err.getvalue()
    assert not priced.state.budget_unenforced


def test_the_app_header_says_a_budget_is_not_enforced():
    from tui_eval import Case
    from tui_eval.run.events import RunStarted, SampleFinished
    from tui_eval.run.state import RunState
    from tui_eval.tui.widgets.run_header import RunHeader

    state = RunState()
    state.apply(RunStarted("r", [Case("q", name="a", samples=2)], 2, 0.0, max_cost=5))
    assert "budget $5 (nothing priced yet)" in RunHeader._counters(state).plain
    state.apply(SampleFinished(0, SampleResult("a", 0, "passed", cost=0.5)))
    assert "not enforced" not in RunHeader._counters(state).plain
    state.apply(SampleFinished(0, SampleResult("a", 1, "passed")))
    assert "$0.5000 of $5 · budget not enforced" in RunHeader._counters(state).plain

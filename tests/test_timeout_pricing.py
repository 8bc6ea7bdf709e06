"""A sample that timed out is priced by what it used: its responses' tokens through the
`price=` function, so `max_cost` counts them (it recorded $0 while the API billed)."""

from __future__ import annotations

from typing import Any

import pytest

from tui_eval import Agent, Case, contains, evaluate
from tui_eval.agents.messages import Usage
from tui_eval.agents.providers.openai import OpenAIProvider

from .agents.wire_server import Reply, WireServer, openai_call

pytestmark = pytest.mark.anyio


def per_thousand_input_tokens(usage: Usage) -> float:
    return usage.input_tokens / 1000


def lookup(term: str) -> str:
    """Look a term up."""
    return "more to read"


def _call() -> Reply:
    return Reply(body=openai_call("lookup", {"term": "x"}, prompt=1000, completion=0))


def _hang() -> Reply:
    # Answers long after the sample's timeout: the sample is cancelled while it waits.
    return Reply(body=openai_call("lookup", {"term": "x"}, prompt=1000, completion=0), delay=8)


async def test_a_timed_out_sample_is_priced_by_the_responses_it_received():
    with WireServer() as server:
        server.reply(_call(), _call(), _hang())
        agent = Agent(OpenAIProvider("test-model", base_url=server.url + "/v1"), tools=[lookup])
        report = await evaluate(
            agent,
            [Case("q", checks=[contains("done")], timeout=2.0)],
            price=per_thousand_input_tokens,
        )
    sample = report.samples[0]
    assert sample.status == "timeout"
    # Two responses of 1,000 prompt tokens each arrived before it was cut off.
    assert sample.usage.input_tokens == 2000 and sample.usage.requests == 2
    assert sample.cost == pytest.approx(2.0) and report.cost == pytest.approx(2.0)


async def test_max_cost_counts_what_timed_out_samples_spent():
    with WireServer() as server:
        server.reply(*[_call(), _call(), _hang()] * 5)
        agent = Agent(OpenAIProvider("test-model", base_url=server.url + "/v1"), tools=[lookup])
        report = await evaluate(
            agent,
            [Case("q", checks=[contains("done")], timeout=2.0, samples=5)],
            price=per_thousand_input_tokens,
            max_cost=3,
        )
        sent = len(server.requests)
    answered = sum(s.usage.requests for s in report.samples)
    # The first sample spent $2 (two answered requests): a second would pass $3.
    assert len(report.samples) == 1 and answered == 2
    assert report.cost == pytest.approx(2.0) and report.stopped is not None
    assert sent == 3  # the third request was cut off waiting for its answer


async def test_a_sample_cut_off_in_its_checks_counts_the_judges_answers():
    """The agent's run returned (500 tokens); one judge answered (1,000), the other was
    still waiting when the timeout fell: both answers count, the judge's as judge usage."""
    from tui_eval import llm_judge
    from tui_eval.agents.messages import RunResult

    from .agents.wire_server import openai_text

    def agent(question: Any) -> RunResult:
        return RunResult(output="an answer", usage=Usage(500, 0, 1))

    verdict = openai_text('{"score": 1, "reasoning": "fine"}', prompt=1000, completion=0)
    with WireServer() as server:
        server.reply(Reply(body=verdict), Reply(body=verdict, delay=8))
        judge = OpenAIProvider("test-model", base_url=server.url + "/v1")
        checks = [
            llm_judge("clear", model=judge, name="a"),
            llm_judge("kind", model=judge, name="b"),
        ]
        report = await evaluate(
            agent, [Case("q", checks=checks, timeout=2.0)], price=per_thousand_input_tokens
        )
    sample = report.samples[0]
    assert sample.status == "timeout" and "its checks ran" in (sample.error or "")
    assert sample.judge_usage == Usage(1000, 0, 1)
    assert sample.usage == Usage(1500, 0, 2) and sample.cost == pytest.approx(1.5)

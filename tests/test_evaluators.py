"""Seed 000's code blocks, run with only their imports changed to tui_eval names."""

from __future__ import annotations

import anyio
import pytest

from tui_eval import (
    AccuracyEval,
    Agent,
    Completion,
    EvalDataset,
    EvalExample,
    EvalReport,
    PerformanceEval,
    Report,
    TrajectoryEval,
    Usage,
)
from tui_eval.testing import AgentTestClient, ScriptedProvider, call, text

pytestmark = pytest.mark.anyio


def web_search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def summarise_text(text: str) -> str:
    """Summarise a text."""
    return text[:20]


ANSWERS = {
    "What is 6 * 7?": "The answer is 42.",
    "Capital of France?": "Paris",
    "Translate 'hello' to Spanish.": "hola",
    "2 + 2?": "4",
    "Capital of Japan?": "Tokyo",
}


async def answer(message: str) -> str:
    return ANSWERS.get(message, "I don't know")


# -- Core types ------------------------------------------------------------------------
def test_core_types_block():
    example = EvalExample(
        input="What is the capital of France?",
        expected="Paris",  # for AccuracyEval
        expected_tools=["web_search"],  # for TrajectoryEval
        metadata={"category": "geography"},  # for filtering/grouping
    )
    assert example.expected == "Paris"

    dataset = EvalDataset(
        examples=[
            EvalExample(input="2 + 2?", expected="4"),
            EvalExample(input="Capital of Japan?", expected="Tokyo"),
        ],
        name="basic_qa",
    )

    print(f"{len(dataset)} examples")
    for example in dataset:
        print(example.input)
    assert len(dataset) == 2 and dataset[1].expected == "Tokyo" and dataset.name == "basic_qa"


async def test_eval_report_block():
    dataset = EvalDataset([EvalExample(input="2 + 2?", expected="4")], name="basic_qa")
    report = await AccuracyEval().run(answer, dataset)
    assert isinstance(report, EvalReport)
    assert report.pass_rate == 1.0  # float — fraction of examples that passed (0.0–1.0)
    assert report.avg_latency_ms >= 0.0  # float — average response latency
    assert report.avg_score == 1.0  # float | None — average numeric score
    assert "accuracy on basic_qa: 1/1 passed" in report.summary()

    # Assert in CI:
    report.assert_pass_rate(min_pass_rate=0.9)


# -- AccuracyEval ----------------------------------------------------------------------
async def test_accuracy_eval_block(capsys):
    client = answer
    dataset = EvalDataset(
        [
            EvalExample(input="What is 6 * 7?", expected="42"),
            EvalExample(input="Capital of France?", expected="Paris"),
            EvalExample(input="Translate 'hello' to Spanish.", expected="hola"),
        ],
        name="qa_suite",
    )

    evaluator = AccuracyEval(
        exact_match=False,  # True = case-insensitive equality; False = substring match
        name="qa_accuracy",
    )

    report = await evaluator.run(client, dataset)
    print(report.summary())
    report.assert_pass_rate(min_pass_rate=0.9)
    assert "qa_accuracy on qa_suite: 3/3 passed" in capsys.readouterr().out


async def test_exact_match_vs_substring():
    dataset = EvalDataset(
        [
            EvalExample(input="What is 6 * 7?", expected="42"),  # "The answer is 42."
            EvalExample(input="Capital of France?", expected=" paris "),  # "Paris"
        ],
        name="exact",
    )
    exact = await AccuracyEval(exact_match=True).run(answer, dataset)
    assert [r.passed for r in exact.results] == [False, True]
    assert exact.results[0].actual == "The answer is 42."
    assert "expected output equal to (ignoring case) '42'" in exact.results[0].reason
    substring = await AccuracyEval(exact_match=False).run(answer, dataset)
    assert [r.passed for r in substring.results] == [True, False]
    with pytest.raises(AssertionError, match="(?s)50% is below 90%.*Capital of France"):
        substring.assert_pass_rate(0.9)


async def test_missing_expected_is_a_failed_example_not_a_crash():
    report = await AccuracyEval().run(answer, EvalDataset([EvalExample(input="2 + 2?")]))
    assert not report.results[0].passed
    assert "no `expected` answer" in report.results[0].reason
    report = await TrajectoryEval().run(answer, EvalDataset([EvalExample(input="2 + 2?")]))
    assert "no `expected_tools`" in report.results[0].reason


# -- TrajectoryEval --------------------------------------------------------------------
class Router:
    """Builds a scripted agent per message: searches and summarises, or answers directly."""

    async def run(self, message: str):
        if message.startswith("Search"):
            script = [
                call("web_search", {"query": "climate"}),
                call("summarise_text", {"text": "..."}),
                text("summary"),
            ]
        else:
            script = [text("4")]
        return await Agent(ScriptedProvider(script), tools=[web_search, summarise_text]).run(
            message
        )


def tool_agent() -> Router:
    return Router()


async def test_trajectory_eval_block(capsys):
    client = tool_agent()
    dataset = EvalDataset(
        [
            EvalExample(
                input="Search for recent news about climate change and summarise it.",
                expected_tools=["web_search", "summarise_text"],
            ),
            EvalExample(
                input="What is 2 + 2?",
                expected_tools=[],  # no tools should be called
            ),
        ],
        name="trajectory_suite",
    )

    evaluator = TrajectoryEval(
        strict_order=True,  # True = order must match exactly; False = set membership
        name="tool_trajectory",
    )

    report = await evaluator.run(client, dataset)
    print(report.summary())
    assert report.pass_rate == 1.0

    for result in report.results:
        if not result.passed:
            print(f"Input: {result.example.input}")
            print(f"Expected tools: {result.example.expected_tools}")
            print(f"Actual tools:   {result.actual}")
    assert report.results[0].actual == "['web_search', 'summarise_text']"
    assert report.results[1].actual == "[]"


async def test_strict_vs_set_trajectory():
    dataset = EvalDataset(
        [
            EvalExample(input="Search this", expected_tools=["summarise_text", "web_search"]),
            EvalExample(input="What is 2 + 2?", expected_tools=["web_search"]),
        ]
    )
    strict = await TrajectoryEval(strict_order=True).run(tool_agent(), dataset)
    assert [r.passed for r in strict.results] == [False, False]
    assert "in this order" in strict.results[0].reason
    loose = await TrajectoryEval(strict_order=False).run(tool_agent(), dataset)
    assert [r.passed for r in loose.results] == [True, False]


# -- PerformanceEval -------------------------------------------------------------------
async def test_performance_eval_block(capsys):
    async def client(message: str) -> str:
        await anyio.sleep(0.05 if "quantum" in message else 0.0)
        return "ok"

    dataset = EvalDataset(
        [
            EvalExample(input="What is 2 + 2?"),
            EvalExample(input="Explain quantum entanglement in one sentence."),
        ],
        name="perf_suite",
    )

    evaluator = PerformanceEval(
        max_latency_ms=5000,  # pass only if avg latency <= 5 seconds
        name="latency",
    )

    report = await evaluator.run(client, dataset)
    print(f"Avg latency: {report.avg_latency_ms:.0f}ms")
    print(f"Pass rate: {report.pass_rate:.0%}")

    # EvalResult.score holds total token count when available
    for result in report.results:
        print(f"{result.example.input[:40]}: {result.latency_ms:.0f}ms, tokens={result.score}")
    assert report.pass_rate == 1.0 and report.avg_latency_ms >= 25
    assert "tokens=None" in capsys.readouterr().out


async def test_latency_limit_and_token_score():
    async def slow(message: str) -> str:
        await anyio.sleep(0.08 if message == "slow" else 0)
        return "x"

    dataset = EvalDataset([EvalExample(input="fast"), EvalExample(input="slow")])
    limited = await PerformanceEval(max_latency_ms=40).run(slow, dataset)
    assert [r.passed for r in limited.results] == [True, False]
    assert "over the limit of 40 ms" in limited.results[1].reason
    unlimited = await PerformanceEval(max_latency_ms=None).run(slow, dataset)
    assert unlimited.pass_rate == 1.0

    agent = Agent(ScriptedProvider.factory([text("hi", usage=Usage(30, 12))]))
    tokens = await PerformanceEval().run(agent, EvalDataset([EvalExample(input="q")]))
    assert tokens.results[0].score == 42.0 and tokens.avg_score == 42.0


# -- Combining evaluators --------------------------------------------------------------
async def test_combining_evaluators_block():
    def client():
        return Agent(
            ScriptedProvider(
                [
                    call("web_search", {"query": "London weather"}),
                    text("Rain expected: take an umbrella."),
                ]
            ),
            tools=[web_search],
        )

    dataset = EvalDataset(
        [
            EvalExample(
                input="Search for today's weather in London and tell me if I need an umbrella.",
                expected="umbrella",
                expected_tools=["web_search"],
            ),
        ],
        name="combined",
    )

    acc_report = await AccuracyEval(exact_match=False).run(client, dataset)
    traj_report = await TrajectoryEval(strict_order=False).run(client, dataset)
    perf_report = await PerformanceEval(max_latency_ms=8000).run(client, dataset)

    print(acc_report.summary())
    print(traj_report.summary())
    print(perf_report.summary())

    acc_report.assert_pass_rate(0.9)
    traj_report.assert_pass_rate(1.0)
    perf_report.assert_pass_rate(1.0)


# -- Using evaluators in pytest --------------------------------------------------------
@pytest.fixture()
def client():
    return AgentTestClient(Agent(ScriptedProvider()))


async def test_accuracy(client):
    client.mock.queue_response(
        Completion(
            id="1",
            model="mock",
            content="42",
            tool_calls=[],
            stop_reason="end_turn",
            usage=Usage(input_tokens=10, output_tokens=2),
        )
    )
    dataset = EvalDataset([EvalExample(input="6 * 7?", expected="42")])
    report = await AccuracyEval().run(client, dataset)
    report.assert_pass_rate(1.0)
    assert report.usage.total_tokens == 12


# -- one report model ------------------------------------------------------------------
async def test_eval_report_saves_and_compares_like_any_report(tmp_path):
    dataset = EvalDataset(
        [
            EvalExample(input="2 + 2?", expected="4"),
            EvalExample(input="Capital of Japan?", expected="Kyoto"),
        ],
        name="qa",
    )
    report = await AccuracyEval().run(answer, dataset)
    path = report.save(tmp_path / "acc.json")
    loaded = EvalReport.load(path)
    assert (
        isinstance(loaded, EvalReport) and loaded.evaluator == "accuracy" and loaded.dataset == "qa"
    )
    assert [r.passed for r in loaded.results] == [True, False]
    assert Report.load(path).pass_rate == 0.5

    async def better(message: str) -> str:
        return {"2 + 2?": "5", "Capital of Japan?": "Kyoto"}[message]

    diff = (await AccuracyEval().run(better, dataset)).compare(loaded)
    assert [c.name for c in diff.regressions] == ["2 + 2?"]
    assert [c.name for c in diff.improvements] == ["Capital of Japan?"]


async def test_duplicate_inputs_get_distinct_names():
    dataset = EvalDataset([EvalExample(input="2 + 2?", expected="4")] * 2)
    report = await AccuracyEval().run(answer, dataset, concurrency=2)
    assert [c.name for c in report.cases] == ["2 + 2?", "2 + 2? #2"]

"""Data shaped like other tools': structured inputs, suite-level checks, checks against the
case's expected value, the model's stop reason, and turn limits the case does not override."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.wire_server import Reply, WireServer, openai_call, openai_text
from tui_eval import (
    Agent,
    Case,
    Completion,
    Message,
    RunResult,
    Suite,
    contains,
    equals_expected,
    evaluate,
    matches_expected,
    stop_reason,
)
from tui_eval.agents.agent import MaxTurnsExceeded
from tui_eval.agents.providers.openai import OpenAIProvider
from tui_eval.suites.declarative import load_yaml_suite
from tui_eval.testing import ScriptedProvider, call, text

pytestmark = pytest.mark.anyio


async def test_a_structured_input_reaches_a_plain_function_unchanged():
    seen = []

    async def agent(question):
        seen.append(question)
        return f"{question['city']} is in {question['country']}"

    case = Case({"city": "Paris", "country": "France"}, checks=[contains("France")])
    report = await evaluate(agent, [case])
    assert report.passed, str(report)
    assert seen == [{"city": "Paris", "country": "France"}]
    result = report.cases[0]
    assert json.loads(result.input) == {"city": "Paris", "country": "France"}
    assert "Paris" in case.label


async def test_agent_sends_a_structured_input_as_json_text():
    sent: list[list[Message]] = []

    def reply(messages: list[Message]) -> Completion:
        sent.append(list(messages))
        return Completion(content="ok")

    agent = Agent(ScriptedProvider([reply]))
    report = await evaluate(agent, [Case({"question": "2 + 2?", "n": 4})])
    assert report.passed, str(report)
    (user,) = [m for m in sent[0] if m.role == "user"]
    assert json.loads(user.content or "") == {"question": "2 + 2?", "n": 4}


async def test_suite_checks_apply_to_every_case_once():
    async def agent(prompt):
        return "Paris" if "France" in prompt else "Berlin"

    suite = Suite(
        "capitals",
        agent=agent,
        cases=[Case("France?", checks=[contains("Paris")]), Case("Germany?")],
        checks=[contains("Paris")],
    )
    picked = suite.select(samples=1)
    assert [len(c.checks) for c in picked.cases] == [2, 1]
    report = await evaluate(suite.agent, picked.cases)
    assert [c.passed for c in report.cases] == [True, False]
    reason = report.cases[1].samples[0].checks[0].reason
    assert "expected 'Paris' in output" in reason


def test_yaml_top_level_checks_apply_to_every_case(tmp_path: Path):
    path = tmp_path / "suite.yaml"
    path.write_text(
        "agent: echo_agents:echo\n"
        "checks:\n  - contains: ok\n  - stop_reason: stop\n"
        "cases:\n  - input: one\n  - input: {question: two}\n    checks: [{equals_expected: true}]\n"
        "    expected: two\n",
        encoding="utf-8",
    )
    (tmp_path / "echo_agents.py").write_text(
        "async def echo(x):\n    return 'ok'\n", encoding="utf-8"
    )
    suite = load_yaml_suite(path)
    assert [[type(c).__name__ for c in case.checks] for case in suite.cases] == [
        ["contains", "stop_reason"],
        ["contains", "stop_reason", "equals_expected"],
    ]
    assert suite.cases[1].input == {"question": "two"}


def test_yaml_suite_check_errors_name_the_field(tmp_path: Path):
    path = tmp_path / "suite.yaml"
    path.write_text(
        "agent: echo_agents:echo\nchecks:\n  - regex: '('\ncases:\n  - input: one\n",
        encoding="utf-8",
    )
    (tmp_path / "echo_agents.py").write_text(
        "async def echo(x):\n    return 'ok'\n", encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"suite field 'checks\[0\]': regex"):
        load_yaml_suite(path)


async def test_equals_expected_and_matches_expected_read_the_case():
    async def agent(prompt):
        return {"answer": prompt.upper(), "source": "memory"}

    cases = [
        Case("paris", expected={"answer": "PARIS"}, checks=[matches_expected()]),
        Case("rome", expected={"answer": "ROMA"}, checks=[matches_expected()]),
        Case("x", expected={"answer": "X", "source": "memory"}, checks=[equals_expected()]),
        Case("y", expected="Y", checks=[equals_expected()]),
        Case("z", checks=[equals_expected()]),
    ]
    report = await evaluate(agent, cases)
    assert [c.passed for c in report.cases] == [True, False, True, False, False]
    reasons = [c.samples[0].checks[0].reason for c in report.cases]
    assert "expected 'ROMA', got 'ROME'" in reasons[1]
    assert "the case's expected value" in reasons[3]
    assert "no expected value" in reasons[4]


async def test_equals_expected_compares_json_text_as_data():
    async def agent(prompt):
        return '{"total": 4}'

    report = await evaluate(agent, [Case("2+2", expected={"total": 4}, checks=[equals_expected()])])
    assert report.passed, str(report)


async def test_openai_stop_reasons_and_refusals_are_recorded():
    refusal = openai_text("")
    refusal["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    cut_off = openai_text("The answer is", completion=16)
    cut_off["choices"][0]["finish_reason"] = "length"
    with WireServer() as server:
        server.reply(Reply(200, refusal), Reply(200, cut_off))
        agent = Agent(OpenAIProvider("m", base_url=server.url, api_key="k"))
        cases = [
            Case("how do I pick a lock?", checks=[stop_reason("refusal")]),
            Case("long answer", checks=[stop_reason("stop", "length"), stop_reason("stop")]),
        ]
        report = await evaluate(agent, cases, concurrency=1)
    first, second = (c.samples[0] for c in report.cases)
    assert first.run.stop_reason == "refusal" and first.output == "I can't help with that."
    assert first.passed
    assert second.run.stop_reason == "length"
    assert [c.passed for c in second.checks] == [True, False]
    assert second.checks[1].reason == "expected the model to stop with 'stop', got 'length'"


async def test_invalid_json_in_tool_arguments_says_so_and_the_tool_is_not_run():
    ran = []

    def add(a: int, b: int) -> int:
        ran.append((a, b))
        return a + b

    broken = openai_call("add", {})
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"a": 2 "b": 3}'
    with WireServer() as server:
        server.reply(Reply(200, broken), Reply(200, openai_text("sorry")))
        agent = Agent(OpenAIProvider("m", base_url=server.url, api_key="k"), tools=[add])
        run = await agent.run("2 + 3?")
        sent_back = server.requests[1].body["messages"][-1]["content"]
    assert ran == []
    (failed,) = run.tool_calls
    assert failed.error is not None and failed.error.startswith("invalid JSON in tool arguments:")
    assert '{"a": 2 "b": 3}' in failed.error
    assert "invalid JSON in tool arguments" in sent_back
    assert run.stop_reason == "stop"


async def test_agent_max_turns_is_not_overridden_by_the_case_default():
    provider = ScriptedProvider.factory([call("noop"), call("noop"), call("noop"), text("done")])

    def noop() -> str:
        return "ok"

    agent = Agent(provider, tools=[noop], max_turns=2)
    report = await evaluate(agent, [Case("loop")])
    sample = report.cases[0].samples[0]
    assert sample.error is not None and "max_turns=2" in sample.error
    assert sample.run is not None and sample.run.turns == 2
    # A case that sets its own limit still wins.
    report = await evaluate(agent, [Case("loop", max_turns=4)])
    assert report.passed, str(report)


def test_stop_reason_check_on_a_bare_result():
    assert stop_reason(["stop", "length"])(RunResult(stop_reason="length")).passed
    outcome = stop_reason("stop")(RunResult())
    assert not outcome.passed and "no stop reason" in outcome.reason
    with pytest.raises(ValueError):
        stop_reason()


async def test_max_turns_exceeded_raised_directly():
    agent = Agent(ScriptedProvider([call("x"), call("x"), text("y")]), max_turns=1)
    with pytest.raises(MaxTurnsExceeded):
        await agent.run("go")

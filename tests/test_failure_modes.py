"""Failure modes: failed samples grouped by a signature, and compared with a baseline."""

from __future__ import annotations

import json

import anyio
import pytest

from tui_eval import Case, CheckResult, Report, RunResult, ToolCall, evaluate, tool_called
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.failure_modes import failure_modes, markdown, mask

pytestmark = pytest.mark.anyio


def judge(score_of: dict[str, int]):
    def judged(run: RunResult) -> CheckResult:
        score = score_of.get(str(run.output), 5)
        return CheckResult(
            "llm_judge",
            score >= 4,
            score / 5,
            f"scored {score} because the total {100 + score * 7} in the answer is wrong",
        )

    return judged


def three_modes(*, timeouts: bool = True):
    """20 cases: 6 call `add` with a wrong argument, 6 time out, 6 get a judge's low score
    (a different number in each reason), 2 pass."""
    scores = {f"answer {i}": 1 + i % 3 for i in range(12, 18)}

    async def agent(question: str) -> RunResult:
        i = int(question.split()[-1])
        if timeouts and 6 <= i < 12:
            await anyio.sleep(30)
        wrong = i < 6
        call = ToolCall("add", {"a": 2 if not wrong else 100 + i, "b": 3}, id=f"call_{i:04x}ab")
        return RunResult(output=f"answer {i}", tool_calls=[call])

    cases = [
        Case(
            f"question {i}",
            name=f"c{i:02d}",
            checks=[tool_called("add", a=2), judge(scores)],
            timeout=0.05 if 6 <= i < 12 else None,
        )
        for i in range(20)
    ]
    return agent, cases


async def test_three_injected_modes_give_exactly_three_modes_with_their_cases():
    agent, cases = three_modes()
    report = await evaluate(agent, cases, concurrency=20)
    modes = failure_modes(report)
    assert len(modes) == 3 and sum(m.count for m in modes) == 18
    by_where = {m.signature.where: m for m in modes}
    assert by_where["tool_called"].cases == [f"c{i:02d}" for i in range(6)]
    assert by_where["timeout"].cases == [f"c{i:02d}" for i in range(6, 12)]
    assert by_where["llm_judge"].cases == [f"c{i}" for i in range(12, 18)]


async def test_against_a_baseline_holding_two_modes_the_third_is_new_and_first():
    agent, cases = three_modes()
    report = await evaluate(agent, cases, concurrency=20)
    base_agent, base_cases = three_modes(timeouts=False)  # no timeout mode in the baseline
    baseline = await evaluate(base_agent, base_cases, concurrency=20)
    modes = failure_modes(report, baseline)
    assert modes[0].change == "new"
    assert modes[0].signature.kind == "timeout" and modes[0].baseline_samples == 0
    assert {m.change for m in modes[1:]} == {"same"}
    assert "**new**" in markdown(modes).splitlines()[2]


def test_reasons_differing_only_in_numbers_quotes_ids_or_paths_are_one_pattern():
    assert mask("expected 'Paris', got 'Lyon' after 3 calls") == mask(
        'expected "Rome", got "Nice" after 12 calls'
    )
    assert mask("order 7f3a9c2e41 failed in 2.5s at /tmp/x/y.txt") == mask(
        "order 0b1c2d3e4f failed in 0.25s at /home/me/z.json"
    )
    assert mask("total $41.50 is 12% off") == mask("total $1,200.00 is 7% off")
    assert mask("missing field name") != mask("missing field email")


def test_a_judges_prose_with_apostrophes_and_typographic_quotes_is_one_pattern():
    """Judges write English: an apostrophe is not a quote, and they quote with “” and ‘’."""
    assert mask("The answer doesn't say 'Paris'; it's wrong") == mask(
        "The answer doesn't say 'Rome'; it's wrong"
    )
    assert mask("It's wrong: expected 'Paris', got 'Lyon'") == mask(
        "It's wrong: expected 'Rome', got 'it's Nice'"
    )
    assert mask("The answer says “Paris” but the user’s city is ‘Lyon’") == mask(
        "The answer says “Rome” but the user’s city is ‘Nice’"
    )
    assert mask("the user's name") != mask("the user's city")


def test_timestamps_hex_numbers_and_ids_are_masked_whole():
    assert mask("deadline 2026-12-02T09:18:40Z passed") == mask(
        "deadline 2025-01-30T23:01:05.120+02:00 passed"
    )
    assert mask("request 0x7f3a failed after 5sec") == mask("request 0x1b failed after 12sec")
    assert mask("call 3 of gpt-4o") == mask("call 12 of gpt-4o")
    assert mask("run_ab12cd: no id 123e4567-e89b-12d3-a456-426614174000") == mask(
        "run_zz99yy: no id 00000000-0000-0000-0000-00000000abcd"
    )


def sample(case: str, index: int, check: str, reason: str) -> SampleResult:
    return SampleResult(
        case, index, "failed", checks=[CheckResult(check, False, 0.0, reason)], run=RunResult("x")
    )


def test_different_checks_never_merge_even_with_the_same_reason():
    cases = [
        CaseResult("a", [sample("a", 0, "contains", "no 'x' in the output")]),
        CaseResult("b", [sample("b", 0, "regex", "no 'x' in the output")]),
    ]
    assert len(failure_modes(Report("r", cases))) == 2


def test_the_departure_from_passing_samples_is_part_of_the_signature():
    ok = SampleResult("a", 0, "passed", run=RunResult("x", tool_calls=[ToolCall("book", {})]))
    wrong_tool = SampleResult(
        "a",
        1,
        "failed",
        checks=[CheckResult("contains", False, 0.0, "no 'booked'")],
        run=RunResult("x", tool_calls=[ToolCall("search", {})]),
    )
    (mode,) = failure_modes(Report("r", [CaseResult("a", [ok, wrong_tool])]))
    assert mode.signature.departure == "leaves at call 1: search (passing: book)"


@pytest.mark.slow  # a stress run of 100,000 samples: .ci/run runs it
def test_a_hundred_thousand_failed_samples_fall_in_one_mode():
    """(Their speed is measured in bench/failure_modes_bench.py, not here.)"""
    cases = [
        CaseResult(
            f"case {c}",
            [
                sample(f"case {c}", i, "llm_judge", f"scored {i % 5} since {c * 31 + i} is off")
                for i in range(100)
            ],
        )
        for c in range(1000)
    ]
    modes = failure_modes(Report("big", cases))
    assert len(modes) == 1 and modes[0].count == 100_000


def test_a_timeout_or_an_untyped_error_is_named_once():
    def failed(status: str, error: str) -> Report:
        return Report("r", [CaseResult("a", [SampleResult("a", 0, status, error=error)])])

    (timeout,) = failure_modes(failed("timeout", "sample exceeded its timeout of 0.5s"))
    assert str(timeout.signature) == "timeout: sample exceeded its timeout of #"
    (untyped,) = failure_modes(failed("error", "the tool server went away"))
    assert str(untyped.signature) == "error: the tool server went away"
    (typed,) = failure_modes(failed("error", "KeyError: 'order-7'"))
    assert str(typed.signature) == "error · KeyError: ‹…›"


def test_a_baseline_case_the_run_has_not_run_makes_no_mode_gone():
    """A rerun of some cases, a case since removed, or one a run still going has not reached
    yet (no sample of it done) says nothing of the others' failures."""
    run = Report(
        "r",
        [
            CaseResult("a", [sample("a", 0, "contains", "no 'x' in the output")]),
            CaseResult("c", [], planned=1),  # not reached yet
        ],
    )
    baseline = Report(
        "r",
        [
            CaseResult("a", [sample("a", 0, "contains", "no 'y' in the output")]),
            CaseResult("b", [sample("b", 0, "regex", "nothing matched")]),
            CaseResult("c", [sample("c", 0, "llm_judge", "scored 2")]),
        ],
    )
    (mode,) = failure_modes(run, baseline)
    assert mode.change == "same" and mode.baseline_total == 1


def test_a_mode_grows_or_shrinks_only_when_its_count_and_its_share_agree():
    def run(failing: int, passing: int) -> Report:
        samples = [sample("a", i, "contains", f"no {i} in the output") for i in range(failing)]
        samples += [SampleResult("a", failing + i, "passed") for i in range(passing)]
        return Report("r", [CaseResult("a", samples)])

    def change(now: Report, then: Report) -> str:
        (mode,) = failure_modes(now, then)
        return mode.change

    assert change(run(2, 18), run(2, 19)) == "same"  # not "grown 2 (2)": one sample fewer
    assert change(run(2, 5), run(4, 12)) == "same"  # a run still going: 2 of 7 done so far
    assert change(run(4, 36), run(2, 18)) == "same"  # twice the samples, the same share
    assert change(run(5, 35), run(2, 18)) == "grown"
    assert change(run(1, 19), run(2, 18)) == "shrunk"


THREE_MODES_SUITE = '''
from pathlib import Path

from tui_eval import Agent, Case, Completion, Suite, llm_judge, tool_called
from tui_eval.checks import verdict_reply
from tui_eval.testing import ScriptedProvider, call, text

BASELINE = Path(__file__).with_name("baseline.txt")


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def judge(messages) -> Completion:
    i = int(messages[-1].content.split("answer ")[1].split()[0])
    if 12 <= i < 18:
        reason = f"scored {i % 3} because the total {100 + i * 7} in the answer is wrong"
        return Completion(content=verdict_reply(0.2, reason))
    return Completion(content=verdict_reply(0.9, "the total is right"))


def model(i):
    def scripted():
        slow = 6 <= i < 12 and not BASELINE.exists()
        return ScriptedProvider(
            [call("add", {"a": 100 + i if i < 6 else 2, "b": 3}, delay=30 if slow else 0),
             text(f"answer {i} is 5")]
        )

    return scripted


suite = Suite(
    "modes",
    agent=Agent(ScriptedProvider(name="unused"), tools=[add], name="adder"),
    cases=[
        Case(
            f"question {i}",
            name=f"c{i:02d}",
            checks=[tool_called("add", a=2), llm_judge("the total is right", model=lambda: ScriptedProvider([judge]))],
            timeout=0.2 if 6 <= i < 12 else None,
            model=model(i),
        )
        for i in range(20)
    ],
    concurrency=20,
)
'''


def test_three_modes_injected_through_a_suite_run_and_the_failures_command(tmp_path):
    """A scripted agent calls `add` with a wrong argument (c00-c05) or too slowly (c06-c11);
    a scripted `llm_judge` fails c12-c17 with a different total in each reason. The baseline
    ran before the slowness: `tui-eval failures` finds the timeouts new, and lists them first."""
    from tests.cli_in_process import cli

    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / "modes.py").write_text(THREE_MODES_SUITE)
    (folder / "baseline.txt").write_text("")
    cli("run", "suites", "--headless", "--save-baseline", cwd=tmp_path)
    (folder / "baseline.txt").unlink()
    ran = cli("run", "suites", "--headless", "--json", "r.json", cwd=tmp_path)
    assert ran.returncode == 1 and (tmp_path / "r.json").exists(), ran.stderr
    baseline = "suites/__baselines__/modes.json"
    shown = cli("failures", "r.json", "--against", baseline, "--json", "m.json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    modes = json.loads((tmp_path / "m.json").read_text())["modes"]
    assert [(m["change"], m["kind"], m["where"], m["cases"]) for m in modes] == [
        ("new", "timeout", "timeout", [f"c{i:02d}" for i in range(6, 12)]),
        ("same", "failed", "llm_judge", [f"c{i}" for i in range(12, 18)]),
        ("same", "failed", "tool_called", [f"c{i:02d}" for i in range(6)]),
    ]
    table = cli("failures", "r.json", "--against", baseline, "--markdown", cwd=tmp_path)
    assert table.stdout.splitlines()[2].startswith("| **new** | 6 (was 0) | 6 | timeout: ")

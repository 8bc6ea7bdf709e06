"""Checks get their context as an argument: the case's expected value, name and sample."""

from __future__ import annotations

import functools

import pytest

from tui_eval import (
    Case,
    RunResult,
    all_of,
    any_of,
    equals_expected,
    evaluate,
    matches_expected,
    run_check,
    weighted,
)
from tui_eval.checks import CheckContext
from tui_eval.checks import base as checks_base

pytestmark = pytest.mark.anyio


async def echo(question: str) -> str:
    return question.upper()


async def test_a_check_taking_a_context_gets_the_case_and_each_sample():
    seen: list[CheckContext] = []

    def close_to_expected(run: RunResult, ctx: CheckContext) -> bool:
        seen.append(ctx)
        return run.output == ctx.expected

    cases = [
        Case("paris", name="capital", expected="PARIS", checks=[close_to_expected], samples=3),
        Case("rome", expected="ROMA", checks=[close_to_expected], metadata={"tier": 2}),
    ]
    report = await evaluate(echo, cases, concurrency=1)
    assert [c.passed for c in report.cases] == [True, False]
    first = [ctx for ctx in seen if ctx.case_name == "capital"]
    assert sorted(ctx.sample_index for ctx in first) == [0, 1, 2]
    assert {(ctx.input, ctx.expected) for ctx in first} == {("paris", "PARIS")}
    (rome,) = [ctx for ctx in seen if ctx.case_name != "capital"]
    assert (rome.expected, rome.sample_index, rome.metadata) == ("ROMA", 0, {"tier": 2})


async def test_a_one_argument_check_is_called_with_the_run_alone():
    calls: list[tuple[object, int]] = []

    def shouts(run: RunResult, limit: int = 100) -> bool:  # a default: not a context
        calls.append((run.output, limit))
        return str(run.output).isupper()

    report = await evaluate(echo, [Case("hi", checks=[shouts], expected="HI")])
    assert report.passed and calls == [("HI", 100)]
    # The public contract: run_check(check, run) with no context.
    assert (await run_check(lambda run: run.output == "ok", RunResult("ok"))).passed


async def test_a_context_check_run_alone_gets_an_empty_context():
    def names_the_case(run: RunResult, ctx: CheckContext) -> bool:
        return ctx.case_name == "" and ctx.expected is None and ctx.sample_index == 0

    assert (await run_check(names_the_case, RunResult("x"))).passed
    missing = await run_check(equals_expected(), RunResult("x"))
    assert not missing.passed and "no expected value" in missing.reason
    given = CheckContext("c", "q", "x", {}, 4)
    assert (await run_check(equals_expected(), RunResult("x"), given)).passed


async def test_combinators_hand_the_context_to_the_checks_inside():
    def at_sample(run: RunResult, ctx: CheckContext) -> bool:
        return ctx.sample_index < 2

    inner = [equals_expected(), matches_expected()]
    checks = [
        all_of(*inner, name="all"),
        any_of(equals_expected(), name="any"),
        weighted({equals_expected(): 1, at_sample: 1}, threshold=1.0, name="weighted"),
    ]
    report = await evaluate(echo, [Case("ok", expected="OK", checks=checks, samples=3)])
    by_sample = [[c.passed for c in s.checks] for s in report.cases[0].samples]
    assert by_sample == [[True, True, True], [True, True, True], [True, True, False]]


async def test_the_signature_of_a_check_is_read_once_not_per_sample(monkeypatch):
    looked: list[object] = []
    read = checks_base._second_parameter_required

    def counting(check: object) -> bool:
        looked.append(check)
        return read(check)

    monkeypatch.setattr(checks_base, "_second_parameter_required", counting)

    def upper(run: RunResult, ctx: CheckContext) -> bool:
        return run.output == str(ctx.input).upper()

    class Shouts:
        def __call__(self, run: RunResult) -> bool:
            return str(run.output).isupper()

    partial = functools.partial(lambda run, ctx: ctx.expected == run.output)
    cases = [
        Case(f"q{i}", expected=f"Q{i}", checks=[upper, Shouts(), partial], samples=4)
        for i in range(3)
    ]
    report = await evaluate(echo, cases)
    assert report.passed
    assert len(looked) == 3  # each check (the class once, for both instances), not per sample

from __future__ import annotations

import pydantic
import pytest

from tui_eval import (
    CheckResult,
    RunResult,
    ToolCall,
    Usage,
    all_of,
    any_of,
    contains,
    equals,
    matches,
    max_latency,
    max_tokens,
    max_turns,
    no_error,
    not_contains,
    regex,
    run_check,
    tool_called,
    tool_not_called,
    tool_sequence,
    weighted,
)

pytestmark = pytest.mark.anyio


def run_of(output=None, calls=(), turns=1, usage=Usage(), latency_ms=10.0) -> RunResult:
    return RunResult(
        output=output, tool_calls=list(calls), turns=turns, usage=usage, latency_ms=latency_ms
    )


async def check(c, run) -> CheckResult:
    return await run_check(c, run)


async def test_contains_and_reason_quotes_both_sides():
    assert (await check(contains("巴黎"), run_of("首都是巴黎。"))).passed
    result = await check(contains("巴黎"), run_of("我不知道" * 40))
    assert not result.passed and result.score == 0.0
    assert result.reason.startswith("expected '巴黎' in output, got '我不知道")
    assert result.reason.endswith("…'") and len(result.reason) < 120


async def test_contains_ignore_case():
    assert (await check(contains("paris", ignore_case=True), run_of("PARIS"))).passed
    assert not (await check(contains("paris"), run_of("PARIS"))).passed


async def test_not_contains():
    assert (await check(not_contains("sorry"), run_of("Sure!"))).passed
    failed = await check(not_contains("sorry", ignore_case=True), run_of("Sorry, I can't"))
    assert not failed.passed and 'found it in "Sorry, I can\'t"' in failed.reason


async def test_regex_and_equals():
    assert (await check(regex(r"\b\d{4}\.\d\b"), run_of("2129.4"))).passed
    assert "match /^x$/" in (await check(regex("^x$"), run_of("y"))).reason
    assert (await check(equals(42), run_of(42))).passed
    assert (await check(equals("a"), run_of("b"))).reason == "expected 'a', got 'b'"


class Item(pydantic.BaseModel):
    name: str
    qty: int


class Order(pydantic.BaseModel):
    customer: str
    items: list[Item]
    note: str = ""


async def test_matches_recursive_subset_on_models():
    order = Order(customer="Ada", items=[Item(name="tea", qty=2), Item(name="cake", qty=1)])
    assert (
        await check(
            matches({"customer": "Ada", "items": [{"name": "tea"}, {"qty": 1}]}), run_of(order)
        )
    ).passed
    wrong_len = await check(matches({"items": [{"name": "tea"}]}), run_of(order))
    assert not wrong_len.passed and "at items: expected 1 items, got 2" in wrong_len.reason
    wrong_val = await check(matches({"items": [{}, {"name": "pie"}]}), run_of(order))
    assert "at items[1].name: expected 'pie', got 'cake'" in wrong_val.reason
    missing = await check(matches({"total": 3}), run_of(order))
    assert "missing field 'total'" in missing.reason


async def test_matches_predicates_and_json_text():
    spec = {"qty": lambda q: q > 1}
    assert (await check(matches(spec), run_of({"qty": 2, "x": 1}))).passed
    assert "failed predicate" in (await check(matches(spec), run_of({"qty": 0}))).reason
    assert (await check(matches({"a": 1}), run_of('{"a": 1, "b": 2}'))).passed
    assert "expected structured output" in (await check(matches({"a": 1}), run_of("nope"))).reason


async def test_tool_checks():
    calls = [ToolCall("search", {"q": "tea", "limit": 5}), ToolCall("add", {"a": 2, "b": 3})]
    run = run_of("ok", calls)
    assert (await check(tool_called("add"), run)).passed
    assert (await check(tool_called("add", a=2), run)).passed
    wrong = await check(tool_called("add", a=9), run)
    assert not wrong.passed and "'add' was called but not with {'a': 9}" in wrong.reason
    never = await check(tool_called("mul"), run)
    assert (
        never.reason == "expected a call to 'mul', called: search(q='tea', limit=5), add(a=2, b=3)"
    )
    assert (await check(tool_not_called("mul"), run)).passed
    assert "called 1×" in (await check(tool_not_called("add"), run)).reason
    assert (await check(tool_sequence(["search", "add"]), run)).passed
    assert not (await check(tool_sequence(["add", "search"]), run)).passed
    assert (await check(tool_sequence(["add", "search"], strict_order=False), run)).passed
    assert not (await check(tool_sequence([]), run)).passed
    assert (await check(tool_sequence([]), run_of("x"))).passed


async def test_limits_and_no_error():
    run = run_of(
        "x", [ToolCall("a", {}, error="boom")], turns=3, usage=Usage(100, 50), latency_ms=1500
    )
    assert not (await check(max_turns(2), run)).passed
    assert (await check(max_turns(3), run)).passed
    assert (await check(max_tokens(100), run)).reason == "expected at most 100 tokens, used 150"
    assert (
        await check(max_latency(1000), run)
    ).reason == "expected at most 1,000 ms, took 1,500 ms"
    assert (await check(no_error(), run)).reason == "1 tool call(s) failed; first: a: boom"
    assert (await check(no_error(), run_of("x"))).passed


async def test_combinators():
    run = run_of("Paris is the capital")
    assert (await check(all_of(contains("Paris"), contains("capital")), run)).passed
    both = await check(all_of(contains("Paris"), contains("Berlin")), run)
    assert not both.passed and both.reason.startswith("contains: expected 'Berlin'")
    assert (await check(any_of(contains("Rome"), contains("Paris")), run)).passed
    none = await check(any_of(contains("Rome"), contains("Oslo")), run)
    assert not none.passed and "Rome" in none.reason and "Oslo" in none.reason
    w = await check(weighted({contains("Paris"): 3, contains("Berlin"): 1}, threshold=0.7), run)
    assert w.passed and w.score == pytest.approx(0.75)
    w2 = await check(weighted({contains("Paris"): 1, contains("Berlin"): 1}, threshold=0.7), run)
    assert not w2.passed and "weighted score 0.50 below 0.70" in w2.reason


async def test_plain_functions_bools_floats_and_raising():
    def concise(result: RunResult) -> bool:
        return len(str(result.output)) < 5

    async def scored(result: RunResult) -> float:
        return 0.8

    def broken(result: RunResult) -> bool:
        raise KeyError("missing")

    run = run_of("too long output")
    assert (await check(concise, run)) == CheckResult(
        "concise", False, 0.0, "concise returned False"
    )
    assert (await check(scored, run)) == CheckResult("scored", True, 0.8, "")
    raised = await check(broken, run)
    assert not raised.passed and raised.reason == "check raised KeyError: 'missing'"

"""`choice`: a multiple-choice answer read as Inspect's `multiple_choice()` solver and
`choice()` scorer read it — the letters on the `ANSWER:` line, never a substring."""

from __future__ import annotations

import pydantic
import pytest

from tui_eval.agents.messages import RunResult
from tui_eval.checks.choice import choice
from tui_eval.checks.registry import CheckSpec, CheckSpecError, build_check


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ("ANSWER: B", True),
        ("answer: b", True),  # the letter is read upper-cased, as Inspect does
        ("ANSWER: B.", True),
        ("ANSWER: B,", True),
        ("Let me think.\nB is the capital.\nANSWER: B", True),
        ("ANSWER: A\nOn reflection:\nANSWER: B", True),  # the last ANSWER line counts
        ("ANSWER: B\nOn reflection:\nANSWER: A", False),
        ("My final ANSWER: B!", True),  # no ANSWER line: the looser form, as Inspect reads it
        ("B) Paris, I am fairly sure.", False),
        ("The answer is B", False),
        ("ANSWER: B, C", False),  # one answer is asked for
        ("ANSWER: E", False),  # not one of the choices
        ("ANSWER: Bee", False),
        ("", False),
    ],
)
def test_a_single_answer(output: str, passed: bool):
    result = choice("B", options=4)(RunResult(output=output))
    assert result.passed is passed, result.reason
    assert result.score == (1.0 if passed else 0.0)


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ("ANSWER: B, C", True),
        ("ANSWER: C,B", True),
        ("ANSWER: BC", True),
        ("ANSWER: B and C", True),
        ("ANSWER: B C", True),
        ("ANSWER: B", False),
        ("ANSWER: A, B, C", False),
        ("ANSWER: B, Z", False),
    ],
)
def test_several_answers(output: str, passed: bool):
    result = choice(["B", "C"], options=4)(RunResult(output=output))
    assert result.passed is passed, result.reason


def test_reasons_say_what_was_read():
    check = choice("A", options=3)
    assert check(RunResult(output="ANSWER: C")).reason == "answered C, expected A"
    missing = check(RunResult(output="B) Paris, I am fairly sure."))
    assert missing.reason.startswith("no `ANSWER: <letter>` line naming one of A, B, C in ")


def test_beyond_26_choices_answers_are_numbers():
    assert choice("1", options=27)(RunResult(output="ANSWER: 1")).passed
    assert not choice("Z", options=27)(RunResult(output="ANSWER: 1")).passed


def test_declared_in_a_suite():
    specs = pydantic.TypeAdapter(CheckSpec)
    check = build_check(specs.validate_python({"choice": {"answer": ["A", "C"], "options": 3}}))
    assert check(RunResult(output="ANSWER: A, C")).passed
    with pytest.raises(CheckSpecError, match="answer D is not one of the 3 choices"):
        build_check(specs.validate_python({"choice": {"answer": "D", "options": 3}}))
    with pytest.raises(pydantic.ValidationError):
        specs.validate_python({"choice": {"answer": "A", "options": 0}})

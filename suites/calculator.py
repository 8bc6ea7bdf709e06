"""Example suite: a calculator agent, scripted so it runs offline with no API key.

It shows tool trajectories, structured output with `matches`, an LLM judge with its
reasoning, a flaky case measured with samples, a failing tool, and a timeout.

Its model calls take a simulated 0.15-0.4 s each, so a run is slow enough to watch;
`TUI_EVAL_EXAMPLE_PACE` scales those delays and the timeout (the tests run at 0.1).
"""

from __future__ import annotations

import os

import pydantic

from tui_eval import (
    Agent,
    Case,
    Completion,
    Suite,
    contains,
    llm_judge,
    matches,
    max_turns,
    no_error,
    tool_called,
    tool_sequence,
)
from tui_eval.agents.http.context import current_sample
from tui_eval.checks import verdict_reply
from tui_eval.testing import ScriptedProvider, call, text

PACE = float(os.environ.get("TUI_EVAL_EXAMPLE_PACE", "1"))


def seconds(value: float) -> float:
    """A simulated duration, scaled by `TUI_EVAL_EXAMPLE_PACE`."""
    return value * PACE


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


class Receipt(pydantic.BaseModel):
    item: str
    quantity: int
    unit_price: float
    total: float


agent = Agent(
    ScriptedProvider(name="unused"),
    tools=[add, multiply, divide],
    instructions="You are a careful calculator. Use the tools for every operation.",
    name="calculator",
)


def by_sample(*answers: str, delay: float = 0.25):
    """A model factory whose answer depends on the sample: sample i of the case answers
    `answers[i % len(answers)]`, whichever process runs it and whatever ran before, so a
    resumed run shows what the whole run would have (a flaky model, reproducibly)."""

    def model() -> ScriptedProvider:
        sample = current_sample()  # which sample of the case is being run
        index = sample.index if sample is not None else 0
        return ScriptedProvider([text(answers[index % len(answers)], delay=seconds(delay))])

    return model


def judge_reply(messages) -> Completion:
    """An offline judge: it reads the answer and scores it as a strict reviewer would."""
    answer = messages[-1].content
    if "42" not in answer:
        return Completion(content=verdict_reply(0.2, "The answer never says the result is 42."))
    if "group" not in answer:
        return Completion(
            content=verdict_reply(
                0.55, "Correct, but it does not explain multiplication as equal groups."
            )
        )
    return Completion(content=verdict_reply(0.9, "Correct, simple, and explains 6 groups of 7."))


cases = [
    Case(
        "What is 2 + 3?",
        checks=[contains("5"), tool_called("add", a=2, b=3), max_turns(2)],
        model=ScriptedProvider.factory(
            [
                call("add", {"a": 2, "b": 3}, delay=seconds(0.3)),
                text("2 + 3 = 5", delay=seconds(0.2)),
            ]
        ),
    ),
    Case(
        "23.4 * 91 等于多少？",
        checks=[contains("2129.4"), tool_called("multiply")],
        model=ScriptedProvider.factory(
            [
                call("multiply", {"a": 23.4, "b": 91}, delay=seconds(0.4)),
                text("23.4 × 91 = 2129.4", delay=seconds(0.2)),
            ]
        ),
    ),
    Case(
        "What is (2 + 3) * 4?",
        name="two-step arithmetic",
        checks=[tool_sequence(["add", "multiply"]), contains("20")],
        model=ScriptedProvider.factory(
            [
                call("add", {"a": 2, "b": 3}, delay=seconds(0.2)),
                call("multiply", {"a": 5, "b": 4}, delay=seconds(0.2)),
                text("(2 + 3) * 4 = 20", delay=seconds(0.2)),
            ]
        ),
    ),
    Case(
        "Divide 1 by 0.",
        name="division by zero",
        checks=[no_error(), contains("cannot divide by zero")],
        model=ScriptedProvider.factory(
            [
                call("divide", {"a": 1, "b": 0}, delay=seconds(0.2)),
                text("The result is infinity.", delay=seconds(0.2)),
            ]
        ),
    ),
    Case(
        "3 apples at $0.50 each: give me the receipt as JSON.",
        name="structured receipt",
        output_type=Receipt,
        checks=[matches({"item": "apple", "quantity": 3, "total": lambda t: abs(t - 1.5) < 1e-9})],
        model=ScriptedProvider.factory(
            [
                call("multiply", {"a": 3, "b": 0.5}, delay=seconds(0.2)),
                text(
                    '{"item": "apple", "quantity": 3, "unit_price": 0.5, "total": 1.5}',
                    delay=seconds(0.2),
                ),
            ]
        ),
    ),
    Case(
        "Explain to a child what 6 * 7 is.",
        name="explain to a child",
        checks=[
            llm_judge(
                "Gives the right result (42) and explains multiplication simply.",
                model=lambda: ScriptedProvider([judge_reply]),
            )
        ],
        samples=4,
        pass_threshold=0.75,
        model=by_sample(
            "6 * 7 is 42: imagine 6 groups of 7 sweets.",
            "It is 42.",
            "6 * 7 = 42, like 6 bags with 7 marbles in each group.",
            "Multiplying means adding again and again.",
        ),
    ),
    Case(
        "Round 2.5 to the nearest integer.",
        name="rounding (flaky)",
        checks=[contains("3")],
        samples=5,
        pass_threshold=0.6,
        model=by_sample("3", "2 (banker's rounding)", "3", "3", "2", delay=0.15),
    ),
    Case(
        "Sum every prime below ten billion.",
        name="slow tool (timeout)",
        checks=[contains("sum")],
        timeout=seconds(1.0),
        model=ScriptedProvider.factory(
            [call("add", {"a": 2, "b": 3}, delay=seconds(30)), text("The sum is …")]
        ),
    ),
]

suite = Suite(
    "calculator",
    agent=agent,
    cases=cases,
    concurrency=4,
    price=lambda u: u.input_tokens * 0.15e-6 + u.output_tokens * 0.6e-6,
    description="A scripted calculator agent: tools, structured output, a judge, a flaky case, a timeout.",
)

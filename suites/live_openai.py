"""A live suite: a small tool-using agent against a real OpenAI model.

It runs when OPENAI_API_KEY is set (OPENAI_BASE_URL and TUI_EVAL_LIVE_MODEL are honoured)
and is skipped with a message otherwise, so the bundled suites stay offline by default.
"""

from __future__ import annotations

import os

from tui_eval import Agent, Case, Suite, contains, llm_judge, max_turns, tool_called

MODEL = os.environ.get("TUI_EVAL_LIVE_MODEL", "gpt-4o-mini")


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def make_agent() -> Agent:
    return Agent(
        f"openai:{MODEL}",
        tools=[add, multiply],
        instructions="You are a calculator. Use the tools for every operation, then answer in one sentence.",
        settings={"temperature": 0},
    )


suite = Suite(
    "live_openai",
    agent=make_agent,
    cases=[
        Case(
            "What is 23.4 * 91?",
            checks=[tool_called("multiply"), contains("2129.4"), max_turns(4)],
            samples=3,
        ),
        Case(
            "What is (2 + 3) * 4?",
            checks=[tool_called("add"), tool_called("multiply"), contains("20")],
        ),
        Case(
            "Explain to a child what 6 * 7 is.",
            checks=[
                llm_judge("Says 42 and explains multiplication simply.", model=f"openai:{MODEL}")
            ],
            samples=2,
        ),
    ],
    concurrency=4,
    price=lambda u: u.input_tokens * 0.15e-6 + u.output_tokens * 0.6e-6,
    skip=None
    if os.environ.get("OPENAI_API_KEY")
    else "skipped: set OPENAI_API_KEY to run it against a real model",
)

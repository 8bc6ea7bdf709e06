"""The Ray benchmark's suite: LATENCY seconds per sample (env TUI_EVAL_BENCH_LATENCY)."""

import os

import anyio

from tui_eval import Case, Suite, contains

LATENCY = float(os.environ.get("TUI_EVAL_BENCH_LATENCY", "0"))
CASES = int(os.environ.get("TUI_EVAL_BENCH_CASES", "1000"))
SAMPLES = int(os.environ.get("TUI_EVAL_BENCH_SAMPLES", "10"))


async def agent(prompt: str) -> str:
    if LATENCY:
        await anyio.sleep(LATENCY)
    return prompt.replace("question", "answer")


suite = Suite(
    "ray-bench",
    agent=agent,
    cases=[
        Case(f"question {i}", checks=[contains(f"answer {i}")], name=f"case {i}", samples=SAMPLES)
        for i in range(CASES)
    ],
)

"""Workload A or B on Inspect AI (run in its own virtualenv): a solver sets the output, no model."""

from __future__ import annotations

import asyncio
import os
import tempfile

from common import Timer, emit, parse
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import match
from inspect_ai.solver import Generate, TaskState, solver

name, n, samples, latency, concurrency = parse()


@solver
def answer():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if latency:
            await asyncio.sleep(latency)
        state.output = ModelOutput.from_content(
            "none", state.input_text.replace("question", "answer")
        )
        return state

    return solve


task = Task(
    dataset=MemoryDataset(
        [Sample(input=f"question {i}", target=f"answer {i}", id=i) for i in range(n)]
    ),
    solver=answer(),
    scorer=match(location="exact"),
    epochs=samples,
)
with tempfile.TemporaryDirectory() as logs, Timer() as timer:
    os.environ["INSPECT_DISPLAY"] = "none"
    (log,) = eval(
        task,
        model="mockllm/model",
        max_samples=concurrency,
        display="none",
        log_dir=logs,
        log_samples=False,
    )
total = n * samples
accuracy = (
    log.results.scores[0].metrics["accuracy"].value if log.results and log.results.scores else 0.0
)
emit("inspect-ai", name, timer.wall, total, round(accuracy * total))

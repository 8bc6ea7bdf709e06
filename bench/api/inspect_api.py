"""The rate-limit scenario on Inspect AI, on its defaults: its OpenAI provider, one generate."""

from __future__ import annotations

import os
import tempfile

from common import Timer, emit, parse

args = parse()
# "openai-api/SERVICE/MODEL" is Inspect's OpenAI-compatible (chat completions) provider.
os.environ["BENCH_BASE_URL"] = args.url
os.environ["BENCH_API_KEY"] = "x"
os.environ["INSPECT_DISPLAY"] = "none"

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

task = Task(
    dataset=MemoryDataset(
        [Sample(input=f"question {i}", target=f"answer {i}", id=i) for i in range(args.cases)]
    ),
    solver=generate(),
    scorer=match(location="exact"),
)
with tempfile.TemporaryDirectory() as logs, Timer() as timer:
    (log,) = eval(
        task,
        model="openai-api/bench/bench",
        max_connections=args.concurrency,
        max_samples=args.concurrency,
        display="none",
        log_dir=logs,
        log_samples=False,
    )
accuracy = (
    log.results.scores[0].metrics["accuracy"].value if log.results and log.results.scores else 0.0
)
emit("inspect-ai", timer.wall, args.cases, round(accuracy * args.cases), timer.cpu)

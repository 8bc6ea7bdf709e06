"""The Ray executor on a local runtime: its per-sample cost, and a latency-bound run.

    pip install -e '.[ray]' && python bench/ray_bench.py

1. Overhead: 20,000 zero-latency samples over 2 workers, minus a 1-sample run (actor
   start-up and suite loading), per sample; beside the in-process runner on the same suite.
2. Latency-bound: 10,000 samples x 500 ms at concurrency 1,000 over 2 workers; ideal 5 s.
The local runtime is started before the timers (2.5-5 s on this machine, once per process).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
SUITE = HERE / "ray" / "suite.py"


def load(latency: float, cases: int, samples: int):
    os.environ["TUI_EVAL_BENCH_LATENCY"] = str(latency)
    os.environ["TUI_EVAL_BENCH_CASES"] = str(cases)
    os.environ["TUI_EVAL_BENCH_SAMPLES"] = str(samples)
    sys.modules.pop("suite", None)
    from tui_eval.suites import load_suites

    return load_suites([str(SUITE)]).suites[0]


def timed(suite, concurrency: int, executor) -> tuple[float, int]:
    from tui_eval.runner import Evaluation

    evaluation = Evaluation(
        suite.agent, suite.cases, name=suite.name, concurrency=concurrency, executor=executor
    )
    start = time.perf_counter()
    report = anyio.run(evaluation.run)
    wall = time.perf_counter() - start
    assert report.passed, report.header()
    return wall, len(report.samples)


def main() -> None:
    from tui_eval.ray_executor import RayExecutor, start_ray

    started = time.perf_counter()
    start_ray(num_cpus=2)
    print(f"local Ray runtime started in {time.perf_counter() - started:.1f}s")

    # 1. per-sample overhead
    small = load(0.0, 1, 1)
    big = load(0.0, 2000, 10)
    workers = int(os.environ.get("RAY_BENCH_WORKERS", "2"))
    executor = RayExecutor(SUITE, "ray-bench", workers=workers)
    base, _ = timed(small, 100, RayExecutor(SUITE, "ray-bench", workers=workers))
    wall, n = timed(big, 100, executor)
    local, _ = timed(big, 100, None)
    print(
        f"overhead: {n:,} samples in {wall:.2f}s on Ray, {workers} workers (1-sample run "
        f"{base:.2f}s) -> "
        f"{(wall - base) / n * 1e6:.0f} µs a sample; in-process {local:.2f}s "
        f"({local / n * 1e6:.0f} µs a sample)"
    )

    # 2. latency-bound: 10,000 x 500 ms at concurrency 1,000 over 2 workers
    suite = load(0.5, 1000, 10)
    wall, n = timed(suite, 1000, RayExecutor(SUITE, "ray-bench", workers=2))
    ideal = 10_000 / 1000 * 0.5
    print(f"latency-bound: {n:,} samples in {wall:.2f}s; ideal {ideal:.1f}s -> {wall / ideal:.2f}x")


if __name__ == "__main__":
    main()

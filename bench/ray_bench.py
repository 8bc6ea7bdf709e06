"""The Ray executor on a local runtime: its per-sample cost, and a latency-bound run.

    pip install -e '.[ray]' && python bench/ray_bench.py

1. Overhead: 20,000 zero-latency samples over 2 workers, minus a 1-sample run (loading the
   suite in the workers), per sample, both on the workers a first run started; beside the
   in-process runner on the same suite.
2. Latency-bound: 10,000 samples x 500 ms at concurrency 1,000 over 2 workers; ideal 5 s;
   on the workers earlier runs left (as the app's reruns are), then on new ones.
The local runtime is started before the timers (2.5-5 s on this machine, once per process).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio

from tui_eval.core.settings import RunSettings

HERE = Path(__file__).resolve().parent
SUITE = HERE / "ray" / "suite.py"


def load(name: str):
    from tui_eval.suites import load_suites

    return next(s for s in load_suites([str(SUITE)]).suites if s.name == name)


def timed(suite, concurrency: int, executor) -> tuple[float, int]:
    from tui_eval.run.evaluation import Evaluation

    evaluation = Evaluation(
        suite.agent,
        suite.cases,
        settings=RunSettings(concurrency=concurrency, executor=executor),
        name=suite.name,
    )
    start = time.perf_counter()
    report = anyio.run(evaluation.run)
    wall = time.perf_counter() - start
    assert report.passed, report.header()
    return wall, len(report.samples)


def main() -> None:
    from tui_eval.run.ray_executor import RayExecutor, release_workers, start_ray

    started = time.perf_counter()
    start_ray(num_cpus=2)
    print(f"local Ray runtime started in {time.perf_counter() - started:.1f}s")

    # 1. per-sample overhead
    small = load("ray-bench-one")
    big = load("ray-bench-instant")
    workers = int(os.environ.get("RAY_BENCH_WORKERS", "2"))
    executor = RayExecutor(SUITE, big.name, workers=workers)
    timed(small, 100, RayExecutor(SUITE, small.name, workers=workers))  # starts the workers
    base, _ = timed(small, 100, RayExecutor(SUITE, small.name, workers=workers))
    wall, n = timed(big, 100, executor)
    local, _ = timed(big, 100, None)
    print(
        f"overhead: {n:,} samples in {wall:.2f}s on Ray, {workers} workers (1-sample run "
        f"{base:.2f}s) -> "
        f"{(wall - base) / n * 1e6:.0f} µs a sample; in-process {local:.2f}s "
        f"({local / n * 1e6:.0f} µs a sample)"
    )

    # 2. latency-bound: 10,000 x 500 ms at concurrency 1,000 over 2 workers
    suite = load("ray-bench-latency")
    wall, n = timed(suite, 1000, RayExecutor(SUITE, suite.name, workers=2))
    ideal = 10_000 / 1000 * 0.5
    print(f"latency-bound: {n:,} samples in {wall:.2f}s; ideal {ideal:.1f}s -> {wall / ideal:.2f}x")

    # 3. the same on new worker processes (what a driver's first run pays when Ray has no
    #    idle workers ready for it)
    released = release_workers()
    wall, n = timed(suite, 1000, RayExecutor(SUITE, suite.name, workers=2))
    print(
        f"latency-bound on new workers ({released} idle ones stopped first): {n:,} samples "
        f"in {wall:.2f}s -> {wall / ideal:.2f}x"
    )


if __name__ == "__main__":
    main()

"""The workloads every framework runs (see bench/README.md), and how results are printed."""

from __future__ import annotations

import json
import resource
import sys
import time

WORKLOADS = {
    # name: (cases, samples per case, agent latency in seconds, concurrency)
    "A": (2000, 5, 0.0, 50),
    "B": (500, 1, 0.020, 50),
}


def parse() -> tuple[str, int, int, float, int]:
    name = sys.argv[1]
    cases, samples, latency, concurrency = WORKLOADS[name]
    return name, cases, samples, latency, concurrency


def emit(framework: str, workload: str, wall: float, samples: int, passed: int) -> None:
    """One JSON line: what run_bench.py reads."""
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "framework": framework,
                "workload": workload,
                "wall": wall,
                "samples": samples,
                "passed": passed,
                "rss_mb": rss_mb,
            }
        )
    )


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.start

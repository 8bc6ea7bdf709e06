"""The workloads every framework runs (see bench/README.md), and how results are printed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for driver_io
import driver_io
from driver_io import Timer as Timer

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
    driver_io.emit(
        framework=framework, workload=workload, wall=wall, samples=samples, passed=passed
    )

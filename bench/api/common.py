"""What every rate-limit driver shares: its arguments and the one JSON line it prints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for driver_io
import driver_io
from driver_io import Timer as Timer


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("url", help="the loopback API's base URL, ending in /v1")
    parser.add_argument("--cases", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    return parser.parse_args()


def emit(framework: str, wall: float, samples: int, passed: int, cpu: float) -> None:
    driver_io.emit(framework=framework, wall=wall, samples=samples, passed=passed, cpu=cpu)

"""What every rate-limit driver shares: its arguments and the one JSON line it prints."""

from __future__ import annotations

import argparse
import json
import resource
import time


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("url", help="the loopback API's base URL, ending in /v1")
    parser.add_argument("--cases", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    return parser.parse_args()


def emit(framework: str, wall: float, samples: int, passed: int, cpu: float) -> None:
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "framework": framework,
                "wall": wall,
                "samples": samples,
                "passed": passed,
                "cpu": cpu,
                "rss_mb": rss_mb,
            }
        )
    )


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.start
        self.cpu = time.process_time() - self.cpu_start

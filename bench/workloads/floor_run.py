"""The floor for workload B: a bare pool of 50 asyncio tasks sleeping 20 ms, no framework."""

from __future__ import annotations

import asyncio
import time

from common import WORKLOADS


async def main() -> None:
    cases, samples, latency, concurrency = WORKLOADS["B"]
    pending = iter(range(cases * samples))

    async def worker() -> None:
        for _ in pending:
            await asyncio.sleep(latency)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    print(f"floor B {time.perf_counter() - start:.4f}")


asyncio.run(main())

"""Storing answers in the response cache, alone: CPU a put and the event loop's lag.

    python bench/cache_write_bench.py [--puts 3000] [--at-once 200]

`--at-once` tasks store `--puts` chat answers (a 40-word reply, one request secret) in a
fresh cache folder, as a run with `--cache` stores its misses; beside them a task sleeps
5 ms over and over and records how late it wakes. Prints the wall, the process's CPU a
put, and the lag's p99 and max. Works on checkouts whose `put()` is sync or async.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import tempfile
import time
from pathlib import Path

ANSWER = {
    "id": "chatcmpl-1",
    "choices": [{"message": {"role": "assistant", "content": "hello " * 40}}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 50},
}


async def measure(puts: int, at_once: int) -> str:
    from tui_eval.agents.http.cache import ResponseCache

    cache = ResponseCache("on", Path(tempfile.mkdtemp()))
    gate = asyncio.Semaphore(at_once)
    lags: list[float] = []
    done = False

    async def ticker() -> None:
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append(time.perf_counter() - start - 0.005)

    async def one(i: int) -> None:
        async with gate:
            stored = cache.put(f"{i:064x}", ANSWER, ["sk-secret-0123456789"])
            if inspect.isawaitable(stored):
                await stored

    tick = asyncio.create_task(ticker())
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(puts)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    done = True
    await tick
    lags.sort()
    return (
        f"{puts} puts, {at_once} at once: wall {wall:.2f}s, CPU {cpu / puts * 1e6:.0f} µs a put, "
        f"loop lag p99 {lags[int(len(lags) * 0.99)] * 1000:.1f} ms, max {lags[-1] * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--puts", type=int, default=3000)
    parser.add_argument("--at-once", type=int, default=200)
    args = parser.parse_args()
    os.environ["TUI_EVAL_HOME"] = tempfile.mkdtemp()
    print(asyncio.run(measure(args.puts, args.at_once)))


if __name__ == "__main__":
    main()

"""The no-limit scenario's floor: only the HTTP exchanges, no framework, 640 requests at 64.

    python bench/api/http_floor.py URL      # URL of a running bench/loopback_api.py, .../v1

Runs tui-eval's connection stack (its HTTP/1.1 client on asyncio transports) and, if it is
installed, aiohttp (C parser) for comparison; prints wall and CPU of each, twice.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

URL = sys.argv[1]
BODY = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "question 1"}]})
HEADERS = [(b"Content-Type", b"application/json"), (b"Accept", b"application/json")]


async def tui_eval_stack() -> None:
    from tui_eval.agents.providers.connections import ConnectionPool

    pool = ConnectionPool(URL)
    gate = asyncio.Semaphore(64)

    async def one() -> object:
        async with gate:
            return await pool.post(URL + "/chat/completions", BODY.encode(), HEADERS, 30, 10**7)

    await timed("tui-eval connections", one)
    await pool.aclose()


async def aiohttp_stack() -> None:
    try:
        import aiohttp
    except ImportError:
        return
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    gate = asyncio.Semaphore(64)

    async def one() -> object:
        async with gate, session.post(URL + "/chat/completions", data=BODY) as response:
            return await response.read()

    await timed("aiohttp", one)
    await session.close()


async def timed(label: str, one) -> None:  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(640)))
    print(f"{label}: {time.perf_counter() - wall:.3f}s wall, {time.process_time() - cpu:.3f}s CPU")


for _ in range(2):
    asyncio.run(tui_eval_stack())
    asyncio.run(aiohttp_stack())

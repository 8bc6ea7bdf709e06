"""The no-limit scenario's floor: only the HTTP exchanges, no framework, 640 requests at 64.

    python bench/api/http_floor.py URL      # URL of a running bench/loopback_api.py, .../v1

Runs tui-eval's HTTP stack (its transport layer over aiohttp's sockets, through an httpx2
client) and aiohttp alone (C parser) for comparison; prints wall and CPU of each, twice.
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
    from tui_eval import http_client

    client = http_client()
    gate = asyncio.Semaphore(64)
    headers = dict((k.decode(), v.decode()) for k, v in HEADERS)

    async def one() -> object:
        async with gate:
            response = await client.post(URL + "/chat/completions", content=BODY, headers=headers)
            return response.content

    await timed("tui-eval http_client", one)
    await client.aclose()


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

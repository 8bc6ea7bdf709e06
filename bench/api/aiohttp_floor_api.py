"""The no-limit floor: the same cases as plain HTTP with aiohttp (C parser), no framework.

64 workers POST each case's chat request on one `aiohttp.ClientSession`, parse the JSON and
compare the answer; no retries, no limiter, no checks beyond equality. Runs on the same
interpreter as tui-eval (aiohttp is the socket layer under tui-eval's HTTP stack).
"""

from __future__ import annotations

import asyncio
import json

import aiohttp
from common import Timer, emit, parse


async def main() -> None:
    args = parse()
    url = args.url + "/chat/completions"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    queue = list(range(args.cases))
    passed = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal passed
        while queue:
            i = queue.pop()
            body = json.dumps(
                {"model": "bench", "messages": [{"role": "user", "content": f"question {i}"}]}
            )
            async with session.post(url, data=body, headers=headers) as response:
                reply = json.loads(await response.read())
            if reply["choices"][0]["message"]["content"] == f"answer {i}":
                passed += 1

    connector = aiohttp.TCPConnector(limit=0)
    with Timer() as timer:
        async with aiohttp.ClientSession(connector=connector) as session:
            await asyncio.gather(*(worker(session) for _ in range(args.concurrency)))
    emit("aiohttp (floor)", timer.wall, args.cases, passed, timer.cpu)


asyncio.run(main())

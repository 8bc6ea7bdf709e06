"""An OpenAI-compatible chat server on 127.0.0.1 that enforces a token bucket, like a real API.

    python bench/loopback_api.py --rate 100 --burst 10 --latency 0.05 [--no-headers]

It prints `port N` once listening. Every request takes a token from the bucket (`rate` per
second, at most `burst` saved up) when it arrives; without one it is answered at once with
HTTP 429, `Retry-After` (whole seconds, rounded up) and `retry-after-ms`, as OpenAI does.
Every response carries OpenAI's rate-limit headers (`x-ratelimit-limit-requests` per
minute, `-remaining-requests`, `-reset-requests`) unless `--no-headers`; `--mislabelled`
sends the per-second limit under those per-minute names (some servers do). Accepted requests
are answered after `latency` seconds with the last user message, "question" replaced by
"answer". `GET /stats` returns the counts as JSON; `POST /reset` zeroes them.

The tests start it in a thread (`LoopbackAPI(...)` as a context manager); the benchmarks
start it as its own process so it never competes with the runner for the GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import threading
import time
from typing import Any


class TokenBucket:
    def __init__(self, rate: float | None, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.at = time.monotonic()

    def take(self) -> float:
        """0.0 when a token was taken, else the seconds until one is there."""
        if self.rate is None:
            return 0.0
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


class Stats:
    def __init__(self) -> None:
        self.ok = 0
        self.limited = 0
        self.connections = 0
        self.first_ok = 0.0
        self.last_ok = 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "ok": self.ok,
            "limited": self.limited,
            "connections": self.connections,
            "accepting_s": round(self.last_ok - self.first_ok, 3),
        }


class _Connection(asyncio.Protocol):
    def __init__(self, api: Server) -> None:
        self.api = api
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.api.stats.connections += 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            lines = head.split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            method, path, _ = lines[0].split(" ", 2)
            self.api.answer(self, method, path, body)

    def send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        data = json.dumps(payload).encode()
        reason = {200: "OK", 429: "Too Many Requests", 404: "Not Found"}.get(status, "Error")
        head = [f"HTTP/1.1 {status} {reason}", "content-type: application/json"]
        head.append(f"content-length: {len(data)}")
        head.extend(f"{k}: {v}" for k, v in headers.items())
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)


class Server:
    def __init__(
        self,
        rate: float | None = None,
        burst: float = 1.0,
        latency: float = 0.05,
        headers: bool = True,
        mislabelled: bool = False,
    ) -> None:
        self.bucket = TokenBucket(rate, burst)
        self.latency = latency
        self.headers = headers
        self.mislabelled = mislabelled
        self.stats = Stats()

    def _limit_headers(self) -> dict[str, str]:
        bucket = self.bucket
        if not self.headers or bucket.rate is None:
            return {}
        if self.mislabelled:
            # Its per-second limit under the per-minute names: the limit in requests a
            # second, `remaining` the bucket's tokens, `reset` the time to the next token.
            return {
                "x-ratelimit-limit-requests": f"{bucket.rate:g}",
                "x-ratelimit-remaining-requests": str(math.floor(bucket.tokens)),
                "x-ratelimit-reset-requests": f"{max(0.0, 1 - bucket.tokens % 1) / bucket.rate * 1000:.0f}ms",
            }
        reset = (bucket.burst - bucket.tokens) / bucket.rate
        return {
            "x-ratelimit-limit-requests": str(round(bucket.rate * 60)),
            "x-ratelimit-remaining-requests": str(math.floor(bucket.tokens)),
            "x-ratelimit-reset-requests": f"{reset * 1000:.0f}ms",
        }

    def answer(self, conn: _Connection, method: str, path: str, body: bytes) -> None:
        """Answer at once (429, stats) or after `latency` (a timer, not a task: the server
        must not be the bottleneck of the runs it measures)."""
        if method == "GET" and path.endswith("/stats"):
            conn.send(200, self.stats.as_dict(), {})
            return
        if method == "POST" and path.endswith("/reset"):
            self.stats = Stats()
            conn.send(200, {}, {})
            return
        wait = self.bucket.take()
        if wait:
            self.stats.limited += 1
            headers = {"retry-after": str(math.ceil(wait)), "retry-after-ms": f"{wait * 1000:.0f}"}
            headers.update(self._limit_headers())
            error = {"message": "Rate limit reached for requests", "type": "requests"}
            conn.send(429, {"error": error}, headers)
            return
        headers = self._limit_headers()
        request = json.loads(body or b"{}")
        messages = request.get("messages") or [{"content": ""}]
        question = str(messages[-1].get("content") or "")
        reply = _completion(request.get("model", ""), question)
        if self.latency:
            asyncio.get_running_loop().call_later(self.latency, self._ok, conn, reply, headers)
        else:
            self._ok(conn, reply, headers)

    def _ok(self, conn: _Connection, reply: dict[str, Any], headers: dict[str, str]) -> None:
        self.stats.ok += 1
        self.stats.last_ok = time.monotonic()
        if self.stats.ok == 1:
            self.stats.first_ok = self.stats.last_ok
        conn.send(200, reply, headers)

    async def serve(self, port: int = 0, ready: Any = None) -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: _Connection(self), "127.0.0.1", port, backlog=4096
        )
        bound = server.sockets[0].getsockname()[1]
        if ready is not None:
            ready(bound)
        async with server:
            await server.serve_forever()


def _completion(model: str, question: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": question.replace("question", "answer")},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


class LoopbackAPI:
    """The server in a thread of this process: `with LoopbackAPI(rate=10) as api: api.url`."""

    def __init__(self, **options: Any) -> None:
        self.server = Server(**options)
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()

        def ready(port: int) -> None:
            self.url = f"http://127.0.0.1:{port}/v1"
            self._ready.set()

        with contextlib.suppress(asyncio.CancelledError, RuntimeError):
            self._loop.run_until_complete(self.server.serve(0, ready))

    @property
    def stats(self) -> Stats:
        return self.server.stats

    def __enter__(self) -> LoopbackAPI:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        loop = self._loop
        if loop is not None:
            for task in asyncio.all_tasks(loop):
                loop.call_soon_threadsafe(task.cancel)
        self._thread.join(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=None, help="requests per second")
    parser.add_argument("--burst", type=float, default=1.0)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--no-headers", action="store_true")
    parser.add_argument("--mislabelled", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = Server(
        args.rate,
        args.burst,
        args.latency,
        headers=not args.no_headers,
        mislabelled=args.mislabelled,
    )
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(server.serve(args.port, lambda port: print(f"port {port}", flush=True)))


if __name__ == "__main__":
    main()

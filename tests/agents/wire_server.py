"""A real HTTP server on 127.0.0.1 that replays scripted responses and records requests."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drip: float = 0.0
    """Send the body one byte at a time, this many seconds apart (a slow-loris server)."""
    chunked: bool = False
    """Send the body with chunked transfer encoding (no content-length up front)."""


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threaded HTTP server for tests. They send dozens of requests at once (a jury's
    judges, concurrent samples): with the default listen backlog of 5, the kernel drops
    the connections past it and the clients retry a second later."""

    request_queue_size = 128
    daemon_threads = True


class WireServer:
    """Start with `with WireServer() as server:`; `server.url` is its base URL."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.always: Reply | None = None
        """The reply once the scripted ones ran out (None: a 500 saying so)."""
        self.requests: list[Recorded] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                outer.requests.append(
                    Recorded(self.path, dict(self.headers), json.loads(raw or b"{}"))
                )
                reply = (
                    outer.replies.popleft()
                    if outer.replies
                    else outer.always or Reply(500, {"error": {"message": "no reply scripted"}})
                )
                if reply.delay:
                    time.sleep(reply.delay)
                data = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    if reply.chunked:
                        self.send_header("transfer-encoding", "chunked")
                    else:
                        self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if reply.chunked:
                        for start in range(0, len(data), 256):
                            piece = data[start : start + 256]
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.write(b"0\r\n\r\n")
                    elif reply.drip:
                        deadline = time.monotonic() + 10  # bounded, whatever the client does
                        for byte in data:
                            if time.monotonic() > deadline:
                                break
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(reply.drip)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def reply(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def __enter__(self) -> WireServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def openai_text(content: str, prompt: int = 10, completion: int = 5) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def openai_call(
    name: str,
    arguments: dict[str, Any],
    call_id: str = "call_a",
    prompt: int = 12,
    completion: int = 7,
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def anthropic_text(content: str, prompt: int = 10, completion: int = 5) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": content}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def anthropic_call(
    name: str, arguments: dict[str, Any], call_id: str = "toolu_a"
) -> dict[str, Any]:
    return {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 20, "output_tokens": 9},
    }

"""A loopback OpenAI-compatible chat server that answers each request by a function of it.

`WireServer` replays a queue of replies: right for one caller. A conversation has two (the
agent and a simulated user) whose requests interleave, so here each request's body decides
its reply — by its system prompt (whose request it is) and its messages (how far along).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.wire_server import LoopbackHTTPServer, Reply

MODEL = "gpt-4o-mini"
"""A model genai-prices knows: every response names it, so every response is priced."""

USER_MARK = "You are playing a human user"
"""How a simulated user's system prompt begins (`tui_eval.agents.users.USER_INSTRUCTIONS`)."""


def is_user(body: dict[str, Any]) -> bool:
    """Whether a request is a simulated user's (its system prompt says so)."""
    first = (body.get("messages") or [{}])[0]
    return first.get("role") == "system" and USER_MARK in str(first.get("content") or "")


def completion(
    content: str | None = None,
    *,
    call: tuple[str, dict[str, Any]] | None = None,
    call_id: str = "call_1",
    prompt: int = 10,
    output: int = 5,
    model: str = MODEL,
) -> dict[str, Any]:
    """A chat completion: text, or one tool call, with its usage."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if call is not None:
        name, arguments = call
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if call is not None else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
        },
    }


class ChatServer:
    """`with ChatServer(answer) as server:` — `server.url` is its base URL; every request
    body is kept in `server.requests`, in order, and answered with `answer(body)` (a
    `Reply` whose body is JSON, or bytes sent as they are with the headers it names)."""

    def __init__(self, answer: Callable[[dict[str, Any]], Reply]) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:  # requests answered in the order they came
                    outer.requests.append(body)
                    try:
                        reply = answer(body)
                    except Exception as exc:  # a test's bug: say it, do not hang the client
                        reply = Reply(500, {"error": {"message": f"test server: {exc!r}"}})
                # A body given as bytes (an event stream) is sent as it is.
                raw = isinstance(reply.body, bytes)
                data = reply.body if raw else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                if "content-type" not in reply.headers:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def of_user(self) -> list[dict[str, Any]]:
        """The simulated user's requests."""
        return [body for body in self.requests if is_user(body)]

    def of_agent(self) -> list[dict[str, Any]]:
        """The agent's requests."""
        return [body for body in self.requests if not is_user(body)]

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

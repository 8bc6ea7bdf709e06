"""Smoke test of an installed tui-eval: real HTTP to an OpenAI-compatible and an Anthropic API.

    python scripts/smoke_http.py

Needs nothing but the package as `pip install tui-eval` installs it (no extras, no trio,
no test dependencies): it starts a stdlib `http.server` on 127.0.0.1 that answers both
wire formats, sends one request through each built-in provider and one small `evaluate`
run, and exits 0 with `smoke: ok` (or non-zero with the error). `.ci/run` runs it in a
fresh virtualenv; `tests/agents/test_network.py` runs it with `trio` made unimportable.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-smoke-0123456789"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real APIs

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        question = str(body["messages"][-1]["content"])
        answer = question.replace("question", "answer")
        if self.path == "/v1/chat/completions":
            ok = self.headers.get("authorization") == f"Bearer {KEY}"
            reply: dict[str, Any] = {
                "id": "chatcmpl-smoke",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2},
            }
        elif self.path == "/v1/messages":
            ok = self.headers.get("x-api-key") == KEY and bool(
                self.headers.get("anthropic-version")
            )
            reply = {
                "id": "msg_smoke",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": answer}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 2},
            }
        else:
            ok, reply = False, {}
        status = 200 if ok else 401
        if not ok:
            reply = {"error": {"message": f"unexpected request to {self.path}"}}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


async def main(base: str) -> None:
    from tui_eval import Agent, Case, equals, evaluate
    from tui_eval.agents.messages import Message
    from tui_eval.agents.providers import resolve_model
    from tui_eval.agents.providers.anthropic import AnthropicProvider

    os.environ["OPENAI_API_KEY"] = KEY
    openai = resolve_model(f"openai-compatible:smoke-model@{base}/v1")
    anthropic = AnthropicProvider("claude-smoke", base_url=base, api_key=KEY)
    for name, provider in (("openai-compatible", openai), ("anthropic", anthropic)):
        completion = await provider.complete([Message("user", "question 1")], [])
        if completion.content != "answer 1":
            raise SystemExit(f"smoke: {name} answered {completion.content!r}")
        print(f"smoke: {name} request ok ({completion.usage})")
        cases = [Case(f"question {i}", checks=[equals(f"answer {i}")]) for i in range(4)]
        report = await evaluate(Agent(provider), cases, concurrency=2)
        if not report.passed:
            raise SystemExit(f"smoke: {name} run failed:\n{report.header()}")
        print(f"smoke: {name} run ok ({report.header().splitlines()[0]})")


if __name__ == "__main__":
    for variable in [v for v in os.environ if v.lower().endswith("_proxy")]:
        del os.environ[variable]  # the server is on this machine: no proxy in between
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        asyncio.run(main(f"http://127.0.0.1:{server.server_address[1]}"))
    finally:
        server.shutdown()
    import tui_eval

    print(f"smoke: ok ({tui_eval.__file__}, Python {sys.version.split()[0]})")

"""A judge model on 127.0.0.1: an OpenAI-compatible server whose verdict follows the answer.

An answer containing "GOOD" scores 0.9, any other 0.2; a model whose name starts with
"wrong" gives the opposite score. Every request is counted, by model.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.wire_server import LoopbackHTTPServer


def verdict_for(model: str, answer: str) -> float:
    score = 0.9 if "GOOD" in answer else 0.2
    return round(1.0 - score, 2) if model.startswith("wrong") else score


class JudgeServer:
    """`with JudgeServer() as server:`; `server.url` is the base URL (with /v1)."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                model = body.get("model", "")
                prompt = body["messages"][-1]["content"]
                found = re.search(r"<answer>\n(.*)\n</answer>", prompt, re.S)
                answer = found.group(1) if found else ""
                with outer.lock:
                    outer.requests[model] += 1
                score = verdict_for(model, answer)
                content = json.dumps({"score": score, "reasoning": f"{model} read it"})
                data = json.dumps(
                    {
                        "id": "x",
                        "model": model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # Polled every 20 ms (not 0.5 s) for the stop `shutdown()` waits for.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    def __enter__(self) -> JudgeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

"""The HTTP stack the providers stand on (aiohttp's sockets on asyncio, httpx2's under trio),
probed as the issue that replaced the hand-written client probed it: happy eyeballs,
framing, duplicate headers, secrets before the wire, event loops, uvloop."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from tui_eval import Agent, Case, contains, evaluate
from tui_eval.agents.messages import Message
from tui_eval.agents.providers import ProviderError
from tui_eval.agents.providers.anthropic import AnthropicProvider
from tui_eval.agents.providers.openai import OpenAIProvider

from .wire_server import Reply, WireServer, anthropic_text, openai_text

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    if request.param == "trio":
        pytest.importorskip("trio")
    return str(request.param)


async def ask(provider: Any) -> str | None:
    completion = await provider.complete([Message("user", "hi")], [])
    await provider.aclose()
    return completion.content


class RawServer:
    """A server on 127.0.0.1 (a thread, so it serves asyncio and trio tests alike) that
    answers each request with the next of `answers`, raw, and records what it saw and
    whether the client then dropped the connection."""

    def __init__(self, *answers: bytes, host: str = "127.0.0.1", port: int = 0) -> None:
        self.answers = list(answers)
        self.heads: list[bytes] = []
        self.dropped = threading.Event()
        self.sock = socket.create_server((host, port))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(10)  # a stuck guard, not a wait
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            buffer = b""
            for answer in self.answers:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        self.dropped.set()
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.heads.append(head)
                conn.sendall(answer)
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass
            self.dropped.set()

    def close(self) -> None:
        self.sock.close()


def http_answer(head: list[str], body: bytes) -> bytes:
    return ("\r\n".join(["HTTP/1.1 200 OK", *head]) + "\r\n\r\n").encode() + body


async def test_conflicting_framing_is_refused_and_the_connection_dropped(anyio_backend):
    body = json.dumps(openai_text("smuggled")).encode()
    answer = http_answer(
        [
            "Content-Type: application/json",
            "Transfer-Encoding: chunked,",
            f"Content-Length: {len(body)}",
        ],
        body,
    )
    server = RawServer(answer, answer)
    provider = OpenAIProvider("m", base_url=server.url + "/v1", max_retries=0)
    try:
        with pytest.raises(ProviderError):
            await ask(provider)
        assert server.dropped.wait(10)
    finally:
        server.close()


async def test_a_transfer_coding_other_than_chunked_never_reaches_the_json_parser(anyio_backend):
    import gzip

    data = gzip.compress(json.dumps(openai_text("zipped")).encode())
    chunked = f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n"
    server = RawServer(
        http_answer(["Content-Type: application/json", "Transfer-Encoding: gzip, chunked"], chunked)
    )
    provider = OpenAIProvider("m", base_url=server.url + "/v1", max_retries=0)
    try:
        with pytest.raises(ProviderError, match="Transfer-Encoding"):
            await ask(provider)
    finally:
        server.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"OpenAI-Project": "p1", "User-Agent": "mine"},
        # In another letter case than the client's own: under trio (httpx2 keeps both) the
        # request carried two User-Agents and two Authorization headers with different keys.
        {"user-agent": "mine", "authorization": "Bearer sk-from-header"},
    ],
    ids=["same case", "other case"],
)
async def test_no_header_is_sent_twice(anyio_backend, headers):
    body = json.dumps(openai_text("ok")).encode()
    server = RawServer(
        http_answer(["Content-Type: application/json", f"Content-Length: {len(body)}"], body)
    )
    provider = OpenAIProvider(
        "m", base_url=server.url + "/v1", api_key="sk-key-0123456789", headers=headers
    )
    try:
        assert await ask(provider) == "ok"
    finally:
        server.close()
    names = [line.split(b":")[0].lower() for line in server.heads[0].split(b"\r\n")[1:]]
    assert len(names) == len(set(names)), names
    assert b"user-agent: mine" in server.heads[0].lower()


@pytest.mark.parametrize("name", ["Host", "Content-Length", "Transfer-Encoding", "Connection"])
def test_a_header_the_client_sets_itself_cannot_be_given(name):
    with pytest.raises(ValueError, match=f"header '{name}' is set by the HTTP client"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", headers={name: "5"})


KEY = "sk-live-abcdefghijklmnop"


@pytest.mark.parametrize("bad", ["\n", "\r\n", "\0"])
async def test_a_key_with_a_line_break_is_an_error_naming_the_header_never_the_key(
    anyio_backend, bad
):
    with WireServer() as server:
        server.always = Reply(body=openai_text("sent"))
        provider = OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY + bad)
        report = await evaluate(Agent(provider), [Case("hi")])
        anthropic = AnthropicProvider("c", base_url=server.url, api_key=KEY + bad)
        with pytest.raises(ProviderError) as caught:
            await ask(anthropic)
    error = report.samples[0].error or ""
    assert "'Authorization'" in error and "before anything was sent" in error
    assert "'x-api-key'" in str(caught.value)
    assert KEY not in error and KEY not in str(caught.value) and "sk-live" not in error
    assert KEY not in report.model_dump_json() if hasattr(report, "model_dump_json") else True
    assert server.requests == []  # nothing was sent, and nothing retried


async def test_the_black_hole_first_address_is_answered_by_the_second(anyio_backend, monkeypatch):
    """The host's first address never answers a SYN (a listen queue kept full on
    127.0.0.2); the second (127.0.0.1, same port) answers: happy eyeballs."""
    with WireServer() as server:
        server.always = Reply(body=openai_text("via the second address"))
        port = int(server.url.rsplit(":", 1)[1])
        hole = socket.socket()
        try:
            hole.bind(("127.0.0.2", port))
        except OSError:
            pytest.skip("127.0.0.2 is not a loopback address here")
        hole.listen(0)
        fillers = []
        for _ in range(8):  # fill the accept queue: later SYNs are dropped, never refused
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.2", port))
            fillers.append(filler)
        real = socket.getaddrinfo

        def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host in ("black-hole.test", b"black-hole.test"):
                return [
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", port)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
                ]
            return real(host, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", resolve)
        provider = OpenAIProvider("m", base_url=f"http://black-hole.test:{port}/v1")
        started = time.monotonic()
        try:
            with anyio.fail_after(30):  # a stuck guard: without happy eyeballs, ~2 minutes
                assert await ask(provider) == "via the second address"
        finally:
            hole.close()
            for filler in fillers:
                filler.close()
        elapsed = time.monotonic() - started
    assert elapsed < 5, elapsed  # 0.25-0.3 s here: the second attempt starts at 250 ms


def test_a_provider_works_in_one_event_loop_after_another():
    def one_run() -> str | None:
        return asyncio.run(provider.complete([Message("user", "hi")], [])).content

    with WireServer() as server:
        server.always = Reply(body=openai_text("again"))
        provider = OpenAIProvider("m", base_url=server.url + "/v1")
        assert one_run() == "again"
        assert one_run() == "again"


def run_on(runner: Callable[[Any], Any]) -> str | None:
    with WireServer() as server:
        server.always = Reply(body=openai_text("from uvloop"))

        async def main() -> str | None:
            return await ask(OpenAIProvider("m", base_url=server.url + "/v1"))

        return runner(main)  # type: ignore[no-any-return]


def test_uvloop_works_too():
    """Ray's actors run on uvloop."""
    uvloop = pytest.importorskip("uvloop")
    assert run_on(lambda main: uvloop.run(main())) == "from uvloop"


async def test_anthropic_and_openai_on_either_loop(anyio_backend):
    with WireServer() as server:
        server.reply(Reply(body=openai_text("o")), Reply(body=anthropic_text("a")))
        assert await ask(OpenAIProvider("m", base_url=server.url + "/v1")) == "o"
        assert await ask(AnthropicProvider("c", base_url=server.url, api_key="k")) == "a"


@pytest.mark.parametrize(
    ("header", "says"),
    [
        ("X-Key: sk-abc\r\nInjected: 1", "'X-Key' holds a carriage return"),
        ("Bad Name: sk-abc", "'Bad Name' is not a valid HTTP header name"),
        ("no-colon-sk-abc", "without a colon"),
        ("Content-Length: 5", "'Content-Length' is set by the HTTP client"),
    ],
)
def test_an_invalid_header_flag_is_a_usage_error_that_never_shows_its_value(tmp_path, header, says):
    from pathlib import Path

    from tests.cli_in_process import cli

    suites = Path(__file__).resolve().parents[2] / "suites"
    out = cli("run", "--headless", str(suites / "calculator.py"), "--header", header, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert says in out.stderr and "sk-abc" not in out.stderr + out.stdout


@pytest.mark.slow
async def test_a_70_second_answer_passes_on_the_default_deadline_sent_once(anyio_backend):
    """The old 60 s deadline cut it off and retried it four times: billed five times."""
    if anyio_backend == "trio":
        pytest.skip("once is enough for a 70 s wait")
    with WireServer() as server:
        server.reply(Reply(body=openai_text("worth the wait"), delay=70))
        server.always = Reply(body=openai_text("a second request"))
        report = await evaluate(
            Agent(OpenAIProvider("m", base_url=server.url + "/v1")), [Case("hi")]
        )
    assert report.samples[0].output == "worth the wait"
    assert len(server.requests) == 1


@pytest.mark.parametrize("how", ["base_url", "spec"])
async def test_an_azure_classic_deployment_gets_its_url_and_api_key_header(monkeypatch, how):
    from tui_eval.agents.providers import resolve_model

    with WireServer() as server:
        server.reply(Reply(body=openai_text("from azure")))
        base = f"{server.url}/openai/deployments/gpt4o?api-version=2024-10-21"
        if how == "spec":
            monkeypatch.setenv("OPENAI_API_KEY", "azure-key-0123456789")
            provider = resolve_model(f"openai-compatible:gpt-4o@{base}")
        else:
            provider = OpenAIProvider("gpt-4o", base_url=base, api_key="azure-key-0123456789")
        assert await ask(provider) == "from azure"
    (request,) = server.requests
    assert request.path == "/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"
    assert request.headers["api-key"] == "azure-key-0123456789"
    assert "Authorization" not in request.headers


async def test_a_one_letter_dummy_key_is_not_redacted_inside_every_word():
    with WireServer() as server:
        server.reply(Reply(400, {"error": {"message": "max_tokens exceeds the context"}}))
        provider = OpenAIProvider("m", base_url=server.url + "/v1", api_key="x")
        with pytest.raises(ProviderError) as caught:
            await ask(provider)
    assert "max_tokens exceeds the context" in str(caught.value)


class FlakyServer:
    """An OpenAI-compatible server on raw sockets that breaks connections as servers do:
    `cut_first` cuts the first answer's body off halfway and resets its connection;
    `one_per_connection` answers one request per connection and meets the next on it by
    closing it (a kept-alive connection the server had closed)."""

    def __init__(self, *, cut_first: bool = False, one_per_connection: bool = False) -> None:
        self.cut = cut_first
        self.one_per_connection = one_per_connection
        self.requests = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        import struct

        conn.settimeout(10)  # a stuck guard, not a wait
        buffer, served = b"", 0
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.requests += 1
                if self.one_per_connection and served:
                    return  # closed, the request unanswered
                body = json.dumps({**openai_text("fine"), "model": "gpt-4o-mini"}).encode()
                answer = http_answer(
                    ["Content-Type: application/json", f"Content-Length: {len(body)}"], body
                )
                if self.cut:
                    self.cut = False
                    conn.sendall(answer[: len(answer) - len(body) // 2])
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return  # reset mid-body
                conn.sendall(answer)
                served += 1


@pytest.mark.parametrize("break_how", ["reset mid-body", "kept-alive connection closed"])
async def test_connections_the_server_breaks_are_retried_and_billed_once(anyio_backend, break_how):
    server = FlakyServer(
        cut_first=break_how == "reset mid-body",
        one_per_connection=break_how == "kept-alive connection closed",
    )
    agent = Agent(OpenAIProvider("gpt-4o-mini", base_url=server.url + "/v1", api_key="k"))
    cases = [Case(f"q{i}", checks=[contains("fine")], name=f"c{i}") for i in range(3)]
    report = await evaluate(agent, cases, concurrency=1)
    server.sock.close()
    assert all(s.passed for s in report.samples), [s.error for s in report.samples]
    assert server.requests > 3  # a request went twice...
    costs = {s.cost for s in report.samples}
    assert len(costs) == 1 and next(iter(costs)) > 0  # ...and each sample was billed once


EVENTS = (
    b'data: {"id":"1","model":"gpt-4o-mini","choices":[{"delta":{"content":"hi"}}]}\n\n'
    b'data: {"id":"1","model":"gpt-4o-mini","choices":[],'
    b'"usage":{"prompt_tokens":10,"completion_tokens":5}}\n\n'
    b"data: [DONE]\n\n"
)


@pytest.mark.parametrize("encoding", ["plain", "gzip"])
async def test_an_event_stream_is_metered_and_cached_whatever_its_encoding(encoding):
    """A compressed stream is decoded in the wire layer; the layers above it still see a
    stream, so its usage is counted, its tokens settled and it is cached."""
    import gzip

    from tui_eval import http_client

    body = gzip.compress(EVENTS) if encoding == "gzip" else EVENTS
    headers = {"Content-Type": "text/event-stream"}
    if encoding == "gzip":
        headers["Content-Encoding"] = "gzip"
    with WireServer() as server:
        server.always = Reply(body=body, headers=headers)

        async def agent(prompt: str) -> str:
            payload = {"model": "gpt-4o-mini", "stream": True, "messages": [prompt]}
            async with http_client() as client:
                url = server.url + "/v1/chat/completions"
                async with client.stream("POST", url, json=payload) as response:
                    return (await response.aread()).decode()

        first = await evaluate(agent, [Case("q", [contains("hi")])], cache=True)
        sent = len(server.requests)
        again = await evaluate(agent, [Case("q", [contains("hi")])], cache=True)
    (sample,) = first.samples
    assert sample.passed and sample.usage.total_tokens == 15, sample.error
    assert sent == 1 and again.samples[0].cached and len(server.requests) == 1

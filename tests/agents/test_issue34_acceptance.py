"""Acceptance probes of issue 34 that the stack's own tests leave out (found by the
acceptance check, verify34). Each fails on 7b9ced0; the docstring says how.

- a header given in another letter case than the client's own was sent twice under trio
  (now a case of `test_http_stack.test_no_header_is_sent_twice`);
- `Transfer-Encoding: chunked` (no trailing comma) beside a `Content-Length` is answered
  under trio and its connection reused (h11 frames by the chunks, as RFC 9112 allows, but
  tui-eval promises to refuse a response framed two ways and drop its connection);
- a key holding a line break, sent by an SDK through `http_client()`, is recorded as the
  SDK's "Connection error." (retried by the SDK): the header is named nowhere;
- the response cache under trio needs trio >= 0.32 (anyio's worker threads), while the
  dev extra allows trio 0.22: every cached sample fails with a TypeError there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tui_eval import Agent, Case, evaluate, http_client
from tui_eval.agents.providers import ProviderError
from tui_eval.agents.providers.openai import OpenAIProvider

from .test_http_stack import RawServer, http_answer
from .wire_server import Reply, WireServer, openai_text

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    if request.param == "trio":
        pytest.importorskip("trio")
    return str(request.param)


def plain_answer(text: str) -> bytes:
    body = json.dumps(openai_text(text)).encode()
    return http_answer(["Content-Type: application/json", f"Content-Length: {len(body)}"], body)


async def test_chunked_beside_a_content_length_is_refused_and_the_connection_dropped(
    anyio_backend,
):
    """The issue's probe has `chunked,` (refused on both loops); plain `chunked` beside a
    `Content-Length` was answered under trio, both requests on one connection. (With the
    body framed by the length instead, trio waits for a chunk size until the deadline:
    600 s by default, then retried.)"""
    body = json.dumps(openai_text("smuggled")).encode()
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    answer = http_answer(
        [
            "Content-Type: application/json",
            "Transfer-Encoding: chunked",
            f"Content-Length: {len(body)}",
        ],
        chunked,
    )
    server = RawServer(answer, answer)
    provider = OpenAIProvider("m", base_url=server.url + "/v1", max_retries=0, timeout=10)
    try:
        with pytest.raises(ProviderError):
            await provider.complete(*_question())
        assert server.dropped.wait(10)
    finally:
        await provider.aclose()
        server.close()


def _question() -> tuple[list[Any], list[Any]]:
    from tui_eval.agents.messages import Message

    return [Message("user", "hi")], []


KEY = "sk-live-abcdefghijklmnop"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # trio: see the last test
async def test_a_key_with_a_line_break_through_http_client_is_named_in_the_sample(anyio_backend):
    """Item 4 for SDKs given `http_client()`: the sample's error read
    'APIConnectionError: Connection error.' (after the SDK's two retries), naming no
    header; now it names the header, from tui-eval's error the SDK wrapped."""
    openai = pytest.importorskip("openai")
    with WireServer() as server:
        server.always = Reply(body=openai_text("sent"))

        async def agent(prompt: str) -> str:
            client = openai.AsyncOpenAI(
                base_url=server.url + "/v1", api_key=KEY + "\n", http_client=http_client()
            )
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
            )
            return str(reply.choices[0].message.content)

        report = await evaluate(agent, [Case("hi")])
    record = report.to_json().decode()
    assert server.requests == []
    error = report.samples[0].error or ""
    assert error.startswith("APIConnectionError: Connection error. (caused by InvalidHeader:")
    assert "header 'authorization' holds a line break" in error and "'authorization'" in record
    assert "sk-live" not in record


def test_the_response_cache_works_under_trio():
    """With the dev extra's trio 0.22 (anyio 4.16 needs trio >= 0.32 for worker threads)
    every sample failed: "to_thread_run_sync() got an unexpected keyword argument
    'abandon_on_cancel'"."""
    pytest.importorskip("trio")
    import anyio

    async def run() -> Any:
        with WireServer() as server:
            server.always = Reply(body=openai_text("x"))
            agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1"))
            return await evaluate(agent, [Case("hi")], cache=True)

    report = anyio.run(run, backend="trio")
    assert report.samples[0].error is None, report.samples[0].error


def test_options_keep_one_header_per_name_whatever_its_case():
    from tui_eval.agents.http.options import ProviderOptions

    given = ProviderOptions(headers={"X-Team": "a", "x-team": "b"})
    assert given.headers == {"x-team": "b"}
    over = ProviderOptions(headers={"Authorization": "Bearer one"}).over(
        ProviderOptions(headers={"authorization": "Bearer two"})
    )
    assert over.headers == {"authorization": "Bearer two"}

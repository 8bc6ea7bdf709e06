"""The providers' connection stack: asyncio sockets under httpcore2, TLS, trio, reuse."""

from __future__ import annotations

import asyncio
import ssl

import anyio
import pytest

from tui_eval.agents.providers import connections
from tui_eval.agents.providers.connections import ConnectionPool

from .wire_server import Reply, WireServer, openai_text

pytestmark = pytest.mark.anyio

HEADERS = [(b"Content-Type", b"application/json")]


async def post(pool: ConnectionPool, url: str, max_bytes: int = 10**8) -> tuple[int, bytes]:
    status, _, body = await pool.post(url, b"{}", HEADERS, 5, max_bytes)
    return status, body


async def test_https_goes_through_the_asyncio_sockets(tmp_path, monkeypatch):
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # how a user trusts a private CA
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    with WireServer() as server:
        server.httpd.socket = server_context.wrap_socket(server.httpd.socket, server_side=True)
        server.reply(Reply(body=openai_text("over TLS")))
        url = server.url.replace("http://", "https://") + "/v1/chat/completions"
        pool = ConnectionPool(url)
        status, body = await post(pool, url)
        await pool.aclose()
    assert status == 200 and b"over TLS" in body
    assert server.requests[0].path == "/v1/chat/completions"


async def test_a_body_larger_than_the_read_ahead_arrives_whole(monkeypatch):
    monkeypatch.setattr(connections, "READ_AHEAD", 1000)  # reading pauses and resumes
    text = "y" * 3_000_000
    with WireServer() as server:
        server.reply(Reply(body=openai_text(text)), Reply(body=openai_text(text), chunked=True))
        pool = ConnectionPool(server.url)
        for _ in range(2):
            status, body = await post(pool, server.url + "/v1/chat/completions")
            assert status == 200 and text.encode() in body
        await pool.aclose()


async def test_a_connection_the_server_closed_while_idle_is_not_reused():
    """The server answers, keeps the connection alive, then drops it; the next request
    must open a new connection instead of failing on the dead one."""
    handled = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal handled
        await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(2)
        handled += 1
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1/x"
    pool = ConnectionPool(url)
    assert await post(pool, url) == (200, b"ok")
    await asyncio.sleep(0.2)
    assert await post(pool, url) == (200, b"ok")
    assert pool.opened == 2 and handled == 2
    await pool.aclose()
    server.close()


def one_request_on(run_loop, text: str) -> tuple[int, bytes]:
    """One request through a fresh pool, on the event loop `run_loop(main)` starts."""

    async def main() -> tuple[int, bytes]:
        pool = ConnectionPool(server.url)
        try:
            return await post(pool, server.url + "/v1/chat/completions")
        finally:
            await pool.aclose()

    with WireServer() as server:
        server.reply(Reply(body=openai_text(text)))
        return run_loop(main)


def test_other_event_loops_keep_httpcore2s_own_sockets():
    status, body = one_request_on(lambda main: anyio.run(main, backend="trio"), "from trio")
    assert status == 200 and b"from trio" in body


def test_uvloop_transports_work_too():
    """Ray's actors run on uvloop, whose transports are not asyncio.Transport subclasses."""
    uvloop = pytest.importorskip("uvloop")
    status, body = one_request_on(lambda main: uvloop.run(main()), "from uvloop")
    assert status == 200 and b"from uvloop" in body

"""The providers' connection stack: asyncio sockets under httpcore2, TLS, trio, reuse."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import tracemalloc

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


async def connections_for_two_posts(answer: bytes) -> int:
    """Post twice to a server that gives `answer` to both, each read as 200 `ok`; how many
    connections the pool opened for them."""
    server, url, _ = await raw_server(answer, answer)
    pool = ConnectionPool(url)
    try:
        assert await post(pool, url) == (200, b"ok")
        assert await post(pool, url) == (200, b"ok")
        return pool.opened
    finally:
        await pool.aclose()
        server.close()


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


async def raw_server(*answers: bytes):
    """A server that answers its Nth request on a connection with `answers[N]` as raw bytes
    (then closes the connection once the answers run out), and records every request."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for answer in answers:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            seen.append(head + await reader.readexactly(length))
            writer.write(answer)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/x", seen


async def test_chunked_bodies_with_extensions_and_trailers_then_keep_alive():
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    plain = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-Id: 7\r\n\r\nok"
    server, url, seen = await raw_server(chunked, plain)
    pool = ConnectionPool(url)
    assert await post(pool, url) == (200, b"abcde")
    status, headers, body = await pool.post(url, b"{}", HEADERS, 5, 100)
    assert (status, body) == (201, b"ok") and (b"X-Id", b"7") in headers
    assert pool.opened == 1 and len(seen) == 2  # one connection carried both
    assert seen[0].startswith(b"POST /v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    await pool.aclose()
    server.close()


async def test_interim_responses_are_skipped_and_connection_close_is_honoured():
    answer = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    )
    # The server said it would close: not reused.
    assert await connections_for_two_posts(answer) == 2


async def test_a_body_without_length_is_read_to_the_end_of_the_connection():
    server, url, _ = await raw_server(b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
    pool = ConnectionPool(url)
    assert await post(pool, url) == (200, b"until the end")
    await pool.aclose()
    server.close()


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.1 response"),
        (b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n", "malformed response header"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", "malformed Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "closed the connection"),
        (b"HTTP/1.1 099 X\r\nContent-Length: 2\r\n\r\nok", "status 99, not HTTP"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok", "Transfer-Encoding"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"
            b"\r\n2\r\nok\r\n0\r\n\r\n",
            "Transfer-Encoding b'identity'",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok", "conflicting Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", "conflicting"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: " + b"0" * 4999 + b"2\r\n\r\nok", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok", "bare CR"),
    ],
)
async def test_answers_that_are_not_http_are_transport_errors(answer, error):
    server, url, _ = await raw_server(answer)
    pool = ConnectionPool(url)
    with pytest.raises(connections.TransportError, match=error):
        await post(pool, url)
    await pool.aclose()
    server.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",  # refused before reading it
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"40\r\n" + b"x" * 64 + b"\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 200,
    ],
)
async def test_every_framing_stops_at_the_size_limit(answer):
    server, url, _ = await raw_server(answer)
    pool = ConnectionPool(url)
    with pytest.raises(connections.ResponseTooLarge):
        await post(pool, url, max_bytes=50)
    await pool.aclose()
    server.close()


async def test_a_server_that_never_answers_times_out_and_the_connection_is_dropped():
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        await asyncio.sleep(5)  # never answers (the test ends long before)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/x"
    pool = ConnectionPool(url)
    with pytest.raises(TimeoutError):
        await pool.post(url, b"{}", HEADERS, 0.2, 100)
    assert pool._idle == []
    await pool.aclose()
    server.close()


async def test_a_header_value_with_a_line_break_is_refused_before_sending():
    server, url, seen = await raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    pool = ConnectionPool(url)
    with pytest.raises(ValueError, match="line break"):
        await pool.post(url, b"{}", [(b"X-Tenant", b"a\r\nX-Injected: 1")], 5, 100)
    assert seen == []
    await pool.aclose()
    server.close()


def test_a_pool_used_again_under_a_new_event_loop_opens_a_new_connection():
    """`asyncio.run()` twice with one provider: the first loop's connections died with it."""
    with WireServer() as server:
        keep = {"Connection": "keep-alive"}
        server.reply(Reply(body=openai_text("one"), headers=keep), Reply(body=openai_text("two")))
        pool = ConnectionPool(server.url)
        url = server.url + "/v1/chat/completions"
        assert b"one" in asyncio.run(post(pool, url))[1]
        assert b"two" in asyncio.run(post(pool, url))[1]
        assert pool.opened == 2
        asyncio.run(pool.aclose())


@pytest.mark.parametrize(
    ("answer", "header"),
    [
        (b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: 1\n\nok", b"1"),  # bare LF (RFC 9112, 2.2)
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\nX-A: 1\r\n\nok", b"1"),  # mixed
        (b"HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\nContent-Length: 2\r\n\r\nok", b"a b"),  # obs-fold
        (b"HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 2, 2\r\n\r\nok", b"1"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nok", b"1"),
    ],
)
async def test_answers_h11_accepted_are_accepted(answer, header):
    server, url, _ = await raw_server(answer, answer)
    pool = ConnectionPool(url)
    for _ in range(2):
        status, headers, body = await pool.post(url, b"{}", HEADERS, 5, 100)
        assert (status, body) == (200, b"ok") and (b"X-A", header) in headers
    assert pool.opened == 1
    await pool.aclose()
    server.close()


async def test_chunked_with_a_content_length_is_read_chunked_and_the_connection_not_kept():
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nok\r\n0\r\n\r\n"
    )
    # A response framed two ways may be smuggling: not reused.
    assert await connections_for_two_posts(answer) == 2


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"HTTP/1.1 099 X\r\nContent-Length: 2\r\n\r\nok", "status 99"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok", "Transfer-Encoding"),
    ],
)
async def test_a_refused_answer_fails_at_once_on_a_server_that_keeps_the_connection(answer, error):
    """These were an interim status and a read-to-close body: both waited for the timeout."""
    done = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await done.wait()  # keeps the connection open until the client gave up
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/x"
    pool = ConnectionPool(url)
    with pytest.raises(connections.TransportError, match=error):
        await pool.post(url, b"{}", HEADERS, 30, 100)
    done.set()
    await pool.aclose()
    server.close()


async def test_tiny_chunks_cost_memory_like_the_body_not_per_chunk():
    """50,000 one-byte chunks: an object per chunk took ~40 bytes each (2 MB)."""
    chunks = 50_000
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"1\r\nx\r\n" * chunks
        + b"0\r\n\r\n"
    )
    server, url, _ = await raw_server(answer)
    pool = ConnectionPool(url)
    tracemalloc.start()
    try:
        status, _, body = await pool.post(url, b"{}", HEADERS, 60, 10**8)  # traced: slower
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert status == 200 and body == b"x" * chunks
    assert peak < len(answer) * 2, peak  # the answer as it arrives and the body: no more
    await pool.aclose()
    pool = ConnectionPool(url)
    with pytest.raises(connections.ResponseTooLarge):  # the cap counts the running total
        await post(pool, url, max_bytes=chunks - 1)
    await pool.aclose()
    server.close()


def tls_server(tmp_path, monkeypatch, close_notify: bool) -> int:
    """A TLS server on a thread: one read-to-close answer, then a TCP close with or
    without TLS's close_notify. Returns its port."""
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with listener:
            raw, _ = listener.accept()
            tls = context.wrap_socket(raw, server_side=True)
            data = b""
            while b"\r\n\r\n" not in data:
                data += tls.recv(65536)
            tls.sendall(b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"cut": "he')
            plain = tls.unwrap() if close_notify else socket.socket(fileno=tls.detach())
            plain.shutdown(socket.SHUT_RDWR)
            plain.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(listener.getsockname()[1])


@pytest.mark.parametrize("close_notify", [True, False])
async def test_a_tls_body_read_to_the_close_needs_close_notify(tmp_path, monkeypatch, close_notify):
    """Without close_notify the end of the body may be an attacker's forged TCP close."""
    url = f"https://127.0.0.1:{tls_server(tmp_path, monkeypatch, close_notify)}/v1/x"
    pool = ConnectionPool(url)
    if close_notify:
        assert await post(pool, url) == (200, b'{"cut": "he')
    else:
        with pytest.raises(connections.TransportError, match="without close_notify"):
            await post(pool, url)
    await pool.aclose()


@pytest.mark.parametrize("close_notify", [True, False])
def test_under_uvloop_too_a_tls_body_read_to_the_close_needs_close_notify(
    tmp_path, monkeypatch, close_notify
):
    """uvloop tells a TCP close without close_notify by connection_lost alone."""
    uvloop = pytest.importorskip("uvloop")
    test = test_a_tls_body_read_to_the_close_needs_close_notify
    uvloop.run(test(tmp_path, monkeypatch, close_notify))


async def kept_then_dropped(second: bytes):
    """A server that answers a connection's first request and keeps it alive, then meets
    the second with `second` and a close; a new connection starts over. Counts requests."""
    requests = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for answer in (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", second):
            try:
                await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(2)
            except asyncio.IncompleteReadError:
                break
            requests.append(answer)
            writer.write(answer)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/x", requests


async def test_a_kept_connection_closed_as_it_is_reused_is_retried_once_on_a_new_one():
    """The server closed the idle connection just as the request went out: it never
    answered a byte, so the request goes again, on a fresh connection."""
    server, url, requests = await kept_then_dropped(b"")
    pool = ConnectionPool(url)
    assert await post(pool, url) == (200, b"ok")
    assert await post(pool, url) == (200, b"ok")
    assert pool.opened == 2 and len(requests) == 3
    await pool.aclose()
    server.close()


async def test_a_connection_that_answered_part_of_a_response_is_never_retried():
    server, url, requests = await kept_then_dropped(b"HTTP/1.1 200 OK\r\nContent-Le")
    pool = ConnectionPool(url)
    assert await post(pool, url) == (200, b"ok")
    with pytest.raises(connections.TransportError, match="closed the connection"):
        await post(pool, url)
    assert pool.opened == 1 and len(requests) == 2
    await pool.aclose()
    server.close()


async def test_a_request_that_ends_after_aclose_closes_its_connection():
    answer = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await answer.wait()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await reader.read()  # until the client closes
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/x"
    pool = ConnectionPool(url)
    request = asyncio.ensure_future(post(pool, url))
    await asyncio.sleep(0.05)
    await pool.aclose()  # the run ended while the request was in flight
    answer.set()
    assert await request == (200, b"ok")
    assert pool._idle == []
    server.close()

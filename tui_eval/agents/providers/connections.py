"""A small HTTP/1.1 client for JSON APIs: keep-alive connections per origin, reused last-in
first-out, read straight from asyncio transports.

A provider request is one POST of a JSON body and one whole response. httpcore2 + h11 (which
this replaced) spent more CPU on their per-request machinery than a run's agent loop, checks
and report together (bench/README.md, "Side by side with a plain aiohttp client"). Here a
request is one `write()` of head and body, and the response is parsed from the connection's
buffer: status line and headers, then a `Content-Length`, chunked or read-to-close body. One
loop timer per request bounds the whole exchange, however the server drips it.

A connection goes back to the pool only when its response was read to the end, the server
did not ask to close and sent nothing more; an idle one the server closed, or idle longer
than `KEEPALIVE_S`, is dropped; a request that finds its kept connection closed by the
server before a byte of answer goes once more, on a new one. HTTPS trusts
`proxies.ssl_context()` (the system store, or `SSL_CERT_FILE`); proxies come from the
environment (`proxies.proxy_for`): `CONNECT` tunnels for https, absolute-form targets for
http. Under trio, httpcore2's connections are used (`trio_connections.py`). Content
encodings and redirects are the provider's (`http.py`). Message syntax: `wire_format.py`.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from typing import TYPE_CHECKING, cast
from urllib.parse import quote, urlsplit

import sniffio

from tui_eval.agents.providers.proxies import Headers, Origin, Proxy, proxy_for, ssl_context
from tui_eval.agents.providers.wire_errors import ResponseTooLarge, TransportError
from tui_eval.agents.providers.wire_format import (
    HEAD_END,
    Head,
    header_block,
    header_map,
    parse_head,
    without_close_notify,
)

if TYPE_CHECKING:
    from tui_eval.agents.providers.trio_connections import TrioConnections

__all__ = [
    "ConnectionPool",
    "Headers",
    "Origin",
    "Proxy",
    "ResponseTooLarge",
    "TransportError",
    "header_map",
    "proxy_for",
    "ssl_context",
]

READ_AHEAD = 1 << 20
"""Bytes a connection buffers before it stops reading from the socket."""
KEEPALIVE_S = 30.0
"""An idle connection older than this is closed rather than reused."""
MAX_HEAD_BYTES = 1 << 16
"""The longest response head (status line and headers) or chunk-size line accepted."""
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
_NO_BODY = frozenset({204, 304})


class ConnectionPool:
    """Idle connections to the origin of `base_url`.

    Example:
        >>> pool = ConnectionPool("http://127.0.0.1:8000/v1")
        >>> status, headers, body = await pool.post(url, b"{}", headers, 30, 1e6)  # doctest: +SKIP

    Raises:
        ValueError: `base_url` is not http(s), or a proxy variable names a proxy tui-eval
            cannot use.
    """

    def __init__(self, base_url: str) -> None:
        self.origin = Origin.of(base_url)
        if self.origin.scheme not in (b"http", b"https") or not self.origin.host:
            raise ValueError(f"base_url {base_url!r} is not an http:// or https:// URL")
        self.host_header = urlsplit(base_url).netloc.rpartition("@")[2].encode()
        self.proxy = proxy_for(base_url)
        """The proxy requests go through (from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`), or None."""
        self._idle: list[_Connection] = []
        self._targets: dict[str, bytes] = {}
        self._header_blocks: dict[int, tuple[Headers, bytes]] = {}
        self._ssl: ssl.SSLContext | None = None
        self._trio: TrioConnections | None = None
        self.opened = 0
        """How many connections this pool has opened (the benchmarks report it)."""
        self._generation = 0  # aclose() counts up: a request in flight then keeps nothing

    async def post(
        self, url: str, body: bytes, headers: Headers, timeout: float, max_bytes: int
    ) -> tuple[int, Headers, bytes]:
        """POST `body` to `url`: the status, headers and body (at most `max_bytes` of it).

        Raises:
            ResponseTooLarge: the body is longer than `max_bytes`.
            TimeoutError: no whole response within `timeout` seconds.
            TransportError: the connection failed or the server broke HTTP/1.1.
        """
        if self.origin.scheme == b"https" and self._ssl is None:
            self._ssl = ssl_context()
        if sniffio.current_async_library() != "asyncio":
            return await self._post_elsewhere(url, body, headers, timeout, max_bytes)
        loop = asyncio.get_running_loop()
        head = self._head(url, len(body), headers)
        now = loop.time()
        deadline = now + timeout
        generation = self._generation
        connection = self._reused(loop, now)
        while True:
            fresh = connection is None
            if connection is None:
                connection = await self._open(loop, deadline - loop.time())
            timer = loop.call_at(deadline, connection.expire)
            reusable = False
            try:
                status, response_headers, data, reusable = await connection.exchange(
                    head, body, max_bytes
                )
                return status, response_headers, data
            except TransportError:
                # A kept connection the server closed as the request went out (not a byte
                # of answer came): the request goes once more, on a new connection.
                if fresh or connection.answered:
                    raise
            finally:
                timer.cancel()
                if reusable and generation == self._generation:  # not closed meanwhile
                    connection.idle_since = loop.time()
                    self._idle.append(connection)
                else:
                    connection.close()
            connection = None

    def _head(self, url: str, length: int, headers: Headers) -> bytes:
        target = self._targets.get(url)
        if target is None:
            target = self._targets[url] = self._target(url)
        cached = self._header_blocks.get(id(headers))
        if cached is None or cached[0] is not headers:
            block = header_block(headers)
            if self.proxy is not None and self._forwarded():
                block += header_block(self.proxy.headers)  # the proxy reads the request
            cached = self._header_blocks[id(headers)] = (headers, block)
        return b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n%s\r\n" % (
            target,
            self.host_header,
            length,
            cached[1],
        )

    def _forwarded(self) -> bool:
        """Whether requests go to a proxy as they are (plain http), not through a tunnel."""
        return self.proxy is not None and self.origin.scheme == b"http"

    def _target(self, url: str) -> bytes:
        parts = urlsplit(url)
        target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        if parts.query:
            target += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
        if self._forwarded():  # absolute-form: the proxy needs to know where it goes
            target = f"{self.origin.scheme.decode()}://{self.host_header.decode()}{target}"
        return target.encode("ascii")

    def _reused(self, loop: asyncio.AbstractEventLoop, now: float) -> _Connection | None:
        idle = self._idle
        while idle:
            connection = idle.pop()
            if connection.loop is loop and connection.reusable(now):
                return connection
            connection.close()
        return None

    async def _open(self, loop: asyncio.AbstractEventLoop, timeout: float) -> _Connection:
        self.opened += 1
        origin, proxy = self.origin, self.proxy
        where = origin.authority()
        if proxy is not None:
            where = f"{where} through the proxy {proxy.url}"
        try:
            return await asyncio.wait_for(self._connect(loop), timeout)
        except TimeoutError:
            raise TimeoutError(f"connecting to {where} timed out") from None
        except (OSError, TransportError) as exc:  # refused, DNS, TLS (an OSError), CONNECT
            raise TransportError(f"connecting to {where} failed: {exc}") from exc

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        origin, proxy = self.origin, self.proxy
        host = origin.host.decode()
        if proxy is None:
            _, connection = await loop.create_connection(
                _Connection,
                host,
                origin.port,
                ssl=self._ssl,
                server_hostname=host if self._ssl is not None else None,
            )
            return connection
        proxy_host = proxy.origin.host.decode()
        _, connection = await loop.create_connection(
            _Connection,
            proxy_host,
            proxy.origin.port,
            ssl=proxy.ssl,
            server_hostname=proxy_host if proxy.ssl is not None else None,
        )
        if self._ssl is None:
            return connection  # plain http: forwarded, the target names the origin
        try:
            await connection.tunnel(origin.authority().encode(), proxy.headers)
            transport = connection.transport
            assert transport is not None
            tls = await loop.start_tls(transport, connection, self._ssl, server_hostname=host)
            if tls is None:
                raise TransportError(f"the TLS handshake with {host} through the proxy failed")
        except BaseException:
            connection.close()
            raise
        connection.transport = tls
        return connection

    async def _post_elsewhere(
        self, url: str, body: bytes, headers: Headers, timeout: float, max_bytes: int
    ) -> tuple[int, Headers, bytes]:
        if self._trio is None:
            from tui_eval.agents.providers.trio_connections import TrioConnections

            self._trio = TrioConnections(self.origin, self.proxy, self._ssl)
        wire = [(b"Host", self.host_header), (b"Content-Length", b"%d" % len(body)), *headers]
        status, response_headers, data, opened = await self._trio.post(
            url, body, wire, timeout, max_bytes
        )
        self.opened += opened
        return status, response_headers, data

    async def aclose(self) -> None:
        """Close every idle connection, and each busy one as its request ends."""
        self._generation += 1
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
        if self._trio is not None:
            await self._trio.aclose()


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: its transport, what arrived, and the request waiting for more."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()  # a second asyncio.run() cannot use it
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.cut = False  # the stream ended without TLS's close_notify: a body may be cut
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False
        self.expired = False
        self.answered = False  # a byte of the current request's answer came
        self.idle_since = 0.0

    # -- the protocol: called by the event loop ------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports (Ray's actors run on uvloop) are not asyncio.Transport
        # subclasses, but have its methods. Called again with the TLS transport after
        # `start_tls` through a proxy.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.answered = True
        if len(self.buffer) > READ_AHEAD and not self.paused and self.transport is not None:
            self.transport.pause_reading()
            self.paused = True
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        if self.transport is not None:
            self.cut = without_close_notify(self.transport.get_extra_info("ssl_object"))
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.eof and self.transport is not None:  # uvloop: TLS cut without eof_received
            self.cut = self.transport.get_extra_info("ssl_object") is not None
        self.eof = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def expire(self) -> None:
        """The request's deadline passed: whatever it waits for, it waits no longer."""
        self.expired = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(TimeoutError("no whole response in time"))

    # -- the client --------------------------------------------------------------------------
    def reusable(self, now: float) -> bool:
        """Whether this idle connection can carry another request."""
        transport = self.transport
        return (
            not self.eof
            and not self.buffer
            and transport is not None
            and not transport.is_closing()
            and now - self.idle_since < KEEPALIVE_S
        )

    def close(self) -> None:
        if self.transport is not None and not self.loop.is_closed():
            self.transport.close()  # (a closed loop cannot: the socket goes with its transport)

    async def _more(self) -> None:
        """Wait for more bytes. Raises at the end of the stream or past the deadline."""
        if self.eof:
            if self.error is not None:
                raise TransportError(f"the connection broke: {self.error}") from self.error
            raise TransportError("the server closed the connection before the response ended")
        if self.expired:
            raise TimeoutError("no whole response in time")
        if self.paused and len(self.buffer) <= READ_AHEAD and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self.waiter = None

    async def tunnel(self, authority: bytes, headers: Headers) -> None:
        """Ask the proxy for a tunnel to `authority` (`host:port`) with `CONNECT`."""
        assert self.transport is not None
        self.transport.write(
            b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n"
            % (authority, authority, header_block(headers))
        )
        status, _, _, _, _ = await self._head()
        if not 200 <= status < 300:
            raise TransportError(
                f"the proxy answered HTTP {status} to CONNECT {authority.decode()}"
            )
        if self.buffer:
            raise TransportError("the proxy sent data before the TLS handshake")

    async def exchange(
        self, head: bytes, body: bytes, max_bytes: int
    ) -> tuple[int, Headers, bytes, bool]:
        """Send one request and read its response: status, headers, body, and whether the
        connection can carry another request."""
        transport = self.transport
        self.expired = self.answered = False
        if transport is None or transport.is_closing():
            raise TransportError("the connection was closed before the request was sent")
        transport.write(head + body)  # one segment: a second send costs as much as a parse
        while True:
            status, headers, length, chunked, keep_alive = await self._head()
            if status >= 200:
                break
            if status < 100:
                raise TransportError(f"the server answered with status {status}, not HTTP")
            if status == 101:
                raise TransportError("the server switched protocols (HTTP 101)")
        if status in _NO_BODY:
            data = b""
        elif chunked:
            data = await self._chunked(max_bytes)
        elif length is not None:
            if length > max_bytes:
                raise ResponseTooLarge
            data = await self._exactly(length)
        else:
            data = await self._to_the_end(max_bytes)
            keep_alive = False
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return status, headers, data, keep_alive and not self.buffer

    async def _head(self) -> Head:
        """The next response head: status, headers, Content-Length, whether the body is
        chunked, and whether the server keeps the connection open."""
        buffer = self.buffer
        found = HEAD_END.search(buffer)
        while found is None:
            if len(buffer) > MAX_HEAD_BYTES:
                raise TransportError(f"the response head is over {MAX_HEAD_BYTES} bytes")
            await self._more()
            found = HEAD_END.search(buffer)
        end = found.start()
        head = bytes(buffer[: end - 1 if end and buffer[end - 1] == 13 else end])  # no CR
        del buffer[: found.end()]
        return parse_head(head)

    async def _exactly(self, size: int, into: bytearray | None = None) -> bytes:
        """The next `size` bytes (appended to `into` instead when given)."""
        buffer = self.buffer
        if into is None and len(buffer) >= size:
            data = bytes(buffer[:size])
            del buffer[:size]
            return data
        out = bytearray() if into is None else into
        while True:
            take = min(len(buffer), size)
            if take:
                out += buffer[:take]
                del buffer[:take]
                size -= take
                if not size:
                    return b"" if into is not None else bytes(out)
            await self._more()

    async def _chunked(self, max_bytes: int) -> bytes:
        """A chunked body, parsed where it lies in the buffer: one copy of the data in one
        bytearray, however small the chunks (a coroutine per chunk cost 2 µs and an object
        per chunk 60 bytes)."""
        buffer = self.buffer
        out = bytearray()
        size_line = _CHUNK_LINE.fullmatch
        at = 0  # where the next chunk-size line starts
        while True:
            end = buffer.find(b"\r\n", at)
            if end < 0:
                if len(buffer) - at > MAX_HEAD_BYTES:
                    raise TransportError("a chunk-size line is too long")
                del buffer[:at]
                at = 0
                await self._more()
                continue
            match = size_line(buffer, at, end)
            if match is None:
                raise TransportError(f"malformed chunk size {bytes(buffer[at:end])[:40]!r}")
            size = int(match[1], 16)
            start = end + 2
            if size == 0:
                del buffer[:start]
                await self._trailers()
                return bytes(out)
            if len(out) + size > max_bytes:
                raise ResponseTooLarge
            stop = start + size
            if stop + 2 > len(buffer):  # the chunk goes on past what arrived
                del buffer[:start]
                at = stop = 0
                await self._exactly(size, out)
                while len(buffer) < 2:
                    await self._more()
            else:
                out += buffer[start:stop]
            if not buffer.startswith(b"\r\n", stop):
                raise TransportError("a chunk is longer than its size says")
            at = stop + 2

    async def _trailers(self) -> None:
        """Skip the trailer fields after the last chunk, up to the empty line."""
        buffer = self.buffer
        seen = 0
        while True:
            end = buffer.find(b"\r\n")
            if end < 0:
                if len(buffer) + seen > MAX_HEAD_BYTES:
                    raise TransportError(f"the trailers are over {MAX_HEAD_BYTES} bytes")
                await self._more()
                continue
            del buffer[: end + 2]
            if end == 0:
                return
            seen += end + 2

    async def _to_the_end(self, max_bytes: int) -> bytes:
        """A body with no length: everything until the server closes the connection."""
        buffer = self.buffer
        out = bytearray()
        while True:
            if buffer:
                if len(out) + len(buffer) > max_bytes:
                    raise ResponseTooLarge
                out += buffer
                buffer.clear()
            if self.eof:
                if self.error is not None:
                    raise TransportError(f"the connection broke: {self.error}") from self.error
                if self.cut:
                    raise TransportError(
                        "the TLS connection ended without close_notify: the body may be cut short"
                    )
                return bytes(out)
            await self._more()

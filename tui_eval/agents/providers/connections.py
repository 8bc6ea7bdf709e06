"""Keep-alive connections to one API, reused last-in first-out, with no per-request scan.

httpx's pool (httpcore's) walks every connection and every queued request each time a
request starts or ends: at 64 concurrent samples that walk was most of the runner's CPU
(bench/README.md, "Real API runs"). A run only ever talks to a handful of origins, so
each origin keeps a plain stack of idle HTTP/1.1 connections (httpcore2's
`AsyncHTTPConnection`, the maintained fork's public connection class): a request pops
one (or opens one), and pushes it back when its response was read to the end. The pool
grows to the run's concurrency and no further, and every connection is reused.

Under asyncio (the app's and the CLI's loop) the connections' sockets are asyncio
transports read through a small protocol (`_AsyncioBackend`, httpcore2's public
network-backend interface) with timeouts as loop timers. httpcore2's default backend goes
through anyio's socket streams, which enter a cancel scope for every read and write: a
third of the HTTP path's CPU at 64 concurrent samples (bench/README.md, "Real API runs").
Under trio, httpcore2's trio backend is used (made on first use: a plain install has no trio).

Proxies come from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`,
as curl reads them), and HTTPS is verified against the system's trust store unless
`SSL_CERT_FILE` / `SSL_CERT_DIR` say otherwise (`ssl_context`).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import urllib.request
from collections.abc import Iterable
from typing import Any, cast
from urllib.parse import unquote, urlsplit

import anyio
import httpcore2 as httpcore
import sniffio

# httpcore2 exports its proxy *pool* only; its two proxy connection classes are what a
# LIFO stack of connections needs (the pool's per-request scan is what this module avoids).
from httpcore2._async.http_proxy import AsyncForwardHTTPConnection, AsyncTunnelHTTPConnection

Headers = list[tuple[bytes, bytes]]

TransportError = httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol
TimeoutError_ = httpcore.TimeoutException


class ResponseTooLarge(Exception):
    """A response body went past the limit; the connection was dropped."""


class ConnectionPool:
    """Idle connections to the origin of `base_url`.

    Example:
        >>> pool = ConnectionPool("http://127.0.0.1:8000/v1")
        >>> status, headers, body = await pool.post(url, b"{}", headers, 30, 1e6)  # doctest: +SKIP
    """

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        scheme = parts.scheme.encode()
        host = (parts.hostname or "").encode()
        port = parts.port or (443 if scheme == b"https" else 80)
        self.origin = httpcore.Origin(scheme, host, port)
        self.host_header = parts.netloc.encode()
        self.proxy = proxy_for(base_url)
        """The proxy requests go through (from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`), or None."""
        self._idle: list[httpcore.AsyncConnectionInterface] = []
        self._urls: dict[str, httpcore.URL] = {}
        self._ssl: ssl.SSLContext | None = None
        self.opened = 0
        """How many connections this pool has opened (the benchmarks report it)."""

    def _connection(self) -> httpcore.AsyncConnectionInterface:
        while self._idle:
            connection = self._idle.pop()
            if connection.is_idle() and not connection.has_expired():
                return connection
        if self.origin.scheme == b"https" and self._ssl is None:
            self._ssl = ssl_context()
        self.opened += 1
        if self.proxy is not None:
            return self.proxy.connection(self.origin, self._ssl)
        return httpcore.AsyncHTTPConnection(
            self.origin, ssl_context=self._ssl, keepalive_expiry=30, network_backend=_BACKEND
        )

    async def post(
        self, url: str, body: bytes, headers: Headers, timeout: float, max_bytes: int
    ) -> tuple[int, Headers, bytes]:
        """POST `body` to `url`: the status, headers and body (at most `max_bytes` of it).

        Raises:
            ResponseTooLarge: the body is longer than `max_bytes`.
            httpcore2's network, protocol and timeout errors.
        """
        connection = self._connection()
        target = self._urls.get(url)
        if target is None:  # parsed once: httpcore2 parses a str URL on every request
            target = self._urls[url] = httpcore.URL(url)
        request = httpcore.Request(
            b"POST",
            target,
            headers=[
                (b"Host", self.host_header),
                (b"Content-Length", str(len(body)).encode()),
                *headers,
            ],
            content=body,
            extensions={
                "timeout": {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
            },
        )
        reusable = False
        try:
            response = await connection.handle_async_request(request)
            try:
                declared = _header(response.headers, b"content-length")
                if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                    raise ResponseTooLarge
                chunks: list[bytes] = []
                size = 0
                stream = response.stream
                assert hasattr(stream, "__aiter__")
                async for chunk in stream:
                    size += len(chunk)
                    if size > max_bytes:
                        raise ResponseTooLarge
                    chunks.append(chunk)
                reusable = True
            finally:
                await response.aclose()
            return response.status, response.headers, b"".join(chunks)
        finally:
            if reusable and connection.is_idle():
                self._idle.append(connection)
            else:
                with anyio.CancelScope(shield=True):
                    await connection.aclose()

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()


def ssl_context() -> ssl.SSLContext:
    """How HTTPS servers are verified: `SSL_CERT_FILE` (or `SSL_CERT_DIR`) when set, else the
    system's trust store, so a CA that IT installed on the machine is trusted.

    This is httpcore2's `default_ssl_context`: `truststore` (the OS's own verifier) on
    macOS and Windows; on Linux the system's CA bundle, found where OpenSSL was built to
    look or at the distributions' usual paths (what `truststore` reads on Linux, without
    its per-handshake reload, which older OpenSSL versions accumulate).
    """
    return httpcore.default_ssl_context()


class Proxy:
    """An HTTP(S) proxy: plain `http://` requests are forwarded, `https://` ones tunnelled
    through `CONNECT` (the proxy never sees the API key or the body).

    Args:
        url: the proxy's URL, `http://[user:password@]host:port` (or `https://...`).
    """

    def __init__(self, url: str) -> None:
        if "://" not in url:
            url = f"http://{url}"  # HTTPS_PROXY=proxy.corp:3128, as curl accepts it
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"proxy {_without_password(url)!r} is not supported: tui-eval speaks to "
                "http:// and https:// proxies (not SOCKS)"
            )
        self.url = _without_password(url)
        scheme = parts.scheme.encode()
        self.origin = httpcore.Origin(
            scheme, parts.hostname.encode(), parts.port or (443 if scheme == b"https" else 80)
        )
        self.headers: Headers = []
        if parts.username is not None:
            user = unquote(parts.username)
            password = unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self.headers.append((b"Proxy-Authorization", f"Basic {token}".encode()))
        self._ssl = ssl_context() if scheme == b"https" else None

    def __repr__(self) -> str:
        return f"Proxy({self.url!r})"

    def connection(
        self, origin: httpcore.Origin, ssl_context: ssl.SSLContext | None
    ) -> httpcore.AsyncConnectionInterface:
        """A new connection to `origin` through this proxy."""
        if origin.scheme == b"https":
            return AsyncTunnelHTTPConnection(
                self.origin,
                origin,
                ssl_context=ssl_context,
                proxy_ssl_context=self._ssl,
                proxy_headers=self.headers,
                keepalive_expiry=30,
                network_backend=_BACKEND,
            )
        return AsyncForwardHTTPConnection(
            self.origin,
            origin,
            proxy_headers=self.headers,
            keepalive_expiry=30,
            network_backend=_BACKEND,
            proxy_ssl_context=self._ssl,
        )


def proxy_for(url: str) -> Proxy | None:
    """The proxy the environment names for `url`, as curl and the requests library read it:
    `https_proxy`/`HTTPS_PROXY` for https URLs, `http_proxy`/`HTTP_PROXY` for http ones,
    `all_proxy`/`ALL_PROXY` for both; `no_proxy`/`NO_PROXY` (hosts, `.domain` suffixes,
    `host:port`, `*`) bypasses it. Lower-case names win.

    Raises:
        ValueError: the variable names a proxy tui-eval cannot use (SOCKS), naming it.
    """
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    chosen = proxies.get(parts.scheme) or proxies.get("all")
    if not chosen:
        return None
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"  # no_proxy entries match the host or host:port
    if urllib.request.proxy_bypass_environment(host, proxies):  # type: ignore[attr-defined]
        return None
    return Proxy(chosen)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _header(headers: Headers, name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def header_map(headers: Headers) -> dict[str, str]:
    """Response headers as a dict with lower-case names."""
    return {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in headers}


# -- asyncio sockets ------------------------------------------------------------------------
READ_AHEAD = 1 << 20
"""Bytes a connection buffers before it stops reading from the socket."""


class _Socket(asyncio.Protocol):
    """One connection's socket: what arrived, and whoever waits for more."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.writable: asyncio.Future[None] | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports (Ray's actors run on uvloop) are not asyncio.Transport
        # subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > READ_AHEAD and self.transport is not None:
            self.transport.pause_reading()
            self.paused = True
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def pause_writing(self) -> None:
        self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        self.writable = None

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


async def _wait(
    future: asyncio.Future[None], timeout: float | None, error: type[Exception]
) -> None:
    """Await `future`, raising `error` after `timeout` seconds (a timer, not a cancel scope)."""
    if timeout is None:
        await future
        return

    def expire() -> None:
        if not future.done():
            future.set_exception(error(f"timed out ({timeout:g}s)"))

    timer = asyncio.get_running_loop().call_later(timeout, expire)
    try:
        await future
    finally:
        timer.cancel()


COALESCE_BYTES = 1 << 16
"""Writes are held until a read (or this many bytes): a request's head and body leave in one
segment, not two (on loopback the second send cost as much as the whole response parse)."""


class _AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, protocol: _Socket) -> None:
        self._socket = protocol
        self._pending: list[bytes] = []
        self._pending_size = 0

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
            transport = self._socket.transport
            if transport is not None and not transport.is_closing():
                transport.write(data)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        sock = self._socket
        self._flush()  # the request, whole, before waiting for its answer
        if not sock.buffer and not sock.eof:
            sock.waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(sock.waiter, timeout, httpcore.ReadTimeout)
            finally:
                sock.waiter = None
        if sock.buffer:
            data = bytes(sock.buffer[:max_bytes])
            del sock.buffer[:max_bytes]
            if sock.paused and len(sock.buffer) <= READ_AHEAD and sock.transport is not None:
                sock.paused = False
                sock.transport.resume_reading()
            return data
        if sock.error is not None:
            raise httpcore.ReadError(str(sock.error)) from sock.error
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        sock = self._socket
        if not buffer:
            return
        if sock.transport is None or sock.transport.is_closing():
            raise httpcore.WriteError("connection closed")
        self._pending.append(buffer)
        self._pending_size += len(buffer)
        if self._pending_size < COALESCE_BYTES:
            return
        self._flush()
        if sock.writable is not None:
            await _wait(sock.writable, timeout, httpcore.WriteTimeout)
            if sock.transport.is_closing():
                raise httpcore.WriteError("connection closed while writing")

    async def aclose(self) -> None:
        self._pending.clear()
        if self._socket.transport is not None:
            self._socket.transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        sock = self._socket
        assert sock.transport is not None
        self._flush()
        loop = asyncio.get_running_loop()
        try:
            transport = await asyncio.wait_for(
                loop.start_tls(sock.transport, sock, ssl_context, server_hostname=server_hostname),
                timeout,
            )
        except TimeoutError as exc:
            sock.transport.close()
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except (OSError, ssl.SSLError) as exc:
            sock.transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        if transport is None:
            raise httpcore.ConnectError("TLS handshake failed")
        sock.transport = transport
        return self

    def get_extra_info(self, info: str) -> Any:
        sock = self._socket
        if info == "is_readable":
            return bool(sock.buffer) or sock.eof
        transport = sock.transport
        if transport is None:
            return None
        name = {"client_addr": "sockname", "server_addr": "peername"}.get(info, info)
        return transport.get_extra_info(name)


class _AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore2's network backend on asyncio transports; httpcore2's trio one under trio.

    The trio backend is made on first use under trio: building it needs `trio` installed,
    which a plain `pip install tui-eval` does not bring (and asyncio runs never need).
    """

    def __init__(self) -> None:
        self._trio: httpcore.AsyncNetworkBackend | None = None

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if sniffio.current_async_library() != "asyncio":
            if self._trio is None:
                self._trio = httpcore.TrioBackend()
            return await self._trio.connect_tcp(host, port, timeout, local_address, socket_options)
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        try:
            transport, protocol = await asyncio.wait_for(
                loop.create_connection(_Socket, host, port, local_addr=local), timeout
            )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"connecting to {host}:{port} timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        raw = transport.get_extra_info("socket")
        for option in socket_options or ():
            if raw is not None:
                raw.setsockopt(*option)
        return _AsyncioStream(protocol)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("ConnectionPool opens TCP connections only")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


_BACKEND = _AsyncioBackend()

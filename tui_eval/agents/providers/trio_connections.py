"""Connections under event loops other than asyncio (trio): httpcore2's, on its own sockets.

The asyncio client in `connections.py` reads asyncio transports; under trio a request goes
through httpcore2's connection classes instead, kept on the same kind of LIFO stack, with
the same whole-response deadline and the same errors. httpcore2 is imported on first use
here, and picks its trio backend itself (`trio` is installed wherever a trio loop runs).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import anyio

from tui_eval.agents.providers.proxies import Headers, Origin, Proxy
from tui_eval.agents.providers.wire_errors import ResponseTooLarge, TransportError

if TYPE_CHECKING:
    import httpcore2

KEEPALIVE_S = 30.0


class TrioConnections:
    """Idle httpcore2 connections to one origin, reused last-in first-out."""

    def __init__(self, origin: Origin, proxy: Proxy | None, ssl: ssl.SSLContext | None) -> None:
        import httpcore2

        self._httpcore = httpcore2
        self._origin = httpcore2.Origin(*origin)
        self._proxy = proxy
        self._ssl = ssl
        self._idle: list[httpcore2.AsyncConnectionInterface] = []
        self._urls: dict[str, httpcore2.URL] = {}

    def _connection(self) -> tuple[httpcore2.AsyncConnectionInterface, bool]:
        while self._idle:
            connection = self._idle.pop()
            if connection.is_idle() and not connection.has_expired():
                return connection, False
        httpcore = self._httpcore
        proxy = self._proxy
        if proxy is None:
            return httpcore.AsyncHTTPConnection(
                self._origin, ssl_context=self._ssl, keepalive_expiry=KEEPALIVE_S
            ), True
        # httpcore2 exports its proxy *pool* only; its two proxy connection classes are
        # what a LIFO stack of connections needs.
        from httpcore2._async.http_proxy import (
            AsyncForwardHTTPConnection,
            AsyncTunnelHTTPConnection,
        )

        proxy_origin = httpcore.Origin(*proxy.origin)
        if self._origin.scheme == b"https":
            return AsyncTunnelHTTPConnection(
                proxy_origin,
                self._origin,
                ssl_context=self._ssl,
                proxy_ssl_context=proxy.ssl,
                proxy_headers=proxy.headers,
                keepalive_expiry=KEEPALIVE_S,
            ), True
        return AsyncForwardHTTPConnection(
            proxy_origin,
            self._origin,
            proxy_headers=proxy.headers,
            keepalive_expiry=KEEPALIVE_S,
            proxy_ssl_context=proxy.ssl,
        ), True

    async def post(
        self,
        url: str,
        body: bytes,
        headers: Headers,
        timeout: float,
        max_bytes: int,
    ) -> tuple[int, Headers, bytes, bool]:
        """POST `body`: the status, headers, body and whether a new connection was opened.

        Raises:
            ResponseTooLarge: the body is longer than `max_bytes`.
            TimeoutError: no whole response within `timeout` seconds.
            TransportError: the connection failed or the server broke HTTP/1.1.
        """
        httpcore = self._httpcore
        connection, opened = self._connection()
        target = self._urls.get(url)
        if target is None:
            target = self._urls[url] = httpcore.URL(url)
        request = httpcore.Request(
            b"POST",
            target,
            headers=headers,
            content=body,
            extensions={
                "timeout": {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
            },
        )
        reusable = False
        try:
            with anyio.fail_after(timeout):
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
            return response.status, response.headers, b"".join(chunks), opened
        except httpcore.TimeoutException as exc:
            raise TimeoutError(str(exc)) from exc
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
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


def _header(headers: Headers, name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None

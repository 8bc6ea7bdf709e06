"""Keep-alive connections to one API, reused last-in first-out, with no per-request scan.

httpx's pool (httpcore's) walks every connection and every queued request each time a
request starts or ends: at 64 concurrent samples that walk was most of the runner's CPU
(bench/README.md, "Real API runs"). A run only ever talks to a handful of origins, so
each origin keeps a plain stack of idle HTTP/1.1 connections (httpcore2's
`AsyncHTTPConnection`, the maintained fork's public connection class): a request pops
one (or opens one), and pushes it back when its response was read to the end. The pool
grows to the run's concurrency and no further, and every connection is reused.
"""

from __future__ import annotations

import ssl
from urllib.parse import urlsplit

import anyio
import httpcore2 as httpcore

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
        self._idle: list[httpcore.AsyncHTTPConnection] = []
        self._ssl: ssl.SSLContext | None = None
        self.opened = 0
        """How many connections this pool has opened (the benchmarks report it)."""

    def _connection(self) -> httpcore.AsyncHTTPConnection:
        while self._idle:
            connection = self._idle.pop()
            if connection.is_idle() and not connection.has_expired():
                return connection
        if self.origin.scheme == b"https" and self._ssl is None:
            self._ssl = ssl.create_default_context()
        self.opened += 1
        return httpcore.AsyncHTTPConnection(self.origin, ssl_context=self._ssl, keepalive_expiry=30)

    async def post(
        self, url: str, body: bytes, headers: Headers, timeout: float, max_bytes: int
    ) -> tuple[int, Headers, bytes]:
        """POST `body` to `url`: the status, headers and body (at most `max_bytes` of it).

        Raises:
            ResponseTooLarge: the body is longer than `max_bytes`.
            httpcore2's network, protocol and timeout errors.
        """
        connection = self._connection()
        request = httpcore.Request(
            b"POST",
            url,
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


def _header(headers: Headers, name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def header_map(headers: Headers) -> dict[str, str]:
    """Response headers as a dict with lower-case names."""
    return {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in headers}

"""The sockets under tui-eval's HTTP layer: aiohttp's on asyncio (as the OpenAI SDK's
`DefaultAioHttpClient`), httpx2's own under trio. The trust store is loaded by the first
request that uses TLS, so plain HTTP to a local server never pays for it.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import httpx2
import sniffio
import yarl

from tui_eval.util.errors import TuiEvalError

MAX_CONNECTIONS = 100
"""Connections open at once per socket transport (httpx2's default): more requests queue."""
KEEPALIVE_S = 4.0
"""Idle seconds before a connection closes: under uvicorn's 5 s (vLLM, LiteLLM), so a
request never lands on a connection the server is closing."""
READ_CHUNK = 1 << 16


class CertificateError(TuiEvalError, httpx2.ConnectError):
    """The server's TLS certificate failed verification: never retried."""


def ssl_context() -> ssl.SSLContext:
    """httpcore2's default context (`SSL_CERT_FILE`/`SSL_CERT_DIR`, else the system's)."""
    import os

    import httpcore2

    try:
        return httpcore2.default_ssl_context()
    except (OSError, ssl.SSLError) as exc:
        given = " and ".join(
            f"{name}={value!r}"
            for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")
            if (value := os.environ.get(name))
        )
        why = getattr(exc, "strerror", None) or str(exc)
        raise TrustStoreError(
            f"cannot load the CA certificates {given or 'of the system'}: {why}"
        ) from None


class TrustStoreError(TuiEvalError, ValueError):
    """The CA certificates cannot be loaded (a bad `SSL_CERT_FILE`): never retried."""


def _timeout(request: httpx2.Request) -> Any:
    given = request.extensions.get("timeout") or {}
    return aiohttp.ClientTimeout(
        total=None,
        connect=given.get("pool"),
        sock_connect=given.get("connect"),
        sock_read=given.get("read"),
    )


_FRAMING = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive", "host"})
"""Request headers aiohttp sets itself: passed on, they would frame the body twice."""


class AiohttpStream(httpx2.AsyncByteStream):
    """An aiohttp response body as an httpx2 byte stream."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped_errors():
            async for chunk in self._response.content.iter_chunked(READ_CHUNK):
                yield chunk

    async def aclose(self) -> None:
        # Back to the pool if read to the end; aiohttp closes a connection left mid-body.
        self._response.release()


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """httpx2 requests over one aiohttp `ClientSession`, made in the loop that uses it.

    Args:
        proxy: every request's proxy (its credentials sent as `Proxy-Authorization`).
        trust: the trust store servers are verified with, asked at the first TLS use.
    """

    def __init__(
        self, proxy: httpx2.Proxy | None = None, trust: Callable[[], ssl.SSLContext] = ssl_context
    ) -> None:
        self._proxy = proxy
        self._trust = trust
        self._verify: ssl.SSLContext | None = None
        self._tls_proxy = proxy is not None and proxy.url.scheme == "https"
        self._session: aiohttp.ClientSession | None = None
        self._proxy_headers: dict[str, str] | None = None
        if proxy is not None:
            self._proxy_headers = dict(proxy.headers)
            if proxy.auth is not None:
                self._proxy_headers["Proxy-Authorization"] = aiohttp.encode_basic_auth(*proxy.auth)
        self._open()  # now, not inside the first request's deadline

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=MAX_CONNECTIONS,
            keepalive_timeout=KEEPALIVE_S,
        )
        # No cookies: one sample's never reach another's (or another tenant's) requests.
        self._session = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False
        )
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        session = self._session or self._open()
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in request.headers.raw
            if name.lower().decode("latin-1") not in _FRAMING
        ]
        if self._proxy_headers and request.url.scheme == "http":
            headers.extend(self._proxy_headers.items())  # forwarded, not tunnelled: no CONNECT
        try:
            data: Any = request.content or None
        except httpx2.RequestNotRead:
            data = request.stream  # an upload: aiohttp sends it chunked
        proxy = self._proxy
        with _mapped_errors():
            response = await session.request(
                request.method,
                yarl.URL(str(request.url), encoded=True),
                headers=headers,
                data=data,
                allow_redirects=False,
                timeout=_timeout(request),
                proxy=str(proxy.url) if proxy is not None else None,
                proxy_headers=self._proxy_headers,
                ssl=self._ssl(request),
            )
        return httpx2.Response(
            response.status,
            headers=[(bytes(name), bytes(value)) for name, value in response.raw_headers],
            stream=AiohttpStream(response),
            request=request,
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
        )

    def _ssl(self, request: httpx2.Request) -> ssl.SSLContext | bool:
        """How this request's TLS is verified; `True` for plain HTTP (no trust store)."""
        if not _uses_tls(request, self._tls_proxy):
            return True
        if self._verify is None:
            self._verify = self._trust()
        return self._verify

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class _mapped_errors:  # a class, not @contextmanager: twice a request, a third the cost
    """aiohttp's exceptions as httpx2's (a certificate failure a `CertificateError`)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        mapped = _mapped(exc) if isinstance(exc, Exception) else None
        if mapped is not None:
            raise mapped from exc


def _mapped(exc: Exception) -> httpx2.TransportError | None:
    import asyncio

    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return CertificateError(text)
    if isinstance(exc, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        return httpx2.ProxyError(text)
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx2.ConnectTimeout(text)
    if isinstance(exc, aiohttp.ServerTimeoutError | asyncio.TimeoutError):
        return httpx2.ReadTimeout(text or "timed out")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx2.ConnectError(text)
    if isinstance(exc, aiohttp.ServerDisconnectedError):  # a kept-alive one, say: safe to retry
        return httpx2.ReadError(f"the server closed the connection: {text}")
    if isinstance(exc, aiohttp.ClientResponseError):  # a response aiohttp could not parse
        return httpx2.RemoteProtocolError(f"malformed response: {exc.message or text}")
    if isinstance(exc, aiohttp.ClientPayloadError):  # the connection broke mid-body
        return httpx2.ReadError(f"the response body was cut off: {text}")
    if isinstance(exc, aiohttp.ClientOSError | aiohttp.ClientConnectionError):
        return httpx2.ReadError(text)
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return httpx2.UnsupportedProtocol(text)
    return None


def _uses_tls(request: httpx2.Request, tls_proxy: bool) -> bool:
    """Whether `request` needs the trust store (an `https://` URL or proxy)."""
    return request.url.scheme == "https" or tls_proxy


class HttpxTransport(httpx2.AsyncBaseTransport):
    """httpx2's own socket transport (under trio): one for TLS, made at its first use
    (httpx2 takes the TLS context when a transport is made), one for plain HTTP."""

    def __init__(
        self, proxy: httpx2.Proxy | None = None, trust: Callable[[], ssl.SSLContext] = ssl_context
    ) -> None:
        self._proxy = proxy
        self._trust = trust
        self._tls_proxy = proxy is not None and proxy.url.scheme == "https"
        self._plain: httpx2.AsyncHTTPTransport | None = None
        self._tls: httpx2.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if _uses_tls(request, self._tls_proxy):
            transport = self._tls or self._open(tls=True)
        else:
            transport = self._plain or self._open(tls=False)
        return await transport.handle_async_request(request)

    def _open(self, *, tls: bool) -> httpx2.AsyncHTTPTransport:
        proxy = self._proxy
        if tls:
            verify = self._trust()
            if self._tls_proxy and proxy is not None:  # the proxy is verified the same way
                proxy = httpx2.Proxy(
                    proxy.url, ssl_context=verify, auth=proxy.auth, headers=proxy.headers
                )
        else:
            verify = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # no CA: would refuse any server
        transport = httpx2.AsyncHTTPTransport(
            verify=verify,
            proxy=proxy,
            limits=httpx2.Limits(max_connections=MAX_CONNECTIONS, keepalive_expiry=KEEPALIVE_S),
        )
        if tls:
            self._tls = transport
        else:
            self._plain = transport
        return transport

    async def aclose(self) -> None:
        transports = (self._plain, self._tls)
        self._plain = self._tls = None
        for transport in transports:
            if transport is not None:
                await transport.aclose()


class ProxyVariableError(TuiEvalError, httpx2.ProxyError):
    """A proxy variable names a proxy tui-eval cannot use (its credentials never shown)."""


def proxy_for(url: httpx2.URL) -> httpx2.Proxy | None:
    """The proxy the environment names for `url` (as the standard library reads it), or
    None; `ProxyVariableError` for one tui-eval cannot use (SOCKS, a bad URL)."""
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    chosen = proxies.get(url.scheme) or proxies.get("all")
    if not chosen or urllib.request.proxy_bypass_environment(url.host, proxies):  # type: ignore[attr-defined]
        return None
    try:
        proxy = httpx2.Proxy(chosen if "://" in chosen else f"http://{chosen}")
        if proxy.url.scheme not in ("http", "https"):
            raise ValueError(f"proxy scheme {proxy.url.scheme!r}")
    except (ValueError, TypeError, httpx2.InvalidURL) as exc:
        raise _proxy_problem(exc) from None
    return proxy


def _proxy_problem(exc: Exception) -> ProxyVariableError:
    import os

    from tui_eval.util.secrets import without_credentials

    named = [
        f"{name}={without_credentials(value)!r}"
        for name, value in os.environ.items()
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy") and value
    ]
    return ProxyVariableError(
        f"a proxy variable cannot be used ({', '.join(named) or 'none set'}): "
        f"{type(exc).__name__}; a proxy is http:// or https:// (not SOCKS), and a '#', '/', "
        "'?' or '@' in its password must be percent-encoded"
    )


def socket_transport(
    proxy: httpx2.Proxy | None, trust: Callable[[], ssl.SSLContext] = ssl_context
) -> httpx2.AsyncBaseTransport:
    """A socket transport for the running loop: aiohttp's on asyncio, else httpx2's."""
    if sniffio.current_async_library() == "asyncio":
        return AiohttpTransport(proxy, trust)
    return HttpxTransport(proxy, trust)


def _running_loop() -> object:
    """The running event loop (asyncio's loop object; trio's run, by its token)."""
    if sniffio.current_async_library() == "asyncio":
        import asyncio

        return asyncio.get_running_loop()
    import trio

    return trio.lowlevel.current_trio_token()


class Sockets:
    """The socket transports of a run, one per proxy in the running loop."""

    def __init__(self) -> None:
        self._loop: object | None = None
        self._transports: dict[str, httpx2.AsyncBaseTransport] = {}
        self._trust = functools.cache(ssl_context)  # loaded once for these transports

    def __repr__(self) -> str:
        return f"Sockets({len(self._transports)} transports)"

    def get(self, proxy: httpx2.Proxy | None) -> httpx2.AsyncBaseTransport:
        """The transport for requests through `proxy` (None: direct) in the running loop."""
        loop = _running_loop()
        if loop is not self._loop:
            self.drop()
            self._loop = loop
        key = str(proxy.url) if proxy is not None else ""
        transport = self._transports.get(key)
        if transport is None:
            transport = self._transports[key] = socket_transport(proxy, self._trust)
        return transport

    def drop(self) -> None:
        """Drop the transports without awaiting anything (their loop may be gone)."""
        for transport in self._transports.values():
            session = getattr(transport, "_session", None)
            if session is not None and not session.closed:
                connector = session.connector
                session.detach()  # closed without awaiting: its loop may be closed
                if connector is not None:
                    # Its public `close()` run one step, here: that step closes the sockets
                    # (or, its loop gone, only marks it closed); the rest would wait in
                    # that loop for them to finish closing.
                    closing = connector.close()
                    try:
                        closing.send(None)
                    except (StopIteration, RuntimeError):
                        pass
                    finally:
                        closing.close()
        self._transports = {}

    async def aclose(self) -> None:
        """Close every transport opened in the running loop."""
        transports, self._transports = self._transports, {}
        self._loop = None
        for transport in transports.values():
            await transport.aclose()

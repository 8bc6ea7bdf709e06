"""`http_client()`: tui-eval's HTTP layer lent to any SDK, as an httpx2 client.

    >>> import openai, tui_eval
    >>> async def agent(prompt: str) -> str:  # doctest: +SKIP
    ...     client = openai.AsyncOpenAI(http_client=tui_eval.http_client())
    ...     reply = await client.chat.completions.create(model="gpt-4o-mini", messages=[...])
    ...     return reply.choices[0].message.content

The client's requests go through `MeteredTransport` (`transport.py`): the run's shared
rate limiter, its response cache, the sample's meter (so `max_cost` holds), secret
checks, the retry policy and the deadline — over the run's connections. Proxies from the
environment (`HTTP(S)_PROXY`, `ALL_PROXY`, `NO_PROXY`, with credentials) are httpx2's
routing; every route gets the same layer. `http_client_sync()` is its twin for sync code
(a sync agent, which tui-eval runs in a worker thread).
"""

from __future__ import annotations

from typing import Any

import anyio.from_thread
import httpx2

from tui_eval.agents.http.context import SampleContext, current_sample
from tui_eval.agents.http.options import DEFAULT_TIMEOUT_S, ProviderOptions
from tui_eval.agents.http.transport import MeteredTransport, decoded_response
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.secrets import without_credentials


class ProxyVariableError(TuiEvalError, ValueError):
    """A proxy variable names a proxy tui-eval cannot use (its credentials never shown)."""


def _proxy_problem(exc: Exception) -> ProxyVariableError:
    import os

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


def _layered(proxy: httpx2.Proxy | None, layer: dict[str, Any]) -> MeteredTransport:
    if proxy is not None and proxy.url.scheme not in ("http", "https"):
        raise ValueError(f"proxy scheme {proxy.url.scheme!r}")
    return MeteredTransport(proxy, **layer)


class MeteredAsyncClient(httpx2.AsyncClient):
    """An httpx2 `AsyncClient` whose every route (direct, or through the proxy the
    environment names for a URL) is tui-eval's layer (`MeteredTransport`). Redirects are
    not followed; cookies are not kept from one request to the next.

    Args:
        sample: the sample its requests belong to when none is current.
        options: provider options over the defaults, under the run's.
        **kwargs: as `httpx2.AsyncClient` takes them (`base_url`, `headers`, `timeout`...).

    Raises:
        ProxyVariableError: a proxy variable tui-eval cannot use.
    """

    _layer: dict[str, Any]

    def __init__(
        self,
        *,
        sample: SampleContext | None = None,
        options: ProviderOptions | None = None,
        **kwargs: Any,
    ) -> None:
        _init_layered(self, super().__init__, sample, options, kwargs)
        self._routes: dict[str, tuple[httpx2.URL, httpx2.AsyncBaseTransport]] = {}

    def route(self, url: str) -> tuple[httpx2.URL, httpx2.AsyncBaseTransport]:
        """`url` parsed, and the transport httpx2 sends it through (direct, or the proxy
        the environment names for it): worked out once per URL."""
        found = self._routes.get(url)
        if found is None:
            target = httpx2.URL(url)
            found = self._routes[url] = (target, self._transport_for_url(target))
        return found

    def _init_transport(self, *args: Any, transport: Any = None, **kwargs: Any) -> Any:
        return transport if transport is not None else _layered(None, self._layer)

    def _init_proxy_transport(self, proxy: httpx2.Proxy, *args: Any, **kwargs: Any) -> Any:
        return _layered(proxy, self._layer)


def _init_layered(
    client: Any,
    base_init: Any,
    sample: SampleContext | None,
    options: ProviderOptions | None,
    kwargs: dict[str, Any],
) -> None:
    """What both metered clients do to start: keep the layer their transport is built
    from (before httpx2 builds it), the 600 s default, no redirects and no cookies."""
    client._layer = {"sample": sample, "options": options}
    kwargs.setdefault("timeout", httpx2.Timeout(DEFAULT_TIMEOUT_S, connect=30.0))
    try:
        base_init(follow_redirects=False, **kwargs)
    except (ValueError, TypeError, httpx2.InvalidURL) as exc:
        raise _proxy_problem(exc) from None
    client._cookies = _NoCookies()


class _NoCookies(httpx2.Cookies):
    """A cookie jar that keeps nothing: one sample's cookies never reach another's."""

    def extract_cookies(self, response: httpx2.Response) -> None:
        return None


class _BridgeTransport(httpx2.BaseTransport):
    """A sync transport over the async layer: each request runs in the event loop (from
    the worker thread tui-eval runs a sync agent in, else in a loop of the client's own)."""

    def __init__(self, inner: MeteredTransport) -> None:
        self._inner = inner
        self._portal: Any = None
        self._portal_cm: Any = None

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        copy = httpx2.Request(
            request.method,
            request.url,
            headers=request.headers,
            content=body,
            extensions=request.extensions,
        )
        try:
            response = anyio.from_thread.run(self._send, copy)
        except RuntimeError as exc:
            if "worker thread" not in str(exc) and "event loop" not in str(exc):
                raise
            if self._portal is None:
                self._portal_cm = anyio.from_thread.start_blocking_portal()
                self._portal = self._portal_cm.__enter__()
            response = self._portal.call(self._send, copy)
        return response

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        content = await response.aread()
        await response.aclose()
        return decoded_response(response, content, request=request)

    def close(self) -> None:
        self._inner.outside.drop()
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
            self._portal = self._portal_cm = None


class MeteredClient(httpx2.Client):
    """`MeteredAsyncClient`'s sync twin (an httpx2 `Client`)."""

    _layer: dict[str, Any]

    def __init__(
        self,
        *,
        sample: SampleContext | None = None,
        options: ProviderOptions | None = None,
        **kwargs: Any,
    ) -> None:
        _init_layered(self, super().__init__, sample, options, kwargs)

    def _init_transport(self, *args: Any, transport: Any = None, **kwargs: Any) -> Any:
        return transport if transport is not None else _BridgeTransport(_layered(None, self._layer))

    def _init_proxy_transport(self, proxy: httpx2.Proxy, *args: Any, **kwargs: Any) -> Any:
        return _BridgeTransport(_layered(proxy, self._layer))


def http_client(
    *, timeout: float | None = None, max_retries: int | None = None, **kwargs: Any
) -> MeteredAsyncClient:
    """An httpx2 `AsyncClient` bound to the current sample: its requests are rate-limited
    with the run's shared limiter, answered from the run's cache (`--cache`), metered and
    priced into the sample's cost (and so held to `max_cost`), retried and bounded by
    tui-eval's policy — streamed answers too.

    Pass it wherever an SDK takes an httpx client: `openai.AsyncOpenAI(http_client=...)`,
    `anthropic.AsyncAnthropic(http_client=...)`, pydantic-ai's providers
    (`OpenAIProvider(http_client=...)`), langchain-openai's `http_async_client=`. Outside a
    run it works as a plain client with limiters of its own.

    Args:
        timeout: seconds for a whole response (default: the run's, else 600).
        max_retries: retries after server errors, timeouts and connection errors (default:
            the run's, else 2); the SDK's own retries come on top of these.
        **kwargs: passed to `httpx2.AsyncClient` (`headers`, `base_url`...).

    Example:
        >>> client = openai.AsyncOpenAI(http_client=tui_eval.http_client())  # doctest: +SKIP
    """
    return MeteredAsyncClient(
        sample=current_sample(), options=_options(timeout, max_retries), **kwargs
    )


def http_client_sync(
    *, timeout: float | None = None, max_retries: int | None = None, **kwargs: Any
) -> MeteredClient:
    """`http_client()`'s twin for sync code: an httpx2 `Client` (for `openai.OpenAI`,
    langchain-openai's `http_client=`...), bound to the current sample."""
    return MeteredClient(sample=current_sample(), options=_options(timeout, max_retries), **kwargs)


def _options(timeout: float | None, max_retries: int | None) -> ProviderOptions | None:
    if timeout is None and max_retries is None:
        return None
    return ProviderOptions(timeout=timeout, max_retries=max_retries)


__all__ = [
    "MeteredAsyncClient",
    "MeteredClient",
    "ProxyVariableError",
    "http_client",
    "http_client_sync",
]

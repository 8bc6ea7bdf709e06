"""`http_client()` and `http_client_sync()`: tui-eval's HTTP layer lent to any SDK.

>>> import openai, tui_eval
>>> async def agent(prompt: str) -> str:  # doctest: +SKIP
...     client = openai.AsyncOpenAI(http_client=tui_eval.http_client())
...     reply = await client.chat.completions.create(model="gpt-4o-mini", messages=[...])
...     return reply.choices[0].message.content
"""

from __future__ import annotations

import http.cookiejar
from typing import Any

import anyio.from_thread
import httpx2

from tui_eval.agents.http.context import current_sample
from tui_eval.agents.http.options import DEFAULT_TIMEOUT_S, ProviderOptions
from tui_eval.agents.http.transport import Binding, chain, decoded_response


class LayeredClient(httpx2.AsyncClient):
    """An httpx2 `AsyncClient` over tui-eval's layer: an adapter never routes it twice."""


def accepted_encodings() -> str:
    """The `Accept-Encoding` httpx2's clients send here (its one public source)."""
    return httpx2.AsyncClient(transport=httpx2.AsyncBaseTransport()).headers["accept-encoding"]


def _no_cookies() -> http.cookiejar.CookieJar:
    return http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


class _BridgeTransport(httpx2.BaseTransport):
    """A sync transport over the async layer: each request runs in the run's event loop
    (from a sync agent's worker thread), else in a loop of the client's own."""

    def __init__(self, binding: Binding) -> None:
        self._binding = binding
        self._inner = chain(binding)
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
            return anyio.from_thread.run(self._send, copy)
        except RuntimeError as exc:
            if "worker thread" not in str(exc) and "event loop" not in str(exc):
                raise
        if self._portal is None:
            self._portal_cm = anyio.from_thread.start_blocking_portal()
            self._portal = self._portal_cm.__enter__()
        response: httpx2.Response = self._portal.call(self._send, copy)
        return response

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        content = await response.aread()
        await response.aclose()
        return decoded_response(response, content, request=request)

    def close(self) -> None:
        self._binding.drop()  # the loop its connections were made in may be gone
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
            self._portal = self._portal_cm = None


def http_client(
    *,
    timeout: float | None = None,
    max_retries: int | None = None,
    send_with: httpx2.AsyncClient | None = None,
    **kwargs: Any,
) -> LayeredClient:
    """An httpx2 `AsyncClient` bound to the current sample: its requests are rate-limited,
    cached, priced, retried and bounded as the run's. Pass it wherever an SDK takes an
    httpx client. Outside a run it is a plain client with a limiter of its own.

    Args:
        timeout: seconds for a whole response (default: the run's, else 600).
        max_retries: retries (default: the run's, else 2), before the SDK's own.
        send_with: a client of your own to send with (its headers, TLS, proxy, auth, hooks).
        **kwargs: passed to `httpx2.AsyncClient` (`headers`, `base_url`...).

    Raises:
        TypeError: `proxy=` or `mounts=`, which would bypass the layer (pass `send_with=`).

    Example:
        >>> mine = httpx2.AsyncClient(headers={"X-Team": "evals"}, verify="corp-ca.pem")  # doctest: +SKIP
        >>> client = openai.AsyncOpenAI(http_client=tui_eval.http_client(send_with=mine))  # doctest: +SKIP
    """
    if "proxy" in kwargs or "mounts" in kwargs:
        raise TypeError("proxy= and mounts= would bypass tui-eval's layer: pass send_with=")
    kwargs.setdefault("timeout", httpx2.Timeout(DEFAULT_TIMEOUT_S, connect=30.0))
    return LayeredClient(  # no redirects followed, no cookies kept (one sample's never reach another's)
        transport=chain(Binding(current_sample(), _options(timeout, max_retries)), send_with),
        follow_redirects=False,
        cookies=_no_cookies(),
        **kwargs,
    )


def http_client_sync(
    *, timeout: float | None = None, max_retries: int | None = None, **kwargs: Any
) -> httpx2.Client:
    """`http_client()`'s twin for sync code: an httpx2 `Client` (for `openai.OpenAI`...)."""
    binding = Binding(current_sample(), _options(timeout, max_retries))
    kwargs.setdefault("timeout", httpx2.Timeout(DEFAULT_TIMEOUT_S, connect=30.0))
    return httpx2.Client(
        transport=_BridgeTransport(binding),
        follow_redirects=False,
        cookies=_no_cookies(),
        **kwargs,
    )


def _options(timeout: float | None, max_retries: int | None) -> ProviderOptions | None:
    if timeout is None and max_retries is None:
        return None
    return ProviderOptions(timeout=timeout, max_retries=max_retries)

"""tui-eval's HTTP layer: a chain of httpx2 transports, one concern each.

    CacheLayer → LimitLayer → RetryLayer → MeterLayer → WireLayer → the sockets

Every model request of a run passes here (the built-in providers', an SDK's through
`tui_eval.http_client()`). Layers report up in response extensions: `tui_eval.json` (the
body, parsed once), `tui_eval.usage`, `tui_eval.retries`, `tui_eval.error` (why a request
was given up, beside the server's last answer).
"""

from __future__ import annotations

import datetime
import random
import re
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pydantic_core

from tui_eval.agents.http.context import RunContext, Runtime, SampleContext, current_sample
from tui_eval.agents.http.limits import RateLimiter, RateLimitWait, key_fingerprint
from tui_eval.agents.http.metering import (
    ResponseTokens,
    response_tokens,
    stated_cost,
    stream_usage,
)
from tui_eval.agents.http.options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    ProviderOptions,
    header_problem,
)
from tui_eval.agents.http.rate_headers import retry_after
from tui_eval.agents.http.sockets import CertificateError, proxy_for
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.secrets import credential_values, redact_secrets

RATE_LIMITED = 429
RETRYABLE = frozenset({408, 409, 425, 500, 502, 503, 504, 529})
MAX_RETRY_AFTER_S = 60.0
"""A server asking for a longer single wait (a spent daily quota) fails the request at once."""
MAX_RESPONSE_BYTES = 20_000_000
"""A larger response body (once decoded) is an error, never hundreds of MB in memory."""
QUOTA_GONE = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})
"""Error codes of a 429 that no wait fixes: the account has no quota or credit left."""
KEY_HEADERS = (b"authorization", b"x-api-key", b"api-key")
"""Where APIs take their key: the limiter's quota is (base URL, this key)."""
VOLATILE_HEADERS = frozenset(
    b"user-agent content-length host accept-encoding connection idempotency-key x-request-id"
    b" traceparent tracestate baggage".split()
)
"""Headers that differ between sends of one request (as do `x-stainless-*`): not cache-keyed."""
ENDPOINTS = ("/v1/messages", "/chat/completions", "/responses", "/completions", "/embeddings")
"""Paths whose prefix is a request's base URL."""
DEFAULTS = ProviderOptions(
    timeout=DEFAULT_TIMEOUT_S, retry_budget=DEFAULT_RETRY_BUDGET_S, max_retries=DEFAULT_MAX_RETRIES
)


class RequestFailed(TuiEvalError, httpx2.TransportError):
    """A request the layer gave up (the message says why, with every attempt)."""


class ResponseTooLarge(RequestFailed):
    """A response body over the size cap (counted decoded): refused, never retried."""


class InvalidHeader(TuiEvalError, httpx2.LocalProtocolError):
    """A request header that must not be sent (a line break or NUL, a bad name)."""


class Binding:
    """What one client's chain is made for: the same for every request it sends.

    Args:
        sample: the sample its requests count in when none is current.
        options: options over the defaults and under the run's (a client's `timeout=`).
        provider: whose wire format and prices (`openai`, `anthropic`; None: by request).
        read: a stored answer as the caller reads it (None: unreadable, a cache miss).
        backoff: the first retry's delay in seconds (doubling, at most 30 s, +25% jitter).
        max_bytes: the largest response body accepted (decoded).
    """

    def __init__(
        self,
        sample: SampleContext | None = None,
        options: ProviderOptions | None = None,
        *,
        provider: str | None = None,
        read: Callable[[dict[str, Any]], object | None] | None = None,
        backoff: float = 0.5,
        max_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.sample = sample
        self.options = DEFAULTS.over(options)
        self.provider = provider
        self.read = read
        self.backoff = backoff
        self.max_bytes = max_bytes
        self._outside: RunContext | None = None
        self._resolved: tuple[ProviderOptions | None, ProviderOptions] = (None, self.options)
        self._quotas: dict[tuple[str, tuple[tuple[bytes, bytes], ...]], tuple[str, str]] = {}

    @property
    def outside(self) -> RunContext:
        """This client's own runtime and connections for requests outside any run (lazy)."""
        if self._outside is None:
            self._outside = RunContext()
            weakref.finalize(self, self._outside.drop)
        return self._outside

    async def aclose(self) -> None:
        """Close the connections opened outside any run, if any were."""
        if self._outside is not None:
            await self._outside.aclose()

    def drop(self) -> None:
        """Let go of the connections opened outside any run without awaiting."""
        if self._outside is not None:
            self._outside.drop()

    def under(self, given: ProviderOptions | None) -> ProviderOptions:
        """A run's options over the client's, worked out once per run."""
        resolved = self._resolved
        if resolved[0] is not given:
            resolved = self._resolved = (given, self.options.over(given))
        return resolved[1]

    def call(self, request: httpx2.Request) -> Call:
        """`request` resolved once for the layers below (its `extensions[CALL]`)."""
        sample = current_sample() or self.sample
        options = self.under(sample.run.provider if sample is not None else None)
        try:
            body: bytes | None = request.content
        except httpx2.RequestNotRead:
            body = None
        kind = self.provider
        if kind is None:
            anthropic = "anthropic-version" in request.headers
            kind = (
                "anthropic" if anthropic or request.url.path.endswith("/v1/messages") else "openai"
            )
        call = request.extensions[CALL] = Call(sample, options, body, kind)
        return call

    def quota(self, request: httpx2.Request) -> tuple[str, str]:
        """`request`'s quota (base URL, key fingerprint), worked out once per URL and key."""
        keys = tuple(
            (lowered, value)
            for name, value in request.headers.raw
            if (lowered := name.lower()) in KEY_HEADERS
        )
        memo = (str(request.url), keys)
        found = self._quotas.get(memo)
        if found is None:
            if len(self._quotas) > 64:
                self._quotas.clear()
            found = self._quotas[memo] = (base_url(request.url), key_of(keys))
        return found


CALL = "tui_eval.call"  # the request extension holding its `Call`
HEADERS = "tui_eval.headers"  # the response extension holding `header_map(response)`


@dataclass(slots=True)
class Call:
    """One request as the layers see it, resolved once at the top of the chain.

    Attributes:
        sample: the sample it counts in (None: outside any run).
        body: its body when in memory (None: an upload, sent as it streams, never retried).
        kind: whose wire format and prices (`openai`, `anthropic`).
    """

    sample: SampleContext | None
    options: ProviderOptions
    body: bytes | None
    kind: str


def chain(
    binding: Binding, send_with: httpx2.AsyncClient | None = None
) -> httpx2.AsyncBaseTransport:
    """The layer, top to bottom, over the run's sockets or over `send_with`'s."""
    wire = WireLayer(binding, send_with)
    return CacheLayer(LimitLayer(RetryLayer(MeterLayer(wire, binding), binding), binding), binding)


class _Layer(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, binding: Binding) -> None:
        self.inner = inner
        self.binding = binding

    async def aclose(self) -> None:
        await self.inner.aclose()


class CacheLayer(_Layer):
    """The run's response cache (`--cache`): answers a sample's POST, stores a 2xx answer."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        call = self.binding.call(request)
        sample, body, kind = call.sample, call.body, call.kind
        cache = sample.run.cache if sample is not None else None
        if cache is None or sample is None or body is None or request.method != "POST":
            return await self.inner.handle_async_request(request)
        key = cache.key(kind, base_url(request.url), body, sample.index, _keyed(request))
        stored = await cache.get(key)
        read = self.binding.read
        answer = read(stored) if isinstance(stored, dict) and read is not None else None
        if isinstance(stored, dict) and read is not None and answer is None:
            cache.miss()  # JSON but not an answer ({}, no choices): ask the API again
            stored = None
        if isinstance(stored, bytes):
            sample.meter.add(cached=True)
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=stored, request=request
            )
        if stored is not None:  # a known model's price, at no cost this time
            used = response_tokens(stored)
            runtime = sample.run.runtime
            sample.meter.add(used, list_price(runtime, kind, stored, body, used), cached=True)
            return httpx2.Response(
                200,
                headers={"content-type": "application/json"},
                content=pydantic_core.to_json(stored),
                request=request,
                extensions={
                    "tui_eval.json": stored,
                    "tui_eval.answer": answer,
                    "tui_eval.usage": used,
                    "tui_eval.retries": 0,
                },
            )
        response = await self.inner.handle_async_request(request)
        parsed = response.extensions.get("tui_eval.json")
        if response.status_code >= 300:
            pass
        elif isinstance(parsed, dict):
            await cache.put(key, parsed, credential_values(None, _text_headers(request)))
        elif _is_stream(response):  # decoded by the wire layer
            secrets = credential_values(None, _text_headers(request))

            async def store(whole: bytes) -> None:
                await cache.put(key, whole, secrets)

            response.stream = _Passing(response.stream, store)
        return response


class LimitLayer(_Layer):
    """Each request's turn in its quota's shared rate limiter; a 429 goes again within the
    retry budget, unless the quota is gone or it asks for a wait over 60 s."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        call: Call = request.extensions[CALL]
        sample, options, body = call.sample, call.options, call.body
        run = sample.run if sample is not None else self.binding.outside
        limiter = run.runtime.limiter(
            *self.binding.quota(request), rpm=options.rpm, tpm=options.tpm
        )
        tokens = _token_estimate(body)
        started = time.monotonic()
        budget = options.retry_budget or 0.0

        def give_up_at() -> float:
            return limiter.give_up_at(started, budget)

        def stalled() -> str:
            waited = time.monotonic() - (give_up_at() - budget)
            return (
                f"request to {_shown_url(request.url)} still rate-limited after {waited:.0f}s "
                f"with no request accepted (retry budget {budget:g}s)"
            )

        waits = 0
        while True:
            try:
                await limiter.acquire(tokens, give_up_at)
            except RateLimitWait as exc:
                raise RequestFailed(
                    f"{stalled()}: its turn would come {exc.wait_s:.3g}s later ({exc.why})"
                ) from None
            response = await self.inner.handle_async_request(request)
            headers = header_map(response)
            status = response.status_code
            if status != RATE_LIMITED:
                _learn(limiter, response, tokens)
                response.extensions["tui_eval.retries"] = waits + _retries(response)
                return response
            limiter.on_response(status, headers)
            message, quota_gone = server_error(response.content)
            why = f"HTTP {status}: {message}"
            if quota_gone:
                return given_up(
                    response,
                    f"returned HTTP 429 for {_shown_url(request.url)}: the account's quota is "
                    f"used up, so retrying cannot help (add credit or raise the limit): {message}",
                )
            wait = retry_after(headers)
            if wait is not None and wait > min(MAX_RETRY_AFTER_S, budget):
                return given_up(response, _too_long(wait, budget, why))
            limiter.on_limited(wait)
            now = time.monotonic()
            if now >= give_up_at() or body is None:
                return given_up(response, f"{stalled()}; last: {why}")
            waits += 1
            if sample is not None:
                sample.retrying(waits, max(0.0, limiter.paused_until - now))


def _learn(limiter: RateLimiter, response: httpx2.Response, tokens: int) -> None:
    """Tell the limiter of an answer (an event stream's tokens at its end)."""
    used = response.extensions.get("tui_eval.usage")
    if used is not None or not _is_stream(response):
        total = used.input + used.output if isinstance(used, ResponseTokens) else None
        limiter.on_response(
            response.status_code, header_map(response), tokens_reserved=tokens, tokens_used=total
        )
        return
    limiter.on_response(response.status_code, header_map(response))

    async def settle(_: bytes) -> None:
        found = response.extensions.get("tui_eval.usage") or ResponseTokens()
        limiter.settle_tokens(tokens, found.input + found.output)

    response.stream = _Passing(response.stream, settle, keep=False)


class RetryLayer(_Layer):
    """5xx, 408, timeouts and dropped connections retried `max_retries` times, after a
    jittered backoff or the server's Retry-After; a TLS certificate failure never."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        call: Call = request.extensions[CALL]
        sample, options = call.sample, call.options
        started = time.monotonic()
        history: list[str] = []
        again = call.body is not None  # an upload sent as it streams goes once
        for attempt in range(1 + (options.max_retries or 0) if again else 1):
            error: httpx2.TransportError | None = None
            wait: float | None = None
            response: httpx2.Response | None = None
            try:
                response = await self.inner.handle_async_request(request)
            except httpx2.TransportError as exc:
                if isinstance(exc, RequestFailed | InvalidHeader):
                    raise
                if not _transient(exc):
                    url = _shown_url(request.url)
                    certificate = _certificate_failure(exc)
                    if certificate:  # never retried: it does not fix itself
                        raise type(exc)(
                            f"could not verify the TLS certificate of {url}: {certificate}"
                        ) from exc
                    said = str(exc).strip() or type(exc).__name__
                    raise type(exc)(
                        _redacted(request, f"request to {url} failed: {said}")
                    ) from None
                error = exc
                history.append(_said(exc))
            else:
                status = response.status_code
                if status not in RETRYABLE or "tui_eval.error" in response.extensions:
                    response.extensions["tui_eval.retries"] = attempt + _retries(response)
                    return response
                why = f"HTTP {status}: {server_error(response.content)[0]}"
                history.append(why)
                wait = retry_after(header_map(response))
                budget = options.retry_budget or 0.0
                if wait is not None and wait > min(MAX_RETRY_AFTER_S, budget):
                    return given_up(response, _too_long(wait, budget, why))
            delay = wait if wait is not None else min(30.0, self.binding.backoff * 2**attempt)
            delay *= 1 + random.uniform(0, 0.25)
            last = attempt == (options.max_retries or 0) or not again
            late = time.monotonic() + delay - started > (options.retry_budget or 0.0)
            if last or late:
                summary = (
                    f"failed after {len(history)} attempts"
                    if last
                    else f"gave up: retrying would pass the {options.retry_budget:g}s retry budget"
                )
                said = f"request to {_shown_url(request.url)} {summary}; {_listed(history)}"
                return _give_up(request, said, error, response)
            if sample is not None:
                sample.retrying(attempt + 1, delay)
            await anyio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


def _give_up(
    request: httpx2.Request,
    message: str,
    error: httpx2.TransportError | None,
    response: httpx2.Response | None,
) -> httpx2.Response:
    """The server's last answer, saying why it is the last; else the last error."""
    if response is None:
        raise type(error or RequestFailed(""))(_redacted(request, message)) from error
    return given_up(response, message)  # redacted there


def given_up(response: httpx2.Response, why: str) -> httpx2.Response:
    """`response`, marked as the last answer to its request, and why."""
    response.extensions["tui_eval.error"] = _redacted(response.request, why)
    return response


def _too_long(wait: float, budget: float, why: str) -> str:
    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=min(wait, 1e9))
    longest = min(MAX_RETRY_AFTER_S, budget)
    return (
        f"quota exhausted until {until:%Y-%m-%d %H:%M:%S} UTC: asked to retry after {wait:g}s "
        f"(Retry-After), more than the {longest:g}s tui-eval waits at once (a quota, not a "
        f"rate); last: {why}"
    )


class MeterLayer(_Layer):
    """A 2xx answer's body parsed once and its usage priced into the sample's meter."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code >= 300:
            return response
        call: Call = request.extensions[CALL]
        sample, kind = call.sample, call.kind
        headers = header_map(response)
        stated = stated_cost(headers)
        if _is_stream(response):

            async def metered(whole: bytes) -> None:  # decoded by the wire layer
                model, used, seen = stream_usage(whole)
                response.extensions["tui_eval.usage"] = used
                if sample is not None:
                    cost = stated
                    if cost is None and seen:
                        asked = model or _asked_model(call.body)
                        cost = sample.run.runtime.price_of(kind, asked, used)
                    sample.meter.add(used, cost)

            response.stream = _Passing(response.stream, metered)
            return response
        parsed: Any = None
        if self.binding.provider is not None or "json" in headers.get("content-type", ""):
            try:
                parsed = pydantic_core.from_json(response.content)
            except ValueError:
                parsed = None
        response.extensions["tui_eval.json"] = parsed
        if isinstance(parsed, dict):
            used = response.extensions["tui_eval.usage"] = response_tokens(parsed)
            if sample is not None:  # a sample cut off by its timeout is priced by these
                if stated is None:
                    stated = list_price(sample.run.runtime, kind, parsed, call.body, used)
                sample.meter.add(used, stated)
        return response


class WireLayer(httpx2.AsyncBaseTransport):
    """Headers checked, `timeout` for the whole response, a badly framed, coded or oversized
    body refused; over the run's sockets or `send_with`, the user's own client."""

    def __init__(self, binding: Binding, send_with: httpx2.AsyncClient | None = None) -> None:
        self.binding = binding
        self.send_with = send_with
        self._proxies: dict[tuple[str, str], httpx2.Proxy | None] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        theirs = self.send_with
        if theirs is not None:  # their default headers, under the request's own
            for name, value in theirs.headers.multi_items():
                request.headers.setdefault(name, value)
        check_headers(request.headers.raw)
        call: Call = request.extensions[CALL]
        sample = call.sample
        timeout = call.options.timeout or DEFAULT_TIMEOUT_S
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as deadline:
            if theirs is not None:
                response = await theirs.send(request, stream=True)
            else:
                run = sample.run if sample is not None else self.binding.outside
                sockets = run.sockets.get(self._proxy(request.url))
                response = await sockets.handle_async_request(request)
            response.request = request
            try:
                _check_framing(response, request)
                limit = self.binding.max_bytes
                plain = "content-encoding" not in header_map(response)
                if plain and _is_stream(response) and response.status_code < 300:
                    response.stream = _Passing(response.stream, None, limit)
                    return response
                content = await _read_capped(response, limit, plain)
                if plain:  # the body kept in place (no second Response), read from memory
                    response.stream = httpx2.ByteStream(content)
                    response.read()
                    return response
            except BaseException:
                await response.aclose()
                raise
            # A 2xx event stream stays a stream (unread) for the layers above to meter,
            # settle and cache; any other body is handed on read.
            return decoded_response(
                response, content, stream=_is_stream(response) and response.status_code < 300
            )
        assert deadline.cancelled_caught
        raise httpx2.ReadTimeout(f"no complete response within {timeout:g}s (timeout)")

    def _proxy(self, url: httpx2.URL) -> httpx2.Proxy | None:
        """The environment's proxy for `url`, read once per host (~1 ms each)."""
        key = (url.scheme, url.host)
        proxies = self._proxies
        if key not in proxies:
            if len(proxies) > 64:
                proxies.clear()
            proxies[key] = proxy_for(url)
        return proxies[key]

    async def aclose(self) -> None:
        # A run's sockets close with the run, the user's client with the user; only the
        # connections this client opened outside any run are its own.
        await self.binding.aclose()


class _Passing(httpx2.AsyncByteStream):
    """A body handed on as it arrives (over `limit` bytes refused), then `at_end(whole)`
    (`at_end(b"")` when not `keep`: a hook that only needs the end keeps no copy)."""

    def __init__(
        self,
        inner: Any,
        at_end: Callable[[bytes], Awaitable[None]] | None,
        limit: int | None = None,
        *,
        keep: bool = True,
    ) -> None:
        self._inner = inner
        self._at_end = at_end
        self._limit = limit
        self._keep = keep and at_end is not None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        kept: list[bytes] = []
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if self._limit is not None and size > self._limit:
                raise ResponseTooLarge(f"sent a response body over {self._limit:,} bytes; refused")
            if self._keep:
                kept.append(chunk)
            yield chunk
        if self._at_end is not None:
            await self._at_end(b"".join(kept))

    async def aclose(self) -> None:
        await self._inner.aclose()


# -- helpers -------------------------------------------------------------------------------
_BAD_VALUE = re.compile(rb"[\r\n\0]")
_LEADING_MODEL = re.compile(rb'\{"model":"([^"\\]*)"[,}]')
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def check_headers(headers: Iterable[tuple[bytes, bytes]]) -> None:
    """Raise `InvalidHeader` for a value holding CR, LF or NUL, or a name not a token."""
    for name, value in headers:
        if _BAD_VALUE.search(value) or not _TOKEN.fullmatch(name):
            problem = header_problem(name.decode("latin-1"), value.decode("latin-1"))
            raise InvalidHeader(problem or f"header {name!r} cannot be sent")


def failure_text(response: httpx2.Response) -> str:
    """Why a response that is not a 2xx is no answer."""
    given = response.extensions.get("tui_eval.error")
    if given:
        return str(given)
    status, url = response.status_code, _shown_url(response.request.url)
    if status < 400:
        where = header_map(response).get("location", "(no Location header)")
        return (
            f"answered HTTP {status} for {url}, redirecting to {where}; redirects are not "
            "followed (the API key is sent only to base_url): set base_url to where the API is"
        )
    text = f"returned HTTP {status} for {url}: {server_error(response.content)[0]}"
    return _redacted(response.request, text)


def _redacted(request: httpx2.Request, message: str) -> str:
    return redact_secrets(message, credential_values(None, _text_headers(request)))


def _text_headers(request: httpx2.Request) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]


def _retries(response: httpx2.Response) -> int:
    return int(response.extensions.get("tui_eval.retries", 0))


def _listed(history: list[str]) -> str:
    if len(history) == 1:
        return history[0]
    return "; ".join(f"attempt {i}: {why}" for i, why in enumerate(history, 1))


def key_of(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The fingerprint of the key a request carries: with the base URL, its quota."""
    given = {lowered: value for name, value in headers if (lowered := name.lower()) in KEY_HEADERS}
    for name in KEY_HEADERS:
        value = given.get(name)
        if value:
            return key_fingerprint(value.decode("latin-1").split()[-1])
    return key_fingerprint(None)


def _keyed(request: httpx2.Request) -> list[tuple[bytes, bytes]]:
    return [
        (name, value)
        for name, value in request.headers.raw
        if (lowered := name.lower()) not in VOLATILE_HEADERS
        and not lowered.startswith(b"x-stainless")
    ]


def _asked_model(body: bytes | None) -> str:
    """The model a request's body names (read off its start when it leads: no parse)."""
    if not body or body[:1] != b"{":
        return ""
    leading = _LEADING_MODEL.match(body)
    if leading is not None:
        return leading[1].decode("utf-8", "replace")
    try:
        parsed = pydantic_core.from_json(body)
    except ValueError:
        return ""
    model = parsed.get("model") if isinstance(parsed, dict) else None
    return model if isinstance(model, str) else ""


def list_price(
    runtime: Runtime,
    kind: str,
    parsed: dict[str, Any],
    body: bytes | None,
    used: ResponseTokens,
) -> float | None:
    """The built-in price of an answer, by the model it names (else the one asked for)."""
    named = parsed.get("model")
    cost = runtime.price_of(kind, named, used) if isinstance(named, str) and named else None
    if cost is not None:
        return cost
    asked = _asked_model(body)  # parses the request's body: only when the answer's is unpriced
    return None if named == asked else runtime.price_of(kind, asked, used)


def _token_estimate(body: bytes | None) -> int:
    """Tokens a request may use: its prompt (~4 characters a token) and its most output."""
    if not body:
        return 0
    most = 0
    for name in (b'"max_tokens"', b'"max_completion_tokens"', b'"max_output_tokens"'):
        at = body.find(name)
        if at >= 0:
            digits = body[at + len(name) :].lstrip(b": ")
            end = 0
            while end < len(digits) and digits[end : end + 1].isdigit():
                end += 1
            most = max(most, int(digits[:end] or 0))
    return len(body) // 4 + min(most, 10_000_000)


def base_url(url: httpx2.URL) -> str:
    """`url` up to a known endpoint, without query or credentials."""
    path = url.path
    for endpoint in ENDPOINTS:
        at = path.find(endpoint)
        if at >= 0:
            path = path[:at]
            break
    return _shown_url(url, path).rstrip("/")


def _shown_url(url: httpx2.URL, path: str | None = None) -> str:
    """`url` (or `path` on its host) without credentials or query (a key may be there)."""
    port = f":{url.port}" if url.port is not None else ""
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}{port}{url.path if path is None else path}"


def header_map(response: httpx2.Response) -> dict[str, str]:
    """A response's headers by lower-case name, made once (read a dozen times a request)."""
    found: dict[str, str] | None = response.extensions.get(HEADERS)
    if found is None:
        found = response.extensions[HEADERS] = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in response.headers.raw
        }
    return found


def _is_stream(response: httpx2.Response) -> bool:
    return header_map(response).get("content-type", "").startswith("text/event-stream")


def _check_framing(response: httpx2.Response, request: httpx2.Request) -> None:
    """Refuse a body framed two ways or in a coding not asked for: never parse those bytes."""
    headers = header_map(response)
    codings = headers.get("transfer-encoding")
    if codings is not None and "content-length" in headers:
        # aiohttp refuses it; h11 (under trio) frames by the chunks, as RFC 9112 allows. A
        # response framed two ways is a smuggling shape: refused, its connection dropped.
        raise httpx2.RemoteProtocolError(
            "the response was framed two ways (Transfer-Encoding beside Content-Length); "
            "refused and its connection dropped"
        )
    if codings is not None:
        names = [c.strip().lower() for c in codings.split(",") if c.strip()]
        strange = [c for c in names if c not in ("chunked", "identity")]
        if strange:
            raise httpx2.RemoteProtocolError(
                f"the body came with Transfer-Encoding {', '.join(strange)}, which tui-eval "
                "does not decode (it sends no TE header); refused"
            )
    encodings = headers.get("content-encoding")
    if encodings is not None:
        # httpx2 asks for the codings it can decode here (brotli, zstd when installed).
        accepted = {"identity", *_names(request.headers.get("accept-encoding", ""))}
        for encoding in _names(encodings):
            if encoding not in accepted:
                raise httpx2.RemoteProtocolError(
                    f"sent a body with Content-Encoding {encoding!r}, which tui-eval cannot "
                    f"decode (it asks for {', '.join(sorted(accepted - {'identity'}))})"
                )


def _names(header: str) -> list[str]:
    return [c.split(";")[0].strip().lower() for c in header.split(",") if c.strip()]


async def _read_capped(response: httpx2.Response, limit: int, plain: bool) -> bytes:
    """The decoded body, refused once over `limit` bytes (a gzip bomb stops early)."""
    chunks: list[bytes] = []
    size = 0
    stream: Any = response.stream  # a plain body: nothing to decode, read as it comes
    try:
        async for chunk in stream if plain else response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(f"sent a response body over {limit:,} bytes; refused")
            chunks.append(chunk)
    except httpx2.DecodingError as exc:
        encoding = response.headers.get("content-encoding", "")
        raise httpx2.RemoteProtocolError(f"a corrupt {encoding} body: {exc}") from None
    finally:
        await stream.aclose()  # the stream, not the response: a plain one is read again
    return b"".join(chunks)


def decoded_response(
    response: httpx2.Response,
    content: bytes,
    request: httpx2.Request | None = None,
    *,
    stream: bool = False,
) -> httpx2.Response:
    """`response` with its decoded body (encoding and framing headers dropped); with
    `stream`, the body is handed on unread, as a stream."""
    headers = [
        (name, value)
        for name, value in response.headers.raw
        if name.lower() not in (b"content-encoding", b"content-length", b"transfer-encoding")
    ]
    return httpx2.Response(
        response.status_code,
        headers=headers,
        content=None if stream else content,
        stream=httpx2.ByteStream(content) if stream else None,
        request=request if request is not None else response.request,
        extensions={k: v for k, v in response.extensions.items() if k != HEADERS},
    )


def _transient(exc: httpx2.TransportError) -> bool:
    """Whether trying again may help (a dropped connection, not a bad answer or certificate)."""
    if _certificate_failure(exc):
        return False
    if isinstance(exc, httpx2.RemoteProtocolError):  # h11's words for a closed connection
        text = str(exc).lower()
        return "disconnect" in text or "peer closed" in text
    return isinstance(exc, httpx2.NetworkError | httpx2.TimeoutException)


def _certificate_failure(exc: BaseException) -> str:
    """Why a certificate failed verification, if that is what `exc` is ("" if not)."""
    import ssl

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return str(seen)
        if isinstance(seen, CertificateError):
            return str(seen) or "certificate verify failed"
        seen = seen.__cause__ or seen.__context__
    return ""


def _said(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    timeout = isinstance(exc, httpx2.TimeoutException) and "(timeout)" in text
    return text if timeout else f"connection failed: {text}"


def server_error(body: bytes) -> tuple[str, bool]:
    """What an error response says, and whether the account's quota is gone."""
    try:
        parsed = pydantic_core.from_json(body)
    except ValueError:
        return body[:300].decode("utf-8", "replace") or "(no body)", False
    if not isinstance(parsed, dict):
        return str(parsed)[:300], False
    error = parsed.get("error", parsed)
    if not isinstance(error, dict):
        return str(error)[:300], False
    message = error.get("message")
    text = str(message)[:300] if message else pydantic_core.to_json(error)[:300].decode()
    codes = (error.get("code"), error.get("type"))
    gone = "error" in parsed and any(isinstance(c, str) and c in QUOTA_GONE for c in codes)
    return text, gone

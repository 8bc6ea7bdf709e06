"""tui-eval's layer of the HTTP stack, as an httpx2 transport over the socket transport.

Every model request of a run passes here — the built-in providers' and, through
`tui_eval.http_client()`, any SDK's (OpenAI, Anthropic, pydantic-ai, LangChain, the
Agents SDK):

- **Secrets before the wire.** A header holding CR, LF or NUL is refused before anything
  is sent, naming the header and never its value (`InvalidHeader`).
- **The response cache** (`--cache`): a POST of a sample is answered from the run's
  cache when it has the answer (JSON bodies and event streams alike).
- **The shared rate limiter** of the quota (base URL, key) in the run's session: every
  request waits for its turn; a 429 pauses every worker; the pace is learned from
  headers and 429s (`limits.py`).
- **Metering.** Each answer's usage (read from the body, or from a stream's final event
  as it passes) is priced by genai-prices into the sample's meter — `max_cost` settles
  on it — or by a proxy's `x-litellm-response-cost`.
- **Retries.** 429s wait in the limiter within the retry budget; 5xx, 408, timeouts and
  connection errors are retried at most `max_retries` times (2) with jittered backoff;
  a TLS certificate failure never. A failure lists every attempt.
- **Deadlines and sizes.** `timeout` seconds (600) for a whole response, however the
  server drips it; a body over the size cap (decoded) is refused; a redirect is never
  followed (the key goes to the API only).

The sample a request belongs to is the current one (`current_sample()`) when there is
one, else the one the transport was made for.
"""

from __future__ import annotations

import datetime
import random
import re
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pydantic_core

from tui_eval.agents.http.cache import ResponseCache
from tui_eval.agents.http.context import RunContext, Runtime, SampleContext, current_sample
from tui_eval.agents.http.limits import RateLimiter, RateLimitWait, key_fingerprint
from tui_eval.agents.http.metering import (
    ResponseTokens,
    StreamUsage,
    response_tokens,
    stated_cost,
)
from tui_eval.agents.http.options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    ProviderOptions,
    header_problem,
)
from tui_eval.agents.http.rate_headers import retry_after
from tui_eval.agents.http.sockets import CertificateError
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
    {
        b"user-agent",
        b"content-length",
        b"host",
        b"accept-encoding",
        b"connection",
        b"idempotency-key",
        b"x-request-id",
        b"traceparent",
        b"tracestate",
        b"baggage",
    }
)
"""Headers that differ between two sends of one request: not part of a cache key (nor
are the SDKs' `x-stainless-*`); every other header is, credentials through their hash."""
ENDPOINTS = ("/v1/messages", "/chat/completions", "/responses", "/completions", "/embeddings")
"""Paths whose prefix is an SDK request's base URL (the quota its limiter keys on)."""


class RequestFailed(TuiEvalError, httpx2.TransportError):
    """A request of a built-in provider ended without an answer it can use (the message
    says why, with every attempt)."""


class ResponseTooLarge(TuiEvalError, httpx2.TransportError):
    """A response body over the size cap (counted decoded): refused, never retried."""


class InvalidHeader(TuiEvalError, httpx2.LocalProtocolError):
    """A request header that must not be sent (a line break or NUL, a bad name)."""


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What a built-in provider tells the layer about its request (an SDK's request is
    read from the request itself).

    Attributes:
        provider: whose wire format and prices (`openai`, `anthropic`).
        model: the model asked for (priced when the answer names none).
        base_url: the API's base URL: with the key, the quota whose limiter applies.
        options: the provider's options with the run's over them.
        usable: whether a stored answer is one the provider can read.
        strict: every outcome but a 2xx answer raises `RequestFailed`.
        backoff: the first retry's delay after an error, in seconds (doubling, at most
            30 s, plus up to 25% jitter).
        max_bytes: the largest response body accepted (decoded).
        key: `key_of()` the request's headers, when the provider worked it out once for
            all its requests (None: read from each request).
    """

    provider: str
    model: str
    base_url: str
    options: ProviderOptions
    usable: Callable[[dict[str, Any]], bool] | None = None
    strict: bool = True
    backoff: float = 0.5
    max_bytes: int = MAX_RESPONSE_BYTES
    key: str | None = None


class MeteredTransport(httpx2.AsyncBaseTransport):
    """tui-eval's layer over the socket transport of the running loop (see the module
    docstring).

    Args:
        proxy: the proxy requests go through (None: direct), as httpx2 chose it for the URL.
        sample: the sample requests belong to when none is current.
        options: options over the defaults and under the run's (a client's `timeout=`).

    Attributes:
        outside: the context of requests made outside any run (a runtime and connections
            of this transport's own), closed with it (`aclose`), or let go when it is
            collected.
    """

    def __init__(
        self,
        proxy: httpx2.Proxy | None = None,
        *,
        sample: SampleContext | None = None,
        options: ProviderOptions | None = None,
    ) -> None:
        self.proxy = proxy
        self.sample = sample
        self.options = options
        self.outside = RunContext()
        weakref.finalize(self, self.outside.drop)

    async def aclose(self) -> None:
        await self.outside.aclose()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        sample = current_sample() or self.sample
        run = sample.run if sample is not None else self.outside
        check_headers(request.headers.raw)
        given = request.extensions.get("tui_eval")
        info = given if isinstance(given, RequestInfo) else self._infer(request, run)
        return await _Send(request, info, sample, run).send(self.proxy)

    def _infer(self, request: httpx2.Request, run: RunContext) -> RequestInfo:
        """An SDK's request, read: whose format, which model, which quota."""
        options = ProviderOptions()
        if self.options is not None:
            options = options.over(self.options)
        if run.provider is not None:
            given = run.provider
            options = options.over(given.model_copy(update={"headers": {}, "base_url": None}))
        path = request.url.path
        anthropic = "anthropic-version" in request.headers or path.endswith("/v1/messages")
        model = ""
        body = _body(request)
        if body and body[:1] == b"{":
            try:
                parsed = pydantic_core.from_json(body)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict) and isinstance(parsed.get("model"), str):
                model = parsed["model"]
        return RequestInfo(
            provider="anthropic" if anthropic else "openai",
            model=model,
            base_url=sdk_base_url(request.url),
            options=options,
            strict=False,
        )


class _Send:
    """One request's way through the layer: the cache, its turns in the limiter, its
    attempts (what its retry decisions and its error go by) and the sample's meter."""

    def __init__(
        self,
        request: httpx2.Request,
        info: RequestInfo,
        sample: SampleContext | None,
        run: RunContext,
    ) -> None:
        self.request = request
        self.info = info
        self.sample = sample
        self.run = run
        self.meter = sample.meter if sample is not None else None
        self.body = _body(request)
        self.cache: ResponseCache | None = None
        self.cache_key = ""
        self.started = time.monotonic()
        self.retries = 0
        self.history: list[str] = []
        """Why each attempt failed, for the error that lists them."""

    @property
    def url(self) -> str:
        """The request's URL as errors show it."""
        return _shown_url(self.request.url)

    def redacted(self, message: str) -> str:
        """`message` without the request's credentials."""
        return redact_secrets(message, credential_values(None, _text_headers(self.request)))

    def fail(self, message: str) -> RequestFailed:
        """The error of a request given up."""
        return RequestFailed(self.redacted(message))

    def give_up(self, message: str, response: httpx2.Response | None) -> httpx2.Response:
        """An SDK gets the server's last answer to read as it does; a built-in provider
        the error saying why."""
        if response is not None and not self.info.strict:
            return response
        raise self.fail(message)

    def summary(self) -> str:
        """Why each attempt failed, in order."""
        if len(self.history) == 1:
            return self.history[0]
        return "; ".join(f"attempt {i}: {why}" for i, why in enumerate(self.history, 1))

    async def send(self, proxy: httpx2.Proxy | None) -> httpx2.Response:
        """The answer: from the cache, else from the API (through `proxy`), each attempt
        in its turn in the limiter, retried as the policy says."""
        request, info, run, sample = self.request, self.info, self.run, self.sample
        body = self.body
        cache = run.cache
        if (
            cache is not None
            and sample is not None
            and body is not None
            and request.method == "POST"
        ):
            self.cache_key = cache.key(
                info.provider, info.base_url, body, sample.index, _keyed(request)
            )
            hit = self._cached(cache)
            if hit is not None:
                return hit
            self.cache = cache
        sockets = run.sockets.get(proxy)
        options = info.options
        limiter = run.runtime.limiter(
            info.base_url,
            info.key if info.key is not None else key_of(request.headers.raw),
            rpm=options.rpm,
            tpm=options.tpm,
        )
        timeout = options.timeout or DEFAULT_TIMEOUT_S
        budget = (
            options.retry_budget if options.retry_budget is not None else DEFAULT_RETRY_BUDGET_S
        )
        max_retries = (
            options.max_retries if options.max_retries is not None else DEFAULT_MAX_RETRIES
        )
        tokens = _token_estimate(body)
        failures = 0

        def give_up_at() -> float:
            return limiter.give_up_at(self.started, budget)

        while True:
            try:
                await limiter.acquire(tokens, give_up_at)
            except RateLimitWait as exc:
                waited = time.monotonic() - (give_up_at() - budget)
                raise self.fail(
                    f"request to {self.url} still rate-limited after {waited:.0f}s with no "
                    f"request accepted (retry budget {budget:g}s): its turn would come "
                    f"{exc.wait_s:.3g}s later ({exc.why})"
                ) from None
            wait: float | None = None
            error: httpx2.TransportError | None = None
            last_response: httpx2.Response | None = None
            try:
                response, content = await _exchange(sockets, request, timeout, info.max_bytes)
            except httpx2.ConnectError as exc:
                if _certificate_failure(exc):  # never retried: it does not fix itself
                    raise self.fail(
                        f"could not verify the TLS certificate of {self.url}: "
                        f"{_certificate_failure(exc)}"
                    ) from None
                error = exc
                self.history.append(f"connection failed: {_described(exc)}")
            except (TimeoutError, httpx2.TimeoutException) as exc:
                error = exc if isinstance(exc, httpx2.TransportError) else httpx2.ReadTimeout("")
                self.history.append(f"no complete response within {timeout:g}s (timeout)")
            except httpx2.TransportError as exc:
                if not _transient(exc):
                    raise self.fail(f"request to {self.url} failed: {_described(exc)}") from None
                error = exc
                self.history.append(f"connection failed: {_described(exc)}")
            else:
                status = response.status_code
                if content is None:  # an event stream, metered as it passes
                    limiter.on_response(status, header_map(response))
                    return self._streamed(response, limiter, tokens)
                if status < 300:
                    return await self._answered(response, content, limiter, tokens)
                if status < 400:
                    where = header_map(response).get("location", "(no Location header)")
                    return self.give_up(
                        f"answered HTTP {status} for {self.url}, redirecting to {where}; "
                        "redirects are not followed (the API key is sent only to base_url): "
                        "set base_url to where the API is",
                        response,
                    )
                limiter.on_response(status, header_map(response))
                message, quota_gone = _server_error(content)
                self.history.append(f"HTTP {status}: {message}")
                if status == RATE_LIMITED and quota_gone:
                    return self.give_up(
                        f"returned HTTP 429 for {self.url}: the account's quota is used up, "
                        f"so retrying cannot help (add credit or raise the limit): {message}",
                        response,
                    )
                wait = retry_after(header_map(response))
                longest = min(MAX_RETRY_AFTER_S, budget)
                if wait is not None and wait > longest:
                    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(
                        seconds=min(wait, 1e9)
                    )
                    return self.give_up(
                        f"quota exhausted until {until:%Y-%m-%d %H:%M:%S} UTC: asked to retry "
                        f"after {wait:g}s (Retry-After), more than the {longest:g}s tui-eval "
                        f"waits at once (a quota, not a rate); last: HTTP {status}: {message}",
                        response,
                    )
                if status == RATE_LIMITED:
                    limiter.on_limited(wait)
                    now = time.monotonic()
                    deadline = give_up_at()
                    if now >= deadline or body is None:
                        waited = now - (deadline - budget)
                        return self.give_up(
                            f"request to {self.url} still rate-limited after {waited:.0f}s "
                            f"with no request accepted (retry budget {budget:g}s); last: "
                            f"HTTP {status}: {message}",
                            response,
                        )
                    self.retries += 1
                    if sample is not None:
                        sample.retrying(self.retries, max(0.0, limiter.paused_until - now))
                    continue
                if status not in RETRYABLE or body is None:
                    return self.give_up(
                        f"returned HTTP {status} for {self.url}: {message}", response
                    )
                last_response = response
            failures += 1
            if failures > max_retries or body is None:
                why = f"request to {self.url} failed after {len(self.history)} attempts; "
                if error is not None and not info.strict:
                    raise type(error)(self.redacted(why + self.summary())) from error
                return self.give_up(why + self.summary(), last_response)
            delay = wait if wait is not None else min(30.0, info.backoff * 2 ** (failures - 1))
            delay *= 1 + random.uniform(0, 0.25)
            if time.monotonic() + delay - self.started > budget:
                return self.give_up(
                    f"request to {self.url} gave up: retrying would pass the {budget:g}s "
                    f"retry budget; {self.summary()}",
                    last_response,
                )
            self.retries += 1
            if sample is not None:
                sample.retrying(self.retries, delay)
            await anyio.sleep(delay)

    async def _answered(
        self, response: httpx2.Response, content: bytes, limiter: RateLimiter, tokens: int
    ) -> httpx2.Response:
        """A 2xx answer: learn, meter, store, and hand back the (decoded) body."""
        info = self.info
        parsed: Any = None
        if info.strict or "json" in header_map(response).get("content-type", ""):
            try:
                parsed = pydantic_core.from_json(content)
            except ValueError:
                if info.strict:
                    snippet = content[:200].decode("utf-8", "replace")
                    raise RequestFailed(f"sent a malformed (non-JSON) body: {snippet!r}") from None
        used = response_tokens(parsed) if isinstance(parsed, dict) else ResponseTokens()
        limiter.on_response(
            response.status_code,
            header_map(response),
            tokens_reserved=tokens,
            tokens_used=used.input + used.output,
        )
        if isinstance(parsed, dict):
            if self.meter is not None:  # a sample cut off by its timeout is priced by these
                cost = stated_cost(header_map(response))
                if cost is None:
                    cost = list_price(self.run.runtime, info, parsed, used)
                self.meter.add(used, cost)
            if self.cache is not None:
                secrets = credential_values(None, _text_headers(self.request))
                await self.cache.put(self.cache_key, parsed, secrets)
        found = {"tui_eval.json": parsed, "tui_eval.retries": self.retries}
        if info.strict:  # a built-in provider reads the parsed body alone
            response.extensions.update(found)
            return response
        return decoded_response(response, content, found)

    def _cached(self, cache: ResponseCache) -> httpx2.Response | None:
        """The stored answer to this request, if the cache has one its reader can use."""
        meter, info = self.meter, self.info
        stream = cache.get_stream(self.cache_key)
        if stream is not None:
            if meter is not None:
                meter.add(cached=True)
            return httpx2.Response(
                200,
                headers=[(b"content-type", b"text/event-stream")],
                content=stream,
                request=self.request,
            )
        stored = cache.get(self.cache_key)
        if stored is None:
            return None
        if info.usable is not None and not info.usable(stored):
            cache.miss()  # readable but wrong ({}, no choices): ask the API again
            return None
        if meter is not None:  # a known model's price, at no cost this time
            used = response_tokens(stored)
            meter.add(used, list_price(self.run.runtime, info, stored, used), cached=True)
        return httpx2.Response(
            200,
            headers=[(b"content-type", b"application/json")],
            content=pydantic_core.to_json(stored),
            request=self.request,
            extensions={"tui_eval.json": stored, "tui_eval.retries": 0},
        )

    def _streamed(
        self, response: httpx2.Response, limiter: RateLimiter, tokens: int
    ) -> httpx2.Response:
        """An event stream, handed on as it arrives; at its end its usage is metered and
        the whole stream stored."""
        usage = StreamUsage()
        info, meter, cache = self.info, self.meter, self.cache
        inner = response.stream
        readable = header_map(response).get("content-encoding", "identity") == "identity"

        async def passing() -> AsyncIterator[bytes]:
            kept: list[bytes] | None = [] if cache is not None and readable else None
            size = 0
            assert isinstance(inner, httpx2.AsyncByteStream)
            async for chunk in inner:
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise ResponseTooLarge(
                        f"sent an event stream over {MAX_RESPONSE_BYTES:,} bytes; refused"
                    )
                if readable:
                    usage.feed(chunk)
                if kept is not None:
                    kept.append(chunk)
                yield chunk
            used = usage.tokens()
            limiter.settle_tokens(tokens, used.input + used.output)
            if meter is not None:
                cost = stated_cost(header_map(response))
                if cost is None and usage.seen:
                    cost = self.run.runtime.price_of(info.provider, usage.model or info.model, used)
                meter.add(used, cost)
            if cache is not None and kept is not None:
                secrets = credential_values(None, _text_headers(self.request))
                await cache.put_stream(self.cache_key, b"".join(kept), secrets)

        return httpx2.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=_Stream(passing(), inner),
            request=response.request,
            extensions=response.extensions,
        )


async def _exchange(
    sockets: httpx2.AsyncBaseTransport, request: httpx2.Request, timeout: float, max_bytes: int
) -> tuple[httpx2.Response, bytes | None]:
    """Send once; the decoded body within `timeout` (None for an event stream, whose
    headers alone are waited for)."""
    # `anyio.fail_after` without its two generator frames (~4 µs a request): only the
    # deadline cancels this scope, so a caught cancellation is the timeout.
    with anyio.CancelScope(deadline=anyio.current_time() + timeout) as deadline:
        response = await sockets.handle_async_request(request)
        response.request = request
        try:
            _check_framing(response)
            if _is_stream(response) and response.status_code < 300:
                return response, None
            return response, await _read_capped(response, max_bytes)
        except BaseException:
            await response.aclose()
            raise
    assert deadline.cancelled_caught
    raise TimeoutError


class _Stream(httpx2.AsyncByteStream):
    def __init__(self, chunks: AsyncIterator[bytes], inner: Any) -> None:
        self._chunks = chunks
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


# -- helpers -------------------------------------------------------------------------------
_BAD_VALUE = re.compile(rb"[\r\n\0]")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def check_headers(headers: Iterable[tuple[bytes, bytes]]) -> None:
    """Refuse a request whose headers cannot be sent as they are.

    Raises:
        InvalidHeader: a header's value holds CR, LF or NUL, or its name is not a token;
            the message names the header, never its value.
    """
    for name, value in headers:
        if _BAD_VALUE.search(value) or not _TOKEN.fullmatch(name):
            problem = header_problem(name.decode("latin-1"), value.decode("latin-1"))
            raise InvalidHeader(problem or f"header {name!r} cannot be sent")


def _text_headers(request: httpx2.Request) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]


def key_of(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The fingerprint of the key a request carries (its `Authorization`, `x-api-key` or
    `api-key`): with the base URL, the quota whose limiter it goes through."""
    given = {lowered: value for name, value in headers if (lowered := name.lower()) in KEY_HEADERS}
    for name in KEY_HEADERS:
        value = given.get(name)
        if value:
            return key_fingerprint(value.decode("latin-1").split()[-1])
    return key_fingerprint(None)


def _keyed(request: httpx2.Request) -> list[tuple[bytes, bytes]]:
    """The headers a cache key holds (volatile ones left out)."""
    return [
        (name, value)
        for name, value in request.headers.raw
        if (lowered := name.lower()) not in VOLATILE_HEADERS
        and not lowered.startswith(b"x-stainless")
    ]


def _body(request: httpx2.Request) -> bytes | None:
    """The request's body when it is in memory (None: an upload, sent as it streams)."""
    try:
        return request.content
    except httpx2.RequestNotRead:
        return None


def _token_estimate(body: bytes | None) -> int:
    """Tokens a request may use, for a tokens-per-minute limit: its prompt (a character is
    about a quarter of a token) and the most it may write."""
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


def sdk_base_url(url: httpx2.URL) -> str:
    """The base URL of an SDK's request: its URL up to a known endpoint, without query or
    credentials (`https://api.openai.com/v1` for `.../v1/chat/completions`)."""
    path = url.path
    for endpoint in ENDPOINTS:
        at = path.find(endpoint)
        if at >= 0:
            path = path[:at]
            break
    return _shown_url(url, path).rstrip("/")


def _shown_url(url: httpx2.URL, path: str | None = None) -> str:
    """`url` (with `path` instead of its own) as errors show it: never its credentials,
    nor its query (an `api-version`, but some APIs take a key there)."""
    port = f":{url.port}" if url.port is not None else ""
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}{port}{url.path if path is None else path}"


def header_map(response: httpx2.Response) -> dict[str, str]:
    """A response's headers as a plain dict, lower-case names (read many times a request:
    a dict lookup, not a scan of httpx2's list)."""
    mapped = response.extensions.get("tui_eval.headers")
    if mapped is None:
        mapped = response.extensions["tui_eval.headers"] = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in response.headers.raw
        }
    return mapped


def _is_stream(response: httpx2.Response) -> bool:
    return header_map(response).get("content-type", "").startswith("text/event-stream")


def _check_framing(response: httpx2.Response) -> None:
    """Refuse a transfer coding other than chunked (`gzip, chunked`) and a content coding
    httpx2 cannot decode (`br` without brotli): their bytes must never reach a JSON parser."""
    codings = header_map(response).get("transfer-encoding")
    if codings is not None and "content-length" in header_map(response):
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
    encodings = header_map(response).get("content-encoding")
    if encodings is not None:
        from httpx2._decoders import SUPPORTED_DECODERS  # what httpx2 can decode here

        for encoding in (e.strip().lower() for e in encodings.split(",") if e.strip()):
            if encoding not in SUPPORTED_DECODERS:
                raise httpx2.RemoteProtocolError(
                    f"sent a body with Content-Encoding {encoding!r}, which tui-eval cannot "
                    f"decode (it asks for {', '.join(sorted(set(SUPPORTED_DECODERS) - {'identity'}))})"
                )


async def _read_capped(response: httpx2.Response, limit: int) -> bytes:
    """The decoded body, refused once over `limit` bytes (a gzip bomb stops early)."""
    chunks: list[bytes] = []
    size = 0
    plain = "content-encoding" not in header_map(response)
    stream = response.stream  # a plain body straight from the sockets: nothing to decode
    assert isinstance(stream, httpx2.AsyncByteStream)
    try:
        async for chunk in stream if plain else response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(f"sent a response body over {limit:,} bytes; refused")
            chunks.append(chunk)
    except httpx2.DecodingError as exc:
        encoding = header_map(response).get("content-encoding", "")
        raise httpx2.RemoteProtocolError(f"a corrupt {encoding} body: {exc}") from None
    finally:
        await response.aclose()
    return b"".join(chunks)


def decoded_response(
    response: httpx2.Response,
    content: bytes,
    extensions: Mapping[str, Any] | None = None,
    request: httpx2.Request | None = None,
) -> httpx2.Response:
    """`response` with its decoded body (its encoding and framing headers dropped), for
    `request` (default: the response's own)."""
    headers = [
        (name, value)
        for name, value in response.headers.raw
        if name.lower() not in (b"content-encoding", b"content-length", b"transfer-encoding")
    ]
    return httpx2.Response(
        response.status_code,
        headers=headers,
        content=content,
        request=request if request is not None else response.request,
        extensions={**response.extensions, **(extensions or {})},
    )


def _transient(exc: httpx2.TransportError) -> bool:
    """Whether trying again may help: a connection refused, reset or dropped; not a
    malformed answer, a proxy's refusal or a bad URL."""
    if isinstance(exc, httpx2.RemoteProtocolError):
        return "disconnect" in str(exc).lower()
    return isinstance(exc, httpx2.NetworkError)


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


def _described(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


def _server_error(body: bytes) -> tuple[str, bool]:
    """What an error response says, shortly (its `error.message`, else its text), and
    whether it says the account's quota is gone (a 429 that no wait fixes)."""
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


def list_price(
    runtime: Runtime, info: RequestInfo, parsed: Mapping[str, Any], used: ResponseTokens
) -> float | None:
    """The built-in price of an answer, by the model it names (else the one asked for)."""
    model = parsed.get("model")
    named = model if isinstance(model, str) and model else info.model
    cost = runtime.price_of(info.provider, named, used)
    if cost is None and named != info.model:
        cost = runtime.price_of(info.provider, info.model, used)
    return cost

"""What every HTTP provider shares: pooled connections, one rate limiter per quota,
time-budgeted retries, the response cache, prices and secret redaction."""

from __future__ import annotations

import datetime
import ipaddress
import json
import random
import socket
import time
import zlib
from typing import Any
from urllib.parse import urlsplit

import anyio
import pydantic_core

from tui_eval.agents.providers.base import ProviderError
from tui_eval.agents.providers.connections import (
    ConnectionPool,
    Headers,
    ResponseTooLarge,
    TransportError,
    header_map,
)
from tui_eval.agents.providers.context import RunContext, current_sample, default_session
from tui_eval.agents.providers.limits import (
    RateLimiter,
    RateLimitWait,
    key_fingerprint,
    retry_after,
)
from tui_eval.agents.providers.metering import (
    ResponseTokens,
    SampleMeter,
    price_of,
    response_tokens,
    stated_cost,
)
from tui_eval.agents.providers.settings import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    ProviderOptions,
)
from tui_eval.util.secrets import credential_values

RATE_LIMITED = frozenset({429})
RETRYABLE = frozenset({408, 409, 425, 500, 502, 503, 504, 529})
MAX_RETRY_AFTER_S = 60.0
"""A server asking for a longer single wait (a spent daily quota) fails the request at once."""
MAX_RESPONSE_BYTES = 20_000_000
"""A larger response body is an error, never hundreds of MB held in memory."""
USER_AGENT = b"tui-eval"


class HTTPProvider:
    """Base of the providers that speak JSON over HTTP.

    - **Rate limits.** Every request goes through the one `RateLimiter` of its quota (base
      URL and key) in the run's `ProviderSession`, shared with every other worker: a 429
      pauses them all, the pace is learned from 429s and rate-limit headers (see
      `limits.py`). A rate-limited request waits while the run makes progress; it fails
      only when nothing was accepted for `retry_budget` seconds (queued time included),
      when the server asks for a longer wait than that, or at once when a 429 says the
      quota is gone (`insufficient_quota`).
    - **Bodies.** gzip/deflate are decoded; a redirect is an error (never followed: the key
      goes to `base_url` only).
    - **Errors.** 5xx, 408 and timeouts are retried with exponential backoff and jitter
      (honouring `Retry-After`), at most `max_retries` times; other 4xx fail at once with
      the server's message.
    - **Deadlines.** `timeout` seconds for a whole response, however the server drips it;
      a body over `max_response_bytes` is an error.
    - **Connections** are kept alive and reused (`connections.py`), one pool per run.
    - **The run** is read from the current sample (`context.current_sample()`): its
      provider options, cache, session and meter.
    - **Secrets.** The API key lives only in request headers and is redacted from errors.

    Args:
        model: the model name sent to the server.
        base_url: the API's base URL.
        api_key: the key (sent as a header, never shown).
        timeout: seconds for a whole request, from sending it to the last byte.
        max_retries: retries after server errors and timeouts (429s are not counted).
        retry_budget: seconds a request may keep waiting out rate limits and errors, from
            the later of its start and the last response the API accepted.
        rpm: requests per minute never to exceed (otherwise learned).
        tpm: tokens per minute never to exceed (otherwise learned, if the API says).
        headers: extra headers for every request.
        backoff: the first retry's delay in seconds (doubling each time, capped at 30 s).
        max_response_bytes: the largest response body accepted.
    """

    provider_name = "http"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_budget: float = DEFAULT_RETRY_BUDGET_S,
        rpm: float | None = None,
        tpm: float | None = None,
        headers: dict[str, str] | None = None,
        backoff: float = 0.5,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.model = model
        self._api_key = api_key
        self._fingerprint = key_fingerprint(api_key)
        self.options = ProviderOptions(
            timeout=timeout,
            max_retries=max_retries,
            retry_budget=retry_budget,
            rpm=rpm,
            tpm=tpm,
            base_url=base_url.rstrip("/"),
            headers=dict(headers or {}),
        )
        self.backoff = backoff
        self.max_response_bytes = max_response_bytes
        self._pools: dict[tuple[int, str], ConnectionPool] = {}
        self._resolved: tuple[ProviderOptions | None, ProviderOptions, Headers] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        """Where requests go (before any run-level override)."""
        return self.options.base_url or ""

    @property
    def timeout(self) -> float:
        """Seconds for one whole request (before any run-level override)."""
        return self.options.timeout or DEFAULT_TIMEOUT_S

    @property
    def max_retries(self) -> int:
        """Retries after server errors and timeouts (before any run-level override)."""
        return self.options.max_retries if self.options.max_retries is not None else 0

    def configure(self, options: ProviderOptions) -> None:
        """Apply `options` over this provider's own (a spec's `?rpm=...`, say)."""
        self.options = self.options.over(options)
        self._resolved = None

    # -- what subclasses provide ---------------------------------------------------------
    def headers(self) -> dict[str, str]:  # pragma: no cover - overridden
        """The headers every request of this provider carries (the key among them)."""
        return {}

    def usable(self, body: dict[str, Any]) -> bool:
        """Whether a stored response is one this provider can read (a cache entry that is
        not is a miss, never a failed sample)."""
        return True

    def _secrets(self, options: ProviderOptions) -> list[str]:
        """What a stored response must not contain: the key, credential headers' values."""
        return credential_values(self._api_key, [*self.headers().items(), *options.headers.items()])

    # -- options, pools, limiter ---------------------------------------------------------
    def effective_options(self) -> ProviderOptions:
        """This provider's options with the current run's (suite and command line) over them."""
        return self._settings(_current_run())[0]

    def _settings(self, run: RunContext | None) -> tuple[ProviderOptions, Headers]:
        given = run.provider if run is not None else None
        resolved = self._resolved
        if resolved is None or resolved[0] is not given:
            options = self.options.over(given)
            wire = [
                (b"Content-Type", b"application/json"),
                (b"Accept", b"application/json"),
                (b"Accept-Encoding", b"gzip, deflate"),
                (b"User-Agent", USER_AGENT),
                *((k.encode(), v.encode()) for k, v in self.headers().items()),
                *((k.encode(), v.encode()) for k, v in options.headers.items()),
            ]
            resolved = self._resolved = (given, options, wire)
        return resolved[1], resolved[2]

    def _pool(self, base_url: str, run: RunContext | None) -> ConnectionPool:
        """The connection pool of the run (closed when it ends), or a provider-wide one."""
        closing = run is not None and run.closes_clients
        key = (id(run) if closing else 0, base_url)
        pool = self._pools.get(key)
        if pool is None:
            try:
                pool = self._pools[key] = ConnectionPool(base_url)
            except ValueError as exc:  # a proxy variable tui-eval cannot use
                raise self._fail(str(exc)) from None
            if run is not None and closing:
                run.close_at_end(lambda: self._close(key))
        return pool

    def limiter(self) -> RateLimiter:
        """The rate limiter this provider's requests go through now (the current run's
        session's, else the default session's)."""
        run = _current_run()
        options = self._settings(run)[0]
        session = run.session if run is not None else default_session()
        return session.limiter(
            options.base_url or "", self._fingerprint, rpm=options.rpm, tpm=options.tpm
        )

    async def _close(self, key: tuple[int, str]) -> None:
        pool = self._pools.pop(key, None)
        if pool is not None:
            await pool.aclose()

    async def aclose(self) -> None:
        """Close every connection this provider opened."""
        for key in list(self._pools):
            await self._close(key)

    # -- requests -------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """`text` with the API key replaced by `***`."""
        return text.replace(self._api_key, "***") if self._api_key else text

    def _fail(self, message: str) -> ProviderError:
        return ProviderError(self.redact(f"{self.provider_name} {message}"))

    async def post_json(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """POST `payload`; returns the parsed body and how many retries it took."""
        sample = current_sample()
        run = sample.run if sample is not None else None
        options, wire_headers = self._settings(run)
        base_url = (options.base_url or "").rstrip("/")
        url = f"{base_url}{path}"
        pool = self._pool(base_url, run)
        session = run.session if run is not None else default_session()
        limiter = session.limiter(base_url, self._fingerprint, rpm=options.rpm, tpm=options.tpm)
        timeout = options.timeout or DEFAULT_TIMEOUT_S
        budget = (
            options.retry_budget if options.retry_budget is not None else DEFAULT_RETRY_BUDGET_S
        )
        max_retries = (
            options.max_retries if options.max_retries is not None else DEFAULT_MAX_RETRIES
        )
        body = pydantic_core.to_json(payload)
        meter = sample.meter if sample is not None else None
        cache = run.cache if run is not None else None
        cache_key = ""
        if cache is not None and meter is not None and sample is not None:
            cache_key = cache.key(self.provider_name, base_url, body, sample.index, wire_headers)
            stored = cache.get(cache_key)
            if stored is not None and not self.usable(stored):
                cache.miss()  # readable but wrong ({}, no choices): ask the API again
                stored = None
            if stored is not None:
                meter.requests += 1
                meter.cached += 1
                meter.count_tokens(response_tokens(stored))
                if self._list_price(stored, response_tokens(stored)) is not None:
                    meter.priced = True  # a known model, at no cost this time
                return stored, 0
        tokens = len(body) // 4 + int(payload.get("max_tokens") or 0)
        started = time.monotonic()
        retries = failures = 0

        def give_up_at() -> float:
            return limiter.give_up_at(started, budget)

        while True:
            try:
                await limiter.acquire(tokens, give_up_at)
            except RateLimitWait as exc:
                waited = time.monotonic() - (give_up_at() - budget)
                raise self._fail(
                    f"request to {url} still rate-limited after {waited:.0f}s with no request "
                    f"accepted (retry budget {budget:g}s): its turn would come "
                    f"{exc.wait_s:.3g}s later ({exc.why})"
                ) from None
            wait: float | None = None
            try:  # `timeout` bounds the whole exchange (a timer in the pool, not a scope)
                status, raw_headers, data = await pool.post(
                    url, body, wire_headers, timeout, self.max_response_bytes
                )
            except TimeoutError:
                last = f"no complete response within {timeout:g}s (timeout)"
            except TransportError as exc:
                last = f"connection failed: {exc}"
            except ResponseTooLarge:
                raise self._fail(
                    f"sent a response body over {self.max_response_bytes:,} bytes for {url}; refused"
                ) from None
            else:
                headers = header_map(raw_headers)
                data = self._decoded(data, headers, url)
                if status < 300:
                    parsed = self._parse(data)
                    used = response_tokens(parsed)
                    limiter.on_response(
                        status,
                        headers,
                        tokens_reserved=tokens,
                        tokens_used=used.input + used.output,
                    )
                    if meter is not None:
                        self._meter(meter, parsed, used, headers)
                    if cache is not None:
                        cache.put(cache_key, parsed, self._secrets(options))
                    return parsed, retries
                if status < 400:
                    # Never followed: the key would go wherever Location points.
                    where = headers.get("location", "(no Location header)")
                    raise self._fail(
                        f"answered HTTP {status} for {url}, redirecting to {where}; redirects "
                        "are not followed (the API key is sent only to base_url): set "
                        "base_url to where the API is"
                    )
                limiter.on_response(status, headers)
                message = self._server_message(data)
                last = f"HTTP {status}: {message}"
                if status in RATE_LIMITED and _quota_gone(data):
                    raise self._fail(
                        f"returned HTTP 429 for {url}: the account's quota is used up, so "
                        f"retrying cannot help (add credit or raise the limit): {message}"
                    )
                wait = retry_after(headers)
                longest = min(MAX_RETRY_AFTER_S, budget)
                if wait is not None and wait > longest:
                    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(
                        seconds=min(wait, 1e9)
                    )
                    raise self._fail(
                        f"quota exhausted until {until:%Y-%m-%d %H:%M:%S} UTC: asked to retry "
                        f"after {wait:g}s (Retry-After), more than the {longest:g}s tui-eval "
                        f"waits at once (a quota, not a rate); last: {last}"
                    )
                if status in RATE_LIMITED:
                    limiter.on_limited(wait)
                    now = time.monotonic()
                    deadline = give_up_at()
                    if now >= deadline:
                        waited = now - (deadline - budget)
                        raise self._fail(
                            f"request to {url} still rate-limited after {waited:.0f}s with no "
                            f"request accepted (retry budget {budget:g}s); last: {last}"
                        )
                    retries += 1
                    if sample is not None:
                        sample.retrying(retries, max(0.0, limiter.paused_until - now))
                    continue
                if status not in RETRYABLE:
                    raise self._fail(f"returned HTTP {status} for {url}: {message}")
            failures += 1
            if failures > max_retries:
                raise self._fail(f"request to {url} failed after {failures} attempts; last: {last}")
            delay = wait if wait is not None else min(30.0, self.backoff * 2 ** (failures - 1))
            delay *= 1 + random.uniform(0, 0.25)
            if time.monotonic() + delay - started > budget:
                raise self._fail(
                    f"request to {url} gave up: retrying would pass the {budget:g}s retry "
                    f"budget; last: {last}"
                )
            retries += 1
            if sample is not None:
                sample.retrying(retries, delay)
            await anyio.sleep(delay)

    def _decoded(self, data: bytes, headers: dict[str, str], url: str) -> bytes:
        """The body with its `Content-Encoding` undone (gzip, deflate; proxies add them).

        Raises:
            ProviderError: an encoding tui-eval cannot decode (named), or a corrupt body.
        """
        encodings = [
            e.strip().lower() for e in headers.get("content-encoding", "").split(",") if e.strip()
        ]
        for encoding in reversed(encodings):
            if encoding == "identity":
                continue
            if encoding not in ("gzip", "x-gzip", "deflate"):
                raise self._fail(
                    f"sent a body with Content-Encoding {encoding!r} for {url}, which tui-eval "
                    "cannot decode (it asks for gzip or deflate at most)"
                )
            try:
                data = _decompress(data, encoding, self.max_response_bytes)
            except ResponseTooLarge:
                raise self._fail(
                    f"sent a {encoding} body over {self.max_response_bytes:,} bytes once "
                    f"decoded for {url}; refused"
                ) from None
            except (zlib.error, EOFError) as exc:
                raise self._fail(f"sent a corrupt {encoding} body for {url}: {exc}") from None
        return data

    def _meter(
        self,
        meter: SampleMeter,
        parsed: dict[str, Any],
        used: ResponseTokens,
        headers: dict[str, str],
    ) -> None:
        # Priced by the model, wherever it is served; a proxy's own bill comes first.
        meter.requests += 1
        meter.count_tokens(used)
        cost = stated_cost(headers)
        if cost is None:
            cost = self._list_price(parsed, used)
        if cost is not None:
            meter.cost += cost
            meter.priced = True

    def _list_price(self, parsed: dict[str, Any], used: ResponseTokens) -> float | None:
        """The built-in price of a response, by the model it names (else the one asked for)."""
        model = parsed.get("model")
        named = model if isinstance(model, str) and model else self.model
        cost = price_of(self.provider_name, named, used)
        if cost is None and named != self.model:
            cost = price_of(self.provider_name, self.model, used)
        return cost

    def _parse(self, body: bytes) -> dict[str, Any]:
        try:
            parsed = pydantic_core.from_json(body)
        except ValueError:
            snippet = body[:200].decode("utf-8", "replace")
            raise self._fail(f"sent a malformed (non-JSON) body: {snippet!r}") from None
        if not isinstance(parsed, dict):
            raise ProviderError(
                f"{self.provider_name} sent JSON that is not an object: {str(parsed)[:200]!r}"
            )
        return parsed

    @staticmethod
    def _server_message(body: bytes) -> str:
        try:
            parsed = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return body[:300].decode("utf-8", "replace") or "(no body)"
        if isinstance(parsed, dict):
            error = parsed.get("error", parsed)
            if isinstance(error, dict):
                return str(error.get("message") or json.dumps(error)[:300])
            return str(error)[:300]
        return str(parsed)[:300]


def _current_run() -> RunContext | None:
    sample = current_sample()
    return sample.run if sample is not None else None


QUOTA_GONE = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})
"""Error codes of a 429 that no wait fixes: the account has no quota or credit left."""


def _quota_gone(body: bytes) -> bool:
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return False
    return any(error.get(name) in QUOTA_GONE for name in ("code", "type"))


def _decompress(data: bytes, encoding: str, max_bytes: int) -> bytes:
    """Undo one content encoding, refusing output over `max_bytes` (a zip bomb)."""
    if encoding != "deflate":
        wbits = 16 + zlib.MAX_WBITS  # gzip
    elif len(data) >= 2 and data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0:
        wbits = zlib.MAX_WBITS  # zlib-wrapped deflate, as the RFC says
    else:
        wbits = -zlib.MAX_WBITS  # raw deflate, as some servers send it
    out = bytearray()  # one buffer: a body of many tiny members costs no more than one
    while True:  # gzip members one after another are one body (RFC 1952, 2.2)
        decoder = zlib.decompressobj(wbits)
        out += decoder.decompress(data, max_bytes + 1 - len(out))
        if decoder.unconsumed_tail or len(out) + len(tail := decoder.flush()) > max_bytes:
            raise ResponseTooLarge
        out += tail
        if not decoder.eof:
            raise EOFError("the body ends before the compressed stream does")
        if not (data := decoder.unused_data) or wbits != 16 + zlib.MAX_WBITS:
            return bytes(out)


def is_local(base_url: str) -> bool:
    """Whether `base_url` names this machine, however the host is written.

    `localhost` (with or without the root dot), any loopback address in any form an OS
    accepts (`127.1`, `2130706433`, `0177.0.0.1`, `0x7f.0.0.1`, `[::1]`,
    `[::ffff:127.0.0.1]`) and `0.0.0.0`. Prices never depend on it: the model decides
    (a LiteLLM proxy on localhost serving `gpt-4o-mini` is priced).
    """
    try:
        host = (urlsplit(base_url).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if host == "localhost":
        return True
    address = _ip_address(host)
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`host` as an IP address, reading the IPv4 forms `inet_aton` reads (octal, hex,
    fewer than four parts, one 32-bit number) as the OS would."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not host or not all(c in "0123456789abcdefx." for c in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def malformed(provider: str, detail: str) -> ProviderError:
    """The error for a body that parsed as JSON but is not the wire format."""
    return ProviderError(f"{provider} sent a malformed response: {detail}")

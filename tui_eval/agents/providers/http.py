"""What every HTTP provider shares: one client per run, timeouts, retries, secret redaction."""

from __future__ import annotations

import json
import random
from typing import Any

import anyio
import httpx

from tui_eval.agents.providers.base import ProviderError, notify_retry, run_resources

RETRYABLE = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
MAX_RETRY_AFTER_S = 60.0
"""A server asking for a longer wait fails the request at once (with the wait it asked)."""
MAX_RESPONSE_BYTES = 20_000_000
"""A larger response body is an error, never hundreds of MB held in memory."""


class _TooLarge(Exception):
    pass


class HTTPProvider:
    """Base of the providers that speak JSON over HTTP.

    Every request has a deadline: `timeout` seconds for the whole response, however the
    server drips it. 429, 5xx and timeouts are retried with exponential backoff and
    jitter, honouring `Retry-After` up to `MAX_RETRY_AFTER_S` (a longer wait fails the
    request at once), at most `max_retries` times; other 4xx fail at once with the
    server's message. A body over `max_response_bytes` is an error. The API key lives only
    in request headers and is redacted from every error message.

    Args:
        model: the model name sent to the server.
        base_url: the API's base URL.
        api_key: the key (sent as a header, never shown).
        timeout: seconds for a whole request, from sending it to the last byte.
        max_retries: retries after the first attempt.
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
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_response_bytes = max_response_bytes
        self._clients: dict[int, httpx.AsyncClient] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    # -- what subclasses provide ---------------------------------------------------------
    def headers(self) -> dict[str, str]:  # pragma: no cover - overridden
        """The headers every request of this provider carries (the key among them)."""
        return {}

    # -- the shared client ---------------------------------------------------------------
    def _client(self) -> httpx.AsyncClient:
        """The client of the current run (closed when the run ends), or a provider-wide one."""
        scope = run_resources.get()
        key = id(scope) if scope is not None else 0
        client = self._clients.get(key)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), headers=self.headers())
            self._clients[key] = client
            if scope is not None:
                scope.append(lambda: self._close(key))
        return client

    async def _close(self, key: int) -> None:
        client = self._clients.pop(key, None)
        if client is not None:
            await client.aclose()

    async def aclose(self) -> None:
        """Close every client this provider opened."""
        for key in list(self._clients):
            await self._close(key)

    # -- requests -------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """`text` with the API key replaced by `***`."""
        return text.replace(self._api_key, "***") if self._api_key else text

    async def post_json(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """POST `payload`; returns the parsed body and how many retries it took."""
        url = f"{self.base_url}{path}"
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                with anyio.fail_after(self.timeout):
                    status, headers, body = await self._exchange(url, payload)
            except (TimeoutError, httpx.TimeoutException):
                last = f"no complete response within {self.timeout:g}s (timeout)"
            except httpx.TransportError as exc:
                last = f"connection failed: {type(exc).__name__}: {exc}"
            except _TooLarge:
                raise ProviderError(
                    f"{self.provider_name} sent a response body over "
                    f"{self.max_response_bytes:,} bytes for {url}; refused"
                ) from None
            else:
                if status < 400:
                    return self._parse(body), attempt
                message = self._server_message(body)
                if status not in RETRYABLE:
                    raise ProviderError(
                        self.redact(
                            f"{self.provider_name} returned HTTP {status} for {url}: {message}"
                        )
                    )
                last = f"HTTP {status}: {message}"
                retry_after = _retry_after(headers)
                if retry_after is not None and retry_after > MAX_RETRY_AFTER_S:
                    raise ProviderError(
                        self.redact(
                            f"{self.provider_name} asked to retry after {retry_after:g}s "
                            f"(Retry-After), more than the {MAX_RETRY_AFTER_S:g}s tui-eval "
                            f"waits; last: {last}"
                        )
                    )
            if attempt == self.max_retries:
                break
            delay = retry_after if retry_after is not None else min(30.0, self.backoff * 2**attempt)
            delay *= 1 + random.uniform(0, 0.25) if retry_after is None else 1
            notify_retry(attempt + 1, delay)
            await anyio.sleep(delay)
        raise ProviderError(
            self.redact(
                f"{self.provider_name} request to {url} failed after {self.max_retries + 1} attempts; last: {last}"
            )
        )

    async def _exchange(
        self, url: str, payload: dict[str, Any]
    ) -> tuple[int, httpx.Headers, bytes]:
        """One request: its status, headers and body, read up to `max_response_bytes`."""
        async with self._client().stream("POST", url, json=payload) as response:
            declared = response.headers.get("content-length")
            if (
                declared is not None
                and declared.isdigit()
                and int(declared) > self.max_response_bytes
            ):
                raise _TooLarge
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise _TooLarge
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)

    def _parse(self, body: bytes) -> dict[str, Any]:
        try:
            parsed = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            snippet = body[:200].decode("utf-8", "replace")
            raise ProviderError(
                self.redact(f"{self.provider_name} sent a malformed (non-JSON) body: {snippet!r}")
            ) from None
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


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def malformed(provider: str, detail: str) -> ProviderError:
    """The error for a body that parsed as JSON but is not the wire format."""
    return ProviderError(f"{provider} sent a malformed response: {detail}")

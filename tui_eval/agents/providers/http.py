"""What every HTTP provider shares: one client per run, timeouts, retries, secret redaction."""

from __future__ import annotations

import json
import random
from typing import Any

import anyio
import httpx

from tui_eval.agents.providers.base import ProviderError, notify_retry, run_resources

RETRYABLE = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class HTTPProvider:
    """Base of the providers that speak JSON over HTTP.

    Every request has a timeout. 429, 5xx and timeouts are retried with exponential
    backoff and jitter, honouring `Retry-After`, at most `max_retries` times; other 4xx
    fail at once with the server's message. The API key lives only in request headers and
    is redacted from every error message.

    Args:
        model: the model name sent to the server.
        base_url: the API's base URL.
        api_key: the key (sent as a header, never shown).
        timeout: seconds per request.
        max_retries: retries after the first attempt.
        backoff: the first retry's delay in seconds (doubling each time, capped at 30 s).
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
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
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
                response = await self._client().post(url, json=payload)
            except httpx.TimeoutException:
                last = f"no response within {self.timeout:g}s (timeout)"
            except httpx.TransportError as exc:
                last = f"connection failed: {type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if status < 400:
                    return self._parse(response), attempt
                message = self._server_message(response)
                if status not in RETRYABLE:
                    raise ProviderError(
                        self.redact(
                            f"{self.provider_name} returned HTTP {status} for {url}: {message}"
                        )
                    )
                last = f"HTTP {status}: {message}"
                retry_after = _retry_after(response)
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

    def _parse(self, response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except (ValueError, UnicodeDecodeError):
            snippet = response.text[:200]
            raise ProviderError(
                self.redact(f"{self.provider_name} sent a malformed (non-JSON) body: {snippet!r}")
            ) from None
        if not isinstance(body, dict):
            raise ProviderError(
                f"{self.provider_name} sent JSON that is not an object: {str(body)[:200]!r}"
            )
        return body

    @staticmethod
    def _server_message(response: httpx.Response) -> str:
        try:
            body = response.json()
        except (ValueError, UnicodeDecodeError):
            return response.text[:300] or response.reason_phrase
        if isinstance(body, dict):
            error = body.get("error", body)
            if isinstance(error, dict):
                return str(error.get("message") or json.dumps(error)[:300])
            return str(error)[:300]
        return str(body)[:300]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, min(float(value), 120.0))
    except ValueError:
        return None


def malformed(provider: str, detail: str) -> ProviderError:
    """The error for a body that parsed as JSON but is not the wire format."""
    return ProviderError(f"{provider} sent a malformed response: {detail}")

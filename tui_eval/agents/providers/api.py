"""What every HTTP provider shares: a JSON POST down tui-eval's HTTP layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import httpx2
import pydantic_core

from tui_eval.agents.http.client import accepted_encodings
from tui_eval.agents.http.context import RunContext, current_sample
from tui_eval.agents.http.limits import RateLimiter
from tui_eval.agents.http.options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    ProviderOptions,
    merged_headers,
)
from tui_eval.agents.http.transport import (
    MAX_RESPONSE_BYTES,
    Binding,
    InvalidHeader,
    base_url,
    chain,
    failure_text,
    key_of,
)
from tui_eval.agents.messages import Completion
from tui_eval.agents.providers.base import ProviderError
from tui_eval.util.secrets import credential_values, redact_secrets, split_credentials

USER_AGENT = "tui-eval"


class HTTPProvider:
    """Base of the providers that speak JSON over HTTP: each request an httpx2 request sent
    down tui-eval's chain of transports itself (a client's auth, redirects, cookies and
    hooks did nothing for it). The key is redacted from errors; credentials in `base_url`
    go as Basic auth.

    Args:
        model: the model name sent to the server.
        base_url: the API's base URL.
        api_key: the key (sent as a header, never shown).
        timeout, max_retries, retry_budget, rpm, tpm, headers: as `ProviderOptions`.
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
        self._userinfo: str | None = None
        self.options = ProviderOptions(
            timeout=timeout,
            max_retries=max_retries,
            retry_budget=retry_budget,
            rpm=rpm,
            tpm=tpm,
            headers=dict(headers or {}),
        )
        self.backoff = backoff
        self.max_response_bytes = max_response_bytes
        self._chain: httpx2.AsyncBaseTransport | None = None
        self._binding: Binding | None = None
        self._chain_for: tuple[ProviderOptions, float, int] | None = None
        self._resolved: _Resolved | None = None
        self.configure(ProviderOptions(base_url=base_url))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        """Where requests go (before any run-level override)."""
        return self.options.base_url or ""

    def configure(self, options: ProviderOptions) -> None:
        """Apply `options` over this provider's own (a spec's `?rpm=...`); a `base_url`'s
        credentials go as Basic auth, its `api-version` query as `api_version`."""
        if options.base_url is not None:
            bare, userinfo = split_credentials(options.base_url)
            bare, _, query = bare.partition("?")
            options = options.model_copy(update={"base_url": bare.rstrip("/")})
            if userinfo is not None:
                self._userinfo = userinfo
            version = dict(parse_qsl(query)).get("api-version")
            if version and options.api_version is None:
                options = options.model_copy(update={"api_version": version})
        self.options = self.options.over(options)
        self._resolved = None

    # -- what subclasses provide ---------------------------------------------------------
    def headers(self) -> dict[str, str]:  # pragma: no cover - overridden
        """The headers every request of this provider carries (the key among them)."""
        return {}

    def read(self, body: dict[str, Any]) -> Completion:  # pragma: no cover - overridden
        """A response body as a `Completion` (`ProviderError` when it is not one)."""
        raise NotImplementedError

    def _readable(self, body: dict[str, Any]) -> Completion | None:
        """A stored response as a `Completion` (None: not one this provider can read)."""
        try:
            return self.read(body)
        except ProviderError:
            return None

    def _secrets(self) -> list[str]:
        """What errors must not show: the key and other credentials."""
        found = credential_values(self._api_key, self._settings(_current_run()).headers.items())
        if self._api_key:
            found.append(self._api_key)  # a short (dummy) key too, as a whole word
        if self._userinfo:
            found.append(self._userinfo)
        return found

    # -- options, client, limiter --------------------------------------------------------
    def effective_options(self) -> ProviderOptions:
        """This provider's options with the current run's (suite and command line) over them."""
        return self._settings(_current_run()).options

    def _settings(self, run: RunContext | None) -> _Resolved:
        """This provider's settings under `run`'s options (made once each)."""
        given = run.provider if run is not None else None
        resolved = self._resolved
        if resolved is None or resolved.given is not given:
            self._layer()
            assert self._binding is not None
            options = self._binding.under(given)  # what the chain goes by
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            headers["User-Agent"] = USER_AGENT
            headers["Accept-Encoding"] = accepted_encodings()
            if self._userinfo:
                import base64

                token = base64.b64encode(_unquoted(self._userinfo).encode()).decode()
                headers["Authorization"] = f"Basic {token}"
            headers = merged_headers(headers, self.headers(), options.headers)
            timeout = options.timeout or DEFAULT_TIMEOUT_S
            query = f"?api-version={options.api_version}" if options.api_version else ""
            resolved = self._resolved = _Resolved(
                given,
                options,
                headers,
                httpx2.Headers(headers),
                httpx2.Timeout(timeout, connect=min(timeout, 30.0)).as_dict(),
                (options.base_url or "").rstrip("/"),
                query,
                {},
            )
        return resolved

    def limiter(self) -> RateLimiter:
        """The rate limiter this provider's requests go through now."""
        run = _current_run()
        resolved = self._settings(run)
        if run is None:
            self._layer()
            assert self._binding is not None
            run = self._binding.outside
        url = httpx2.URL(resolved.base_url + "/")
        return run.runtime.limiter(
            base_url(url),
            key_of(resolved.wire.raw),
            rpm=resolved.options.rpm,
            tpm=resolved.options.tpm,
        )

    def _layer(self) -> httpx2.AsyncBaseTransport:
        """The chain this provider sends down (made for its format and policy)."""
        layer = self._chain
        made_for = (self.options, self.backoff, self.max_response_bytes)
        if layer is None or self._chain_for != made_for:
            binding = Binding(
                options=self.options,
                provider=self.provider_name,
                read=self._readable,
                backoff=self.backoff,
                max_bytes=self.max_response_bytes,
            )
            layer = self._chain = chain(binding)
            self._binding = binding
            self._chain_for = made_for
            self._resolved = None
        return layer

    async def aclose(self) -> None:
        """Close the connections this provider opened outside runs."""
        layer, self._chain = self._chain, None
        if layer is not None:
            await layer.aclose()

    # -- requests -------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """`text` with the API key (and the URL's credentials) replaced by `***`."""
        return redact_secrets(text, self._secrets())

    def _fail(self, message: str) -> ProviderError:
        return ProviderError(self.redact(f"{self.provider_name} {message}"))

    async def post(self, path: str, payload: dict[str, Any]) -> Completion:
        """POST `payload`: the answer read, with its retries (else `ProviderError`)."""
        resolved = self._settings(_current_run())
        url = resolved.urls.get(path)
        if url is None:
            url = resolved.urls[path] = httpx2.URL(f"{resolved.base_url}{path}{resolved.query}")
        request = httpx2.Request(  # as `client.post` builds it, less merging its defaults
            "POST",
            url,
            content=pydantic_core.to_json(payload),
            headers=resolved.wire,
            extensions={"timeout": resolved.timeout},
        )
        try:
            response = await self._layer().handle_async_request(request)
            try:
                await response.aread()  # read already, unless the server sent a stream
            finally:
                await response.aclose()
        except InvalidHeader as exc:  # the layer checks every request's headers
            raise ProviderError(f"{self.provider_name}: {exc}") from None
        except httpx2.HTTPError as exc:  # the layer says what failed, with every attempt
            raise self._fail(str(exc)) from None
        if response.status_code >= 300:
            raise self._fail(failure_text(response))
        extensions = response.extensions
        answer = extensions.get("tui_eval.answer")  # a stored one, read by the cache
        if not isinstance(answer, Completion):
            parsed = extensions.get("tui_eval.json")
            if parsed is None:
                snippet = response.content[:200].decode("utf-8", "replace")
                raise self._fail(f"sent a malformed (non-JSON) body: {snippet!r}")
            if not isinstance(parsed, dict):
                raise ProviderError(
                    f"{self.provider_name} sent JSON that is not an object: {str(parsed)[:200]!r}"
                )
            answer = self.read(parsed)
        answer.retries = int(extensions.get("tui_eval.retries", 0))
        return answer


@dataclass(frozen=True, slots=True)
class _Resolved:
    """A provider's settings under one run's options: what each of its requests reuses."""

    given: ProviderOptions | None
    options: ProviderOptions
    headers: dict[str, str]
    wire: httpx2.Headers
    timeout: dict[str, float | None]
    base_url: str
    query: str
    urls: dict[str, httpx2.URL]  # each path's URL, parsed once


def _unquoted(userinfo: str) -> str:
    from urllib.parse import unquote

    user, _, password = userinfo.partition(":")
    return f"{unquote(user)}:{unquote(password)}"


def _current_run() -> RunContext | None:
    sample = current_sample()
    return sample.run if sample is not None else None


def malformed(provider: str, detail: str) -> ProviderError:
    """The error for a body that parsed as JSON but is not the wire format."""
    return ProviderError(f"{provider} sent a malformed response: {detail}")

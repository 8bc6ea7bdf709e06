"""The `Runtime` that runs share (rate limiters, prices), one run's `RunContext` and one
sample's `SampleContext`, current (`current_sample()`) while its agent and checks run, so
a provider deep inside an agent reaches it without being handed it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from tui_eval.agents.http.cache import ResponseCache
from tui_eval.agents.http.limits import RateLimiter
from tui_eval.agents.http.metering import ResponseTokens, SampleMeter, price_ref, price_with
from tui_eval.agents.http.options import ProviderOptions

if TYPE_CHECKING:
    from tui_eval.agents.http.sockets import Sockets

LimiterFactory = Callable[[str, str, "float | None", "float | None"], RateLimiter]
"""Builds the limiter of a quota: `factory(base_url, key_fingerprint, rpm, tpm)`."""

RetryListener = Callable[[int, float], None]
"""Told (attempt, delay in seconds) before a provider retries a request."""


class Runtime:
    """What the runs given this runtime share: a rate limiter per API quota, and prices.
    The CLI and the app own one; `evaluate()` makes one unless `RunSettings(runtime=...)`.

    Args:
        limiter_factory: builds a quota's limiter (default `RateLimiter`; Ray's are shared).

    Attributes:
        idle_workers: workers an executor left idle, by pool key, for the next run.
    """

    def __init__(self, limiter_factory: LimiterFactory | None = None) -> None:
        self._factory = limiter_factory
        self._limiters: dict[tuple[str, str], RateLimiter] = {}
        self._price_ref = functools.lru_cache(maxsize=1024)(price_ref)
        self.idle_workers: dict[str, list[Any]] = {}

    def __repr__(self) -> str:
        return f"Runtime({len(self._limiters)} limiters)"

    def limiter(
        self, base_url: str, fingerprint: str, *, rpm: float | None = None, tpm: float | None = None
    ) -> RateLimiter:
        """The quota's limiter, made on first use; `rpm` and `tpm` cap it."""
        key = (base_url, fingerprint)
        limiter = self._limiters.get(key)
        if limiter is None:
            factory = self._factory
            limiter = self._limiters[key] = (
                RateLimiter(base_url, rpm=rpm, tpm=tpm)
                if factory is None
                else factory(base_url, fingerprint, rpm, tpm)
            )
        elif rpm or tpm:
            limiter.set_caps(rpm, tpm)
        return limiter

    def limiters(self) -> list[RateLimiter]:
        """Every limiter this runtime has made."""
        return list(self._limiters.values())

    def price_of(self, provider: str, model: str, tokens: ResponseTokens) -> float | None:
        """`metering.price_of`, each model looked up in the table once per runtime."""
        ref = self._price_ref(provider, model)
        return None if ref is None else price_with(ref, tokens)


@dataclass(eq=False, slots=True)
class RunContext:
    """What the providers of one run share.

    Attributes:
        provider: the suite's and command line's provider options, over every provider's.
        cache: the response cache (None: no cache).
    """

    provider: ProviderOptions | None = None
    cache: ResponseCache | None = None
    runtime: Runtime = field(default_factory=Runtime)
    _sockets: Sockets | None = field(default=None, init=False, repr=False)

    @property
    def sockets(self) -> Sockets:
        """The run's connections, shared by its providers and clients; closed with it."""
        sockets = self._sockets
        if sockets is None:
            from tui_eval.agents.http.sockets import Sockets

            sockets = self._sockets = Sockets()
        return sockets

    @contextlib.asynccontextmanager
    async def closing_clients(self) -> AsyncIterator[None]:
        """Close the connections the run opens inside this block when it ends."""
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the connections opened so far (later requests open new ones)."""
        sockets, self._sockets = self._sockets, None
        if sockets is not None:
            with anyio.CancelScope(shield=True):
                await sockets.aclose()

    def drop(self) -> None:
        """Let go of the connections without awaiting anything (their loop may be gone)."""
        sockets, self._sockets = self._sockets, None
        if sockets is not None:
            sockets.drop()


@dataclass(eq=False, slots=True)
class SampleContext:
    """One sample of a run, current (`current_sample()`) while its agent and checks run.

    Attributes:
        run: the run's context.
        case_name: the case's name.
        index: the sample's number within its case (the response cache keys on it).
        meter: what the sample has spent so far.
        on_retry: told (attempt, delay in seconds) before a provider retries a request.
        state: the sample's environment state (`Case(state=...)`; None without one).
    """

    run: RunContext
    case_name: str = ""
    index: int = 0
    meter: SampleMeter = field(default_factory=SampleMeter)
    on_retry: RetryListener | None = None
    state: Any = None

    def retrying(self, attempt: int, delay_s: float) -> None:
        """Tell whoever runs the sample that a request is about to be retried."""
        if self.on_retry is not None:
            self.on_retry(attempt, delay_s)


CURRENT_SAMPLE: ContextVar[SampleContext | None] = ContextVar("tui_eval_sample", default=None)
"""tui-eval's one context variable: only the runner sets it; others call `current_sample()`."""


def current_sample() -> SampleContext | None:
    """The sample whose agent or checks are running in this task (None outside one)."""
    return CURRENT_SAMPLE.get()

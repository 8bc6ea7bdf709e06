"""What a run's providers share, and what one sample's requests are counted in.

- A `ProviderSession` owns rate limiters: one per API quota (base URL, key). Runs in one
  process share the default session (`default_session()`), so two runs against one API
  pace themselves as one, as its quota needs; a run given a session of its own (a test, a
  Ray worker sharing the cluster's limiters) shares none with the others.
- A `RunContext` is one run's: its provider options (the suite's and the command line's),
  its response cache, its session, and its connections (`sockets`, closed when the run
  ends).
- A `SampleContext` is one sample's: its run's context, its meter, whom to tell about a
  retry, and which sample it is (case name, index).

While a sample's agent and checks run, its `SampleContext` is *current*
(`current_sample()`): a provider deep inside an agent — or a user's plain-function agent —
reaches it without being handed it. That is tui-eval's one context variable
(`CURRENT_SAMPLE`, which only the runner sets); everything else a run needs is read from
the object it holds. Checks get their context as an argument
instead (`tui_eval.checks.CheckContext`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from tui_eval.agents.http.cache import ResponseCache
from tui_eval.agents.http.limits import RateLimiter
from tui_eval.agents.http.metering import SampleMeter
from tui_eval.agents.http.options import ProviderOptions

if TYPE_CHECKING:
    from tui_eval.agents.http.sockets import Sockets

LimiterFactory = Callable[[str, str, "float | None", "float | None"], RateLimiter]
"""Builds the limiter of a quota: `factory(base_url, key_fingerprint, rpm, tpm)`."""

RetryListener = Callable[[int, float], None]
"""Told (attempt, delay in seconds) before a provider retries a request."""


class ProviderSession:
    """The rate limiters of the runs that share this session: one per API quota.

    Every run uses one: its own (`RunSettings.session`) or the process's default
    (`default_session()`), which every run not given one shares.

    Example:
        >>> session = ProviderSession()  # limiters no other run shares
        >>> report = await evaluate(agent, cases, settings=RunSettings(session=session))  # doctest: +SKIP

    Args:
        limiter_factory: builds a quota's limiter (default: an in-process `RateLimiter`); a
            Ray worker's builds handles on limiters the whole cluster shares.
    """

    def __init__(self, limiter_factory: LimiterFactory | None = None) -> None:
        self._factory = limiter_factory
        self._limiters: dict[tuple[str, str], RateLimiter] = {}

    def __repr__(self) -> str:
        return f"ProviderSession({len(self._limiters)} limiters)"

    def limiter(
        self, base_url: str, fingerprint: str, *, rpm: float | None = None, tpm: float | None = None
    ) -> RateLimiter:
        """The limiter of the quota (base URL, key fingerprint), made on first use; `rpm`
        and `tpm` cap it."""
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
        """Every limiter this session has made."""
        return list(self._limiters.values())

    @contextlib.contextmanager
    def as_default(self) -> Iterator[ProviderSession]:
        """Within this block, this is the default session: runs given none, and providers
        used outside a run, use its limiters (the tests give each test a fresh one)."""
        global _default_session
        previous, _default_session = _default_session, self
        try:
            yield self
        finally:
            _default_session = previous


_default_session = ProviderSession()


def default_session() -> ProviderSession:
    """The session of every run not given one: runs in one process share its limiters."""
    return _default_session


_default_sockets: Sockets | None = None


def default_sockets() -> Sockets:
    """The connections of requests made outside any run (a provider called directly)."""
    global _default_sockets
    if _default_sockets is None:
        from tui_eval.agents.http.sockets import Sockets

        _default_sockets = Sockets()
        import atexit

        atexit.register(_default_sockets.drop)  # its loop is gone by then: nothing to await
    return _default_sockets


@dataclass(eq=False, slots=True)
class RunContext:
    """What the providers of one run share.

    Attributes:
        provider: the suite's and the command line's provider options, which every HTTP
            provider of the run applies over its own (None: none).
        cache: the response cache (None: no cache).
        session: whose rate limiters the run's requests go through (by default the
            process's, shared with every other run).
    """

    provider: ProviderOptions | None = None
    cache: ResponseCache | None = None
    session: ProviderSession = field(default_factory=default_session)
    _sockets: Sockets | None = field(default=None, init=False, repr=False)

    @property
    def sockets(self) -> Sockets:
        """The run's connections (one socket transport per event loop and proxy), shared by
        its providers and the clients `http_client()` lends; closed when the run ends."""
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
            sockets, self._sockets = self._sockets, None
            if sockets is not None:
                with anyio.CancelScope(shield=True):
                    await sockets.aclose()


@dataclass(eq=False, slots=True)
class SampleContext:
    """One sample of a run, as its providers see it: current (`current_sample()`) while
    the sample's agent and checks run.

    Attributes:
        run: the run's context.
        case_name: the case's name.
        index: the sample's number within its case (the response cache keys on it).
        meter: what the sample has spent so far.
        on_retry: told (attempt, delay in seconds) before a provider retries a request.
        state: the sample's environment state (`Case(state=...)`; None without one),
            which `tui_eval.agents.state.current_state()` hands to tools.
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
"""tui-eval's one context variable: the sample whose agent or checks run in this task. The
runner sets it around each sample (`token = CURRENT_SAMPLE.set(sample)`, then
`CURRENT_SAMPLE.reset(token)`: no frame of its own on the per-sample path); everything
else reads it with `current_sample()`."""


def current_sample() -> SampleContext | None:
    """The sample whose agent or checks are running in this task (None outside one)."""
    return CURRENT_SAMPLE.get()

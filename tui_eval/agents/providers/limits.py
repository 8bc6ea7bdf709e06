"""One rate limiter per (base URL, API key): every request to that quota goes through it.

A provider's rate limit is shared by every worker of a run (and every run in the
process), so backing off must be shared too. The limiter keeps one *pace* (requests per
second) and one pause for all of them:

- **Headers first.** OpenAI's `x-ratelimit-limit-requests` / `-tokens` and Anthropic's
  `anthropic-ratelimit-requests-limit` / `-tokens-limit` (both per minute) set the pace
  from the first response, before anything is rejected.
- **A 429 pauses everyone** until its `retry-after-ms` / `Retry-After` has passed, and
  the released requests leave one pace-slot apart, so they never return all at once.
- **AIMD on the pace.** The first 429 of a congestion episode cuts the pace to just under
  the rate the server was accepting (measured over the last second); every second without
  a 429 raises it by 3%, up to any known ceiling (`rpm`, or the headers). A run settles
  just under the limit.
- **Tokens.** With `tpm` (given or learned), each request reserves its estimated tokens
  and the estimate is corrected by the usage the server reports.

Giving up is decided by the provider with a time budget, measured from the later of the
request's start and this limiter's last accepted response: a rate-limited request waits
for as long as the run is making progress.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio

INCREASE_PER_S = 0.03
"""How much faster the pace gets for every second without a 429."""
CUT_TO_MEASURED = 0.97
"""After a 429 the pace is at most this share of the rate the server was accepting."""
CUT = 0.9
"""...and at most this share of the pace that drew the 429."""
SLOW_START_DOUBLING_S = 0.25
"""While the pace is only a guess, it doubles this often until a 429 measures the real rate."""
HEADROOM = 0.99
"""The pace stays at this share of a known limit at most."""
NEAR_CEILING = 0.98
"""With a known ceiling, a 429 steps the pace down to this share of it, no lower."""
WINDOW_S = 1.0
"""Accepted requests are counted over this window to measure the server's rate."""
LIMITED_SHOWN_S = 2.0
"""How long after a 429 (or a paced wait) the limiter still reports itself as limiting."""


@dataclass(frozen=True, slots=True)
class LimitStatus:
    """What a limiter is doing now, for the app's Run header.

    Attributes:
        name: the API it limits (its base URL).
        limited: a request was rejected or held back in the last two seconds.
        waiting_s: how long a request asking now would wait.
        rate: requests per second the server accepted over the last second.
        pace: the pace the limiter keeps (None: not pacing).
        rejected: 429s seen so far.
    """

    name: str
    limited: bool
    waiting_s: float
    rate: float
    pace: float | None
    rejected: int

    def __str__(self) -> str:
        if not self.limited:
            return f"{self.rate:.0f} req/s"
        return f"rate limited · waiting {self.waiting_s:.1f} s · {self.rate:.0f} req/s"


class RateLimiter:
    """The shared pace and pause of one API quota (see the module docstring).

    Args:
        name: what to call it in messages (the base URL).
        rpm: requests per minute never to exceed (None: learn it).
        tpm: tokens per minute never to exceed (None: learn it, if the server says).
        clock: monotonic seconds (tests pass a fake one).
    """

    def __init__(
        self,
        name: str,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.clock = clock
        self.request_cap = rpm / 60 if rpm else None
        self.token_cap = tpm / 60 if tpm else None
        self.header_request_cap: float | None = None
        self.header_token_cap: float | None = None
        self.pace: float | None = self.request_cap
        now = clock()
        self.paused_until = 0.0
        self.next_slot = 0.0
        self.next_token_slot = 0.0
        self.accepted: deque[float] = deque()
        self.first_request: float | None = None
        self.last_cut = -math.inf
        self.last_raise = now
        self.last_limited = -math.inf
        self.last_held = -math.inf
        self.last_success = now
        self.rejected = 0
        self.last_used = -math.inf
        self.provisional = False
        """The pace is a guess from a 429's wait, not yet measured."""

    def set_caps(self, rpm: float | None, tpm: float | None) -> None:
        """Explicit ceilings (from settings); the lower of old and new wins."""
        if rpm:
            cap = rpm / 60
            self.request_cap = min(self.request_cap or cap, cap)
            self.pace = min(self.pace or cap, cap)
        if tpm:
            cap = tpm / 60
            self.token_cap = min(self.token_cap or cap, cap)

    # -- asking ------------------------------------------------------------------------
    async def acquire(self, tokens: int = 0) -> None:
        """Wait for this request's turn: after any pause, one pace-slot after the last."""
        while True:
            wait = self.reserve(tokens)
            if wait <= 0:
                return
            await anyio.sleep(wait)
            if self.clock() >= self.paused_until:
                return
            # A 429 paused everyone while this request waited: queue again after it.

    def reserve(self, tokens: int = 0) -> float:
        """Take the next slot for a request of `tokens`: the seconds until it comes."""
        now = self.clock()
        self.last_used = now
        if self.first_request is None:
            self.first_request = now
        slot = max(now, self.paused_until)
        if self.pace:
            slot = max(slot, self.next_slot)
            self.next_slot = slot + 1 / self.pace
        token_pace = self._token_pace()
        if token_pace and tokens:
            token_slot = max(now, self.next_token_slot)
            self.next_token_slot = token_slot + tokens / token_pace
            slot = max(slot, token_slot)
        if slot > now:
            self.last_held = now
        return slot - now

    def _token_pace(self) -> float | None:
        caps = [c for c in (self.token_cap, self.header_token_cap) if c]
        return min(caps) if caps else None

    # -- hearing back ------------------------------------------------------------------
    def on_response(
        self,
        status: int,
        headers: Mapping[str, str],
        *,
        tokens_reserved: int = 0,
        tokens_used: int | None = None,
    ) -> None:
        """Learn from one response (any status): headers, acceptance, token usage."""
        now = self.clock()
        self._learn(headers)
        if status < 400:
            self.accepted.append(now)
            self.last_success = now
            while self.accepted and self.accepted[0] < now - WINDOW_S:
                self.accepted.popleft()
            if self.pace:
                ceiling = self._ceiling()
                doubling_s = SLOW_START_DOUBLING_S if self.provisional else None
                dt = now - self.last_raise
                grown = (
                    self.pace * 2 ** (dt / doubling_s)
                    if doubling_s
                    else self.pace * (1 + INCREASE_PER_S * dt)
                )
                self.pace = min(grown, ceiling) if ceiling else grown
            self.last_raise = now
            token_pace = self._token_pace()
            if token_pace and tokens_used is not None:
                self.next_token_slot += (tokens_used - tokens_reserved) / token_pace

    def on_limited(self, retry_after: float | None) -> None:
        """A 429: pause everyone for `retry_after` (or one slot), and slow down once per episode."""
        now = self.clock()
        self.rejected += 1
        self.last_limited = now
        wait = retry_after if retry_after is not None else (1 / self.pace if self.pace else 1.0)
        self.paused_until = max(self.paused_until, now + wait)
        if now - self.last_cut < max(wait, 0.25):
            return  # the same congestion episode: one cut is enough
        self.last_cut = now
        self.last_raise = now
        measured = self._measured_rate(now)
        ceiling = self._ceiling()
        origin = self._origin()
        settled = origin is not None and now - origin >= WINDOW_S  # a whole window measured
        if ceiling is not None and (measured is None or not settled or measured > ceiling * CUT):
            # The API said its limit and is accepting about that much: this 429 is
            # jitter at the edge of the bucket, not a wrong pace. Step just below it.
            target: float | None = ceiling * NEAR_CEILING
        else:
            candidates = [self.pace and self.pace * CUT, measured and measured * CUT_TO_MEASURED]
            target = min((c for c in candidates if c), default=None)
        if self.provisional and measured is not None:
            target = measured * CUT_TO_MEASURED  # the first real measurement replaces the guess
            self.pace = None
        self.provisional = target is None and (self.pace is None or self.provisional)
        if target is None and self.pace is None and wait > 0:
            # Nothing measured yet: guess one request per wait (a token bucket's refill
            # time), then grow fast until the next 429 measures the real rate.
            target = 1 / wait
            self.provisional = True
        if target is not None:
            self.pace = min(self.pace, target) if self.pace else target
            self.next_slot = max(self.next_slot, self.paused_until)

    def _ceiling(self) -> float | None:
        """The highest pace allowed: just under the lowest known limit, leaving the API's
        bucket a little slack for the jitter of requests in flight."""
        caps = [c for c in (self.request_cap, self.header_request_cap) if c]
        return min(caps) * HEADROOM if caps else None

    def _measured_rate(self, now: float) -> float | None:
        origin = self._origin()
        if origin is None:
            return None
        recent = [t for t in self.accepted if t >= now - WINDOW_S]
        span = min(WINDOW_S, now - origin)
        if len(recent) < 2 or span <= 0:
            return None
        return len(recent) / span

    def _origin(self) -> float | None:
        """Since when requests have been counted."""
        if self.first_request is not None:
            return self.first_request
        return self.accepted[0] if self.accepted else None

    def _learn(self, headers: Mapping[str, str]) -> None:
        requests = _number(
            headers, "x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"
        )
        if requests and requests > 0:
            cap = requests / 60
            if self.header_request_cap != cap:
                self.header_request_cap = cap
                ceiling = self._ceiling() or cap
                self.pace = min(self.pace, ceiling) if self.pace else ceiling
        tokens = _number(headers, "x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit")
        if tokens and tokens > 0:
            self.header_token_cap = tokens / 60

    # -- reporting ---------------------------------------------------------------------
    def status(self) -> LimitStatus:
        """What the limiter is doing now."""
        now = self.clock()
        waiting = max(0.0, self.paused_until - now, self.next_slot - now)
        recent = sum(1 for t in self.accepted if t >= now - WINDOW_S)
        origin = self._origin()
        span = min(WINDOW_S, now - origin) if origin is not None else 0
        limited = now - max(self.last_limited, self.last_held) < LIMITED_SHOWN_S and waiting > 0
        limited = limited or now - self.last_limited < LIMITED_SHOWN_S
        return LimitStatus(
            name=self.name,
            limited=limited,
            waiting_s=waiting,
            rate=recent / span if span > 0 else 0.0,
            pace=self.pace,
            rejected=self.rejected,
        )


def _number(headers: Mapping[str, str], *names: str) -> float | None:
    for name in names:
        value = headers.get(name)
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: `retry-after-ms`, else `Retry-After` (seconds)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


_LIMITERS: dict[tuple[str, str], RateLimiter] = {}


def key_fingerprint(api_key: str | None) -> str:
    """A short, one-way name for an API key (limiters and caches are keyed by it)."""
    if not api_key:
        return "-"
    return hashlib.sha256(api_key.encode()).hexdigest()[:12]


LimiterFactory = Callable[[str, str, "float | None", "float | None"], RateLimiter]
_factory: LimiterFactory | None = None


def use_limiters(factory: LimiterFactory | None) -> None:
    """Make `limiter_for` build limiters with `factory(base_url, fingerprint, rpm, tpm)`
    (None: the in-process ones). A Ray worker installs one that shares a cluster-wide
    limiter; see `tui_eval.ray_executor`."""
    global _factory
    _factory = factory


def limiter_for(
    base_url: str, fingerprint: str, *, rpm: float | None = None, tpm: float | None = None
) -> RateLimiter:
    """The process-wide limiter of the quota (base URL, key)."""
    key = (base_url, fingerprint)
    if _factory is not None and key not in _LIMITERS:
        _LIMITERS[key] = _factory(base_url, fingerprint, rpm, tpm)
    limiter = _LIMITERS.get(key)
    if limiter is None:
        limiter = _LIMITERS[key] = RateLimiter(base_url, rpm=rpm, tpm=tpm)
    elif rpm or tpm:
        limiter.set_caps(rpm, tpm)
    return limiter


def limiters() -> list[RateLimiter]:
    """Every limiter this process has made."""
    return list(_LIMITERS.values())

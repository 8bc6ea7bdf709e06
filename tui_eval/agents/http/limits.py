"""One rate limiter per API quota (base URL, key), shared by the runs of one `Runtime`:
one pace and one pause for every worker (README, "Real API runs").

- The rate-limit headers set the pace before anything is rejected; a pace held to them
  with nothing rejected is probed above until a 429 confirms or overrules them.
- A 429 pauses everyone until its Retry-After (naming none: 1, 2, 4... at most 30 s).
- AIMD: an episode's first 429 cuts the pace to just under the rate accepted over the last
  second; each second without one raises it 3%, up to any known ceiling.
- With `tpm`, a request reserves its estimated tokens, corrected by the reported usage.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio

from tui_eval.agents.http.rate_headers import header_number
from tui_eval.util.errors import TuiEvalError

INCREASE_PER_S = 0.03  # the pace grows this much a second without a 429
CUT_TO_MEASURED = 0.97  # after a 429, at most this share of the rate the server accepted...
CUT = 0.9  # ...and of the pace that drew it
SLOW_START_DOUBLING_S = 0.25  # a guessed pace doubles this often until a 429 measures it
HEADROOM = 0.99  # the pace stays at most at this share of a known limit
NEAR_CEILING = 0.98  # with a known ceiling, a 429 steps the pace down to this share of it
WINDOW_S = 1.0  # the server's rate is measured over this window
LIMITED_SHOWN_S = 2.0  # "limiting" is reported this long after a 429 or a paced wait
PROBE_AFTER_S = 1.0  # held to the headers' pace this long with no 429: probe above it
PROBE_DOUBLING_S = 0.25  # while probing, the pace doubles this often
HEADER_CONFIRMED = 1.25  # a probe's 429 at an accepted rate under this × the headers' confirms them
MIN_HEADER_REQUESTS_PER_MIN = 1.0  # header limits under these are nonsense: ignored
MIN_HEADER_TOKENS_PER_MIN = 100.0
RECHECK_S = 0.25  # a request waiting for a later slot looks this often for a faster pace
BACKOFF_BASE_S = 1.0  # 429s naming no wait pause 1 s, 2 s, 4 s... at most BACKOFF_MAX_S
BACKOFF_MAX_S = 30.0


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
        reason: why it keeps that pace ("" when not pacing).
    """

    name: str
    limited: bool
    waiting_s: float
    rate: float
    pace: float | None
    rejected: int
    reason: str = ""

    def __str__(self) -> str:
        if not self.limited:
            return f"{self.rate:.0f} req/s"
        text = f"rate limited · waiting {self.waiting_s:.1f} s · {self.rate:.0f} req/s"
        if self.pace is not None and self.reason:
            text += f" · pace {self.pace:.3g}/s: {self.reason}"
        return text


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
        self.provisional = False  # the pace is a guess from a 429's wait, not yet measured
        self.stalled_since: float | None = None
        """When the first 429 since the last accepted response came (None: none since)."""
        self.backoff_streak = 0
        """Pauses in a row for 429s that named no wait (reset by an accepted response)."""
        self.header_since = -math.inf  # when the headers' request limit was last learned
        self.header_paced_from: float | None = None
        """Since when requests leave held to the headers' pace (moved to the end of each
        429's pause): a 429 before then answered one sent before any header was read."""
        self.header_verdict: str | None = None
        """None: headers unchecked; "probing": pacing above them; "confirmed"; "overruled"."""
        self.learned = False  # the pace was set by 429s (AIMD), not only by a limit
        self.repaced_at: float | None = None  # the pace when queued requests last took new slots
        self._generation = 0

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
    async def acquire(self, tokens: int = 0, deadline: Callable[[], float] | None = None) -> None:
        """Wait for this request's turn: after any pause, one pace-slot after the last
        (`RateLimitWait` when `deadline()`, asked again as it waits, passes first)."""
        while True:
            wait = self.reserve(tokens)
            if wait <= 0:
                return
            slot = self.clock() + wait
            generation = self._generation
            while True:
                now = self.clock()
                if now >= slot or generation != self._generation:
                    break
                limit = deadline() if deadline is not None else math.inf
                if now >= limit:
                    raise RateLimitWait(slot - now, self._why(now))
                await anyio.sleep(min(slot, limit, now + RECHECK_S) - now)
            if generation != self._generation:
                continue  # the pace went up: take a new, earlier slot
            if self.clock() >= self.paused_until:
                return
            # A 429 paused everyone while this request waited: queue again after it.

    def _repace(self, now: float) -> None:
        """The pace went up a lot: forget the slots handed out at the old one."""
        self.repaced_at = self.pace
        self.next_slot = max(now, self.paused_until)
        self._generation += 1

    def reserve(self, tokens: int = 0) -> float:
        """Take the next slot for a request of `tokens`: the seconds until it comes."""
        now = self.clock()
        self.last_used = now
        if self.first_request is None:
            self.first_request = now
        slot = max(now, self.paused_until)
        next_slot = self.next_slot
        if self.pace:
            slot = max(slot, self.next_slot)
            next_slot = slot + 1 / self.pace
            if self.repaced_at is None or self.pace < self.repaced_at:
                self.repaced_at = self.pace  # the slowest pace a slot was handed out at
        token_pace = self._token_pace()
        next_token_slot = self.next_token_slot
        if token_pace and tokens:
            token_slot = max(now, self.next_token_slot)
            next_token_slot = token_slot + tokens / token_pace
            slot = max(slot, token_slot)
        self.next_slot, self.next_token_slot = next_slot, next_token_slot
        if slot > now:
            self.last_held = now
            if self.header_paced_from is None and self.header_request_cap is not None:
                self.header_paced_from = slot
        return slot - now

    def give_up_at(self, started: float, budget: float) -> float:
        """When a request stops waiting: `budget` after the later of its start and the last
        accepted response, or, while the API rejects everything, after the first rejection
        (later requests must not each wait a whole budget)."""
        stall = self.stalled_since
        stalled = stall is not None and stall >= self.last_success
        if stall is not None and stalled and self.clock() - self.last_limited <= budget:
            return stall + budget
        return max(started, self.last_success) + budget

    def _why(self, now: float) -> str:
        if now < self.paused_until:
            return f"paused by a 429 for {self.paused_until - now:.3g}s more"
        return f"paced at {self.pace:.3g} req/s ({self.pace_reason()})" if self.pace else "paced"

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
            self.stalled_since = None
            self.backoff_streak = 0
            while self.accepted and self.accepted[0] < now - WINDOW_S:
                self.accepted.popleft()
            if self.pace:
                self._maybe_probe(now)
                ceiling = self._ceiling()
                doubling_s = (
                    SLOW_START_DOUBLING_S
                    if self.provisional
                    else PROBE_DOUBLING_S
                    if self.header_verdict == "probing"
                    else None
                )
                dt = now - self.last_raise
                grown = (
                    self.pace * 2 ** (dt / doubling_s)
                    if doubling_s
                    else self.pace * (1 + INCREASE_PER_S * dt)
                )
                self.pace = min(grown, ceiling) if ceiling else grown
                if self.pace >= 2 * (self.repaced_at or math.inf):
                    self._repace(now)
            self.last_raise = now
            if tokens_used is not None:
                self.settle_tokens(tokens_reserved, tokens_used)

    def settle_tokens(self, reserved: int, used: int) -> None:
        """Correct a request's token estimate by what it used."""
        token_pace = self._token_pace()
        if token_pace:
            self.next_token_slot += (used - reserved) / token_pace

    def _maybe_probe(self, now: float) -> None:
        """Probe above the headers' limit once the pace has held requests to it a while with
        nothing rejected: some servers send a per-second or per-day figure as per-minute."""
        header = self.header_request_cap
        if header is None or self.header_verdict is not None or self.pace is None:
            return
        if self.request_cap is not None and self.request_cap <= header:
            return  # the user's own rpm is lower: nothing to find out
        at_header = self.pace >= header * HEADROOM * 0.999
        paced_from = max(self.header_since, self.header_paced_from or math.inf)
        quiet = self.last_limited < paced_from and now - paced_from >= PROBE_AFTER_S
        if at_header and quiet and now - self.last_held < max(WINDOW_S, 2 / self.pace):
            self.header_verdict = "probing"
            self.last_raise = now

    def on_limited(self, retry_after: float | None) -> None:
        """A 429: pause everyone (`retry_after`, else a doubling backoff); slow down once."""
        now = self.clock()
        self.rejected += 1
        if self.stalled_since is None or self.stalled_since < self.last_success:
            self.stalled_since = now
        fresh = now >= self.paused_until  # not a request that left before the last pause
        self.last_limited = now
        if retry_after is not None:
            wait = retry_after
        else:
            if fresh:
                self.backoff_streak += 1
            base = 1 / self.pace if self.pace else BACKOFF_BASE_S
            wait = min(BACKOFF_MAX_S, base * 2 ** max(0, self.backoff_streak - 1))
        self.paused_until = max(self.paused_until, now + wait)
        if self.header_paced_from is not None:
            # Requests leaving from the end of this pause keep the pace: quiet from there.
            self.header_paced_from = max(now, self.paused_until)
        if now - self.last_cut < max(wait, 0.25):
            return  # the same congestion episode: one cut is enough
        self.last_cut = now
        self.last_raise = now
        self.learned = True
        measured = self._measured_rate(now)
        overruled = False
        if self.header_verdict == "probing":
            header = self.header_request_cap or 0.0
            confirmed = measured is None or measured <= header * HEADER_CONFIRMED
            self.header_verdict = "confirmed" if confirmed else "overruled"
            overruled = not confirmed
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
        if overruled:
            # The rate was measured over the probe's ramp, below what the API accepts:
            # grow fast again until the next 429 measures it at full speed.
            self.provisional = True

    def _ceiling(self) -> float | None:
        """The highest pace allowed: just under the lowest known limit."""
        caps = [c for c in (self.request_cap, self._header_cap()) if c]
        return min(caps) * HEADROOM if caps else None

    def _header_cap(self) -> float | None:
        """The headers' request limit, unless a probe is testing or overruled it."""
        if self.header_verdict in ("probing", "overruled"):
            return None
        return self.header_request_cap

    def pace_reason(self) -> str:
        """Why the pace is what it is, in words for the app and the CLI."""
        if self.pace is None:
            return ""
        header = self.header_request_cap
        per_min = f"{header * 60:g}/min" if header else ""
        if self.header_verdict == "probing":
            return f"probing above the headers' {per_min}: nothing rejected at that pace"
        if self.header_verdict == "overruled":
            return f"learned from 429s; the headers' {per_min} understated what the API accepts"
        ceiling = self._ceiling()
        at_ceiling = ceiling is not None and self.pace >= ceiling * NEAR_CEILING * 0.999
        if at_ceiling and self.request_cap and (header is None or self.request_cap <= header):
            return f"rpm setting {self.request_cap * 60:g}/min"
        if at_ceiling and header:
            return f"the API's rate-limit headers: {per_min}"
        if self.provisional:
            return "a guess from a 429's wait, growing until the next 429"
        return "learned from 429s" if self.learned else "the API's rate-limit headers"

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
        requests = header_number(
            headers, "x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"
        )
        if requests is not None and requests >= MIN_HEADER_REQUESTS_PER_MIN:
            cap = requests / 60
            if self.header_request_cap != cap:
                self.header_request_cap = cap
                self.header_since = self.clock()
                self.header_paced_from = None
                self.header_verdict = None
                ceiling = self._ceiling() or cap
                self.pace = min(self.pace, ceiling) if self.pace else ceiling
                self.next_slot = min(self.next_slot, self.clock() + 1 / self.pace)
        tokens = header_number(
            headers, "x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"
        )
        if tokens is not None and tokens >= MIN_HEADER_TOKENS_PER_MIN:
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
            reason=self.pace_reason(),
        )


class RateLimitWait(TuiEvalError):
    """A request's turn would come `wait_s` after its retry budget ends, held back by `why`."""

    def __init__(self, wait_s: float, why: str) -> None:
        super().__init__(f"would wait {wait_s:.3g}s in the rate limiter ({why})")
        self.wait_s = wait_s
        self.why = why


def key_fingerprint(api_key: str | None) -> str:
    """A short, one-way name for an API key (limiters and caches are keyed by it)."""
    if not api_key:
        return "-"
    return hashlib.sha256(api_key.encode()).hexdigest()[:12]

"""Rate limits that can't stall a run, and HTTP bodies: real loopback servers, fake clocks."""

from __future__ import annotations

import email.utils
import gzip
import sys
import time
import zlib
from pathlib import Path

import anyio
import pytest

from tui_eval import Agent, Case, RunSettings, contains, evaluate
from tui_eval.agents.http import limits
from tui_eval.agents.http.context import Runtime
from tui_eval.agents.http.limits import LimitStatus, RateLimiter, RateLimitWait
from tui_eval.agents.http.options import ProviderOptions
from tui_eval.agents.http.rate_headers import retry_after
from tui_eval.agents.messages import Message
from tui_eval.agents.providers import ProviderError
from tui_eval.agents.providers.openai import OpenAIProvider

from .wire_server import Reply, WireServer, openai_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from loopback_api import LoopbackAPI

pytestmark = pytest.mark.anyio

KEY = "sk-test-RATE-0123456789"
HANG_GUARD_S = 60
"""Not a speed assert: a test that would otherwise wait out a 600 s budget fails instead."""


def openai(server: WireServer, **options) -> OpenAIProvider:
    options.setdefault("backoff", 0.01)
    return OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY, **options)


async def ask(provider: OpenAIProvider) -> str | None:
    with anyio.fail_after(HANG_GUARD_S):
        return (await provider.complete([Message("user", "hi")], [])).content


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- 429s that no wait fixes, and the ones a wait does -------------------------------------
async def test_an_insufficient_quota_429_fails_at_once_with_its_message():
    quota = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    with WireServer() as server:
        server.always = Reply(429, quota)
        with pytest.raises(ProviderError) as caught:
            await ask(openai(server))
    message = str(caught.value)
    assert "quota is used up" in message and "You exceeded your current quota" in message
    assert len(server.requests) == 1


async def test_a_header_less_429_backs_off_and_the_request_then_succeeds(monkeypatch):
    # The back-off's 1 s, 2 s... at a twentieth: the same pauses in the same ratio (the
    # sequence itself is checked on a fake clock below), 0.15 s of waiting instead of 3 s.
    monkeypatch.setattr(limits, "BACKOFF_BASE_S", 0.05)
    limited = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}
    with WireServer() as server:
        server.reply(Reply(429, limited), Reply(429, limited), Reply(body=openai_text("ok")))
        report = await evaluate(Agent(openai(server)), [Case("hi")])
    assert report.passed and report.cases[0].samples[0].run.retries == 2
    assert len(server.requests) == 3


def test_header_less_429s_in_a_row_pause_longer_each_time():
    clock = Clock()
    limiter = RateLimiter("api", clock=clock)
    pauses = []
    for _ in range(8):
        limiter.on_limited(None)
        pauses.append(limiter.paused_until - clock.now)
        clock.now = limiter.paused_until  # the next 429 answers the first request after it
    assert pauses == sorted(pauses) and pauses[0] < pauses[3]
    assert max(pauses) <= 30
    limiter.on_response(200, {})
    limiter.on_limited(None)  # an accepted response ends the streak
    assert limiter.paused_until - clock.now <= pauses[1]


def test_proxies_wait_headers_are_read():
    assert retry_after({"llm_provider-retry-after": "7"}) == 7
    assert retry_after({"llm_provider-retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "2", "llm_provider-retry-after": "9"}) == 2
    assert retry_after({"retry-after": "garbage"}) is None
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert retry_after({"retry-after": date}, now=1_000_000) == pytest.approx(30)


async def test_a_proxys_long_wait_header_fails_at_once():
    with WireServer() as server:
        server.always = Reply(
            429, {"error": {"message": "slow"}}, {"llm_provider-retry-after": "900"}
        )
        with pytest.raises(ProviderError, match="quota exhausted until"):
            await ask(openai(server))
    assert len(server.requests) == 1


async def test_a_retry_after_date_far_ahead_fails_at_once_naming_when():
    later = time.time() + 6 * 3600
    header = email.utils.formatdate(later, usegmt=True)
    with WireServer() as server:
        server.always = Reply(429, {"error": {"message": "daily cap"}}, {"Retry-After": header})
        with pytest.raises(ProviderError) as caught:
            await ask(openai(server))
    expected = time.strftime("%Y-%m-%d %H:", time.gmtime(later))
    assert f"quota exhausted until {expected}" in str(caught.value)
    assert len(server.requests) == 1


# -- the retry budget counts time queued in the limiter -------------------------------------
def test_a_request_joining_a_stall_gets_the_stalls_deadline_not_a_fresh_budget():
    clock = Clock()
    limiter = RateLimiter("api", clock=clock)
    start = clock.now
    limiter.on_limited(0.05)
    clock.now += 15
    limiter.on_limited(0.05)  # still rejecting everything
    # A request that joins now gives up with everyone else, 20 s after the stall began.
    assert limiter.give_up_at(clock.now, 20) == start + 20
    limiter.on_response(200, {})  # progress: the budget counts from here again
    assert limiter.give_up_at(clock.now, 20) == clock.now + 20
    clock.now += 100  # an idle limiter: an old stall does not fail a new request at once
    limiter.on_limited(0.05)
    assert limiter.give_up_at(clock.now, 20) == clock.now + 20


async def test_waiting_in_the_limiter_ends_at_the_deadline():
    limiter = RateLimiter("api", rpm=0.06)  # one request a thousand seconds
    await limiter.acquire()
    deadline = time.monotonic() + 0.05
    with anyio.fail_after(HANG_GUARD_S), pytest.raises(RateLimitWait) as caught:
        await limiter.acquire(deadline=lambda: deadline)
    assert "paced at" in str(caught.value) and "rpm setting" in str(caught.value)


async def test_an_always_429_api_fails_a_queue_of_cases_within_one_budget():
    """64 cases at concurrency 32: the second half starts once the first fails on the
    budget, and must not get a fresh budget each (that took 2 budgets and more)."""
    limited = Reply(429, {"error": {"message": "busy"}}, {"retry-after-ms": "50"})
    cases = [Case(f"question {i}", name=f"case {i}") for i in range(64)]
    with WireServer() as server:
        server.always = limited
        provider = openai(server)
        deadlines: set[float] = set()  # every give-up time asked for once the API stalled

        def logged(url: str, key: str, rpm: float | None, tpm: float | None) -> RateLimiter:
            limiter = RateLimiter(url, rpm=rpm, tpm=tpm)
            give_up_at = limiter.give_up_at

            def logged_give_up_at(started: float, budget: float) -> float:
                at = give_up_at(started, budget)
                if limiter.stalled_since is not None:
                    deadlines.add(at)
                return at

            limiter.give_up_at = logged_give_up_at  # type: ignore[method-assign]
            return limiter

        # A budget long enough that a busy machine's pause between two 429s does not look
        # like the end of the stall (0.5 s did, at a load of 10 on two cores).
        settings = RunSettings(
            concurrency=32, provider=ProviderOptions(retry_budget=2.0), runtime=Runtime(logged)
        )
        with anyio.fail_after(HANG_GUARD_S):
            report = await evaluate(Agent(provider), cases, settings=settings)
    samples = [case.samples[0] for case in report.cases]
    assert all(s.status == "error" for s in samples)
    assert all("retry budget" in (s.error or "") for s in samples), samples[40].error
    asked: dict[str, int] = {}
    for request in server.requests:
        question = request.body["messages"][-1]["content"]
        asked[question] = asked.get(question, 0) + 1
    later = [asked.get(f"question {i}", 0) for i in range(32, 64)]
    assert max(later) <= 1, later  # the later half gave up at once: the API was stalled
    # The limiter's decision: one deadline for every request, the stall's start + budget.
    assert len(deadlines) == 1, sorted(deadlines)


# -- limit headers that lie -----------------------------------------------------------------
@pytest.mark.parametrize(
    "headers",
    [
        {"x-ratelimit-limit-requests": "0.001", "x-ratelimit-limit-tokens": "1"},
        {"anthropic-ratelimit-requests-limit": "1e-9", "anthropic-ratelimit-tokens-limit": "0"},
        {"x-ratelimit-limit-requests": "nan", "x-ratelimit-limit-tokens": "inf"},
    ],
)
async def test_tiny_limit_headers_do_not_stall_later_requests(headers):
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"), headers=headers)
        provider = openai(server, retry_budget=30)
        for _ in range(4):
            assert await ask(provider) == "ok"
        assert provider.limiter().pace is None


async def test_every_wait_is_bounded_by_the_retry_budget():
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        provider = openai(server, rpm=0.01, retry_budget=0.2)  # one request in 100 minutes
        assert await ask(provider) == "ok"
        with pytest.raises(ProviderError) as caught:
            await ask(provider)
    message = str(caught.value)
    assert "still rate-limited" in message and "retry budget 0.2s" in message
    assert "its turn would come" in message and "rpm setting 0.01/min" in message
    assert len(server.requests) == 1


def test_a_pace_held_to_the_headers_probes_above_them_when_nothing_is_rejected():
    clock = Clock()
    limiter = RateLimiter("api", clock=clock)
    per_minute = {"x-ratelimit-limit-requests": "60"}  # really 60 a second
    limiter.on_response(200, per_minute)
    assert limiter.pace == pytest.approx(0.99)
    for _ in range(40):  # requests queue behind the pace and every one is accepted
        wait = limiter.reserve()
        clock.now += max(wait, 0.1)
        limiter.on_response(200, per_minute)
    assert limiter.header_verdict == "probing" and limiter.pace > 4
    assert "probing above the headers' 60/min" in limiter.status().reason
    # The API rejects at last, having accepted far more than the headers said: overruled.
    for _ in range(60):
        clock.now += 1 / 60
        limiter.on_response(200, per_minute)
    limiter.on_limited(0.1)
    assert limiter.header_verdict == "overruled"
    assert limiter.pace is not None and limiter.pace > 30
    assert "understated" in limiter.pace_reason()


def test_the_first_waves_429s_do_not_stop_the_probe_of_per_second_headers():
    """Issue 35 item 18: a server states its 100/s limit under the per-minute names with a
    burst of 10. The first wave (64 requests, before any header was read) draws 54 429s
    just after the headers arrive; they answered requests that never kept the headers'
    pace, so they must not count against it: the probe starts, and its 429 overrules."""
    clock = Clock()
    limiter = RateLimiter("api", clock=clock)
    mislabelled = {"x-ratelimit-limit-requests": "100"}  # really 100 a second
    limiter.on_response(200, mislabelled)
    for _ in range(54):  # the rest of the first wave, rejected as it arrives
        clock.now += 0.001
        limiter.on_response(429, mislabelled)
        limiter.on_limited(0.01)
    for _ in range(40):  # then every request held to the headers' pace is accepted
        clock.now += max(limiter.reserve(), 0.05)
        limiter.on_response(200, mislabelled)
    assert limiter.header_verdict == "probing", limiter.pace_reason()
    for _ in range(100):  # the probe reaches the real limit: accepted at 100/s, then a 429
        clock.now += 0.01
        limiter.on_response(200, mislabelled)
    limiter.on_limited(0.01)
    assert limiter.header_verdict == "overruled"
    # The rate was measured over the probe's ramp: grow fast until the next 429.
    assert limiter.provisional and limiter.pace is not None and limiter.pace > 50


async def test_a_per_second_limit_under_per_minute_names_runs_near_its_ideal():
    """The issue's server on default settings, scaled down (300 requests at 100/s, burst
    10, concurrency 64: ideal 2.95 s). It took 60 times the ideal."""
    n = 300
    with LoopbackAPI(rate=100, burst=10, latency=0.02, mislabelled=True) as api:
        provider = OpenAIProvider("m", base_url=api.url)
        cases = [Case(f"question {i}", [contains("answer")], name=f"c{i}") for i in range(n)]
        with anyio.fail_after(60):  # a stuck guard: at the headers' pace, three minutes
            runtime = Runtime()
            settings = RunSettings(concurrency=64, runtime=runtime)
            report = await evaluate(Agent(provider), cases, settings=settings)
        (limiter,) = runtime.limiters()
        status = limiter.status()
    assert report.passed, report.samples[0].error
    assert "understated" in status.reason or "learned" in status.reason, status.reason
    assert api.stats.limited / n <= 0.5


def test_headers_that_were_right_are_kept_after_one_probe():
    clock = Clock()
    limiter = RateLimiter("api", clock=clock)
    headers = {"x-ratelimit-limit-requests": "600"}  # 10 a second, and true
    limiter.on_response(200, headers)
    for _ in range(40):
        clock.now += max(limiter.reserve(), 0.1)
        limiter.on_response(200, headers)
    assert limiter.header_verdict == "probing"
    for _ in range(11):  # the API accepted about 10 a second, then rejected
        clock.now += 1 / 11
        limiter.on_response(200, headers)
    limiter.on_limited(0.1)
    assert limiter.header_verdict == "confirmed"
    assert limiter.pace is not None and limiter.pace <= 10
    clock.now += 60
    for _ in range(50):
        clock.now += max(limiter.reserve(), 0.1)
        limiter.on_response(200, headers)
    assert limiter.pace <= 10 and limiter.header_verdict == "confirmed"  # no second probe


async def test_headers_understating_the_limit_60_times_do_not_make_the_run_60_times_slower(
    monkeypatch,
):
    """Every response says 60/min; the server takes whatever comes. At the headers' pace
    these 60 cases take a minute; probing above it, a few seconds."""
    # Probing starts after 0.5 s at the headers' pace (not 2 s) and doubles every 0.125 s
    # (not 0.5 s): the same probe, four times sooner. Without it the run still takes the
    # headers' minute and fails on the guard below.
    monkeypatch.setattr(limits, "PROBE_AFTER_S", limits.PROBE_AFTER_S / 4)
    monkeypatch.setattr(limits, "PROBE_DOUBLING_S", limits.PROBE_DOUBLING_S / 4)
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"), headers={"x-ratelimit-limit-requests": "60"})
        provider = openai(server)
        cases = [Case(f"q{i}") for i in range(60)]
        with anyio.fail_after(30):  # half the headers' minute
            runtime = Runtime()
            report = await evaluate(
                Agent(provider), cases, settings=RunSettings(concurrency=8, runtime=runtime)
            )
        (limiter,) = runtime.limiters()
        status = limiter.status()
    assert report.passed
    assert status.reason.startswith("probing above the headers' 60/min"), status.reason


def test_the_limit_status_says_which_pace_and_why():
    status = LimitStatus(
        "http://api", True, 0.5, 9.0, 9.9, 0, "the API's rate-limit headers: 600/min"
    )
    assert str(status) == (
        "rate limited · waiting 0.5 s · 9 req/s · pace 9.9/s: the API's rate-limit headers: 600/min"
    )


# -- HTTP bodies ------------------------------------------------------------------------------
def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", raw_deflate),
    ],
)
async def test_compressed_bodies_are_decoded(encoding, encode):
    import json

    body = encode(json.dumps(openai_text("unzipped")).encode())
    with WireServer() as server:
        server.reply(Reply(body=body, headers={"Content-Encoding": encoding}))
        assert await ask(openai(server)) == "unzipped"
    assert server.requests[0].headers["Accept-Encoding"] == "gzip, deflate"


async def test_an_encoding_that_cannot_be_decoded_is_named():
    with WireServer() as server:
        server.reply(Reply(body=b"\x8b\x00garbage", headers={"Content-Encoding": "br"}))
        with pytest.raises(ProviderError, match="Content-Encoding 'br'"):
            await ask(openai(server))
        server.reply(Reply(body=b"not gzip at all", headers={"Content-Encoding": "gzip"}))
        with pytest.raises(ProviderError, match="corrupt gzip body"):
            await ask(openai(server))


async def test_a_gzip_bomb_is_refused():
    bomb = gzip.compress(b"{" + b" " * 5_000_000 + b"}")
    with WireServer() as server:
        server.reply(Reply(body=bomb, headers={"Content-Encoding": "gzip"}))
        with pytest.raises(ProviderError, match="body over 1,000,000 bytes"):
            await ask(openai(server, max_response_bytes=1_000_000))


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_a_clear_error_and_the_key_goes_nowhere_else(status):
    with WireServer() as server, WireServer() as elsewhere:
        target = elsewhere.url + "/v1/chat/completions"
        elsewhere.always = Reply(body=openai_text("stolen"))
        server.reply(Reply(status, {"moved": True}, {"Location": target}))
        with pytest.raises(ProviderError) as caught:
            await ask(openai(server))
    message = str(caught.value)
    assert f"HTTP {status}" in message and target in message and "not followed" in message
    assert elsewhere.requests == [] and len(server.requests) == 1
    assert KEY not in message


def test_the_cli_says_which_pace_it_keeps_once_per_change(capsys):
    from tui_eval.cli.progress import Progress
    from tui_eval.run.events import RunStatus

    progress = Progress(live=False)
    headers = LimitStatus(
        "http://api/v1", False, 0, 9.0, 9.9, 0, "the API's rate-limit headers: 600/min"
    )
    probing = LimitStatus(
        "http://api/v1", False, 0, 9.0, 20.0, 0, "probing above the headers' 600/min"
    )
    for status in (headers, headers, probing):
        progress.on_event(RunStatus([status], None, None))
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "[] rate limit http://api/v1: pace 9.9 req/s (the API's rate-limit headers: 600/min)",
        "[] rate limit http://api/v1: pace 20 req/s (probing above the headers' 600/min)",
    ]

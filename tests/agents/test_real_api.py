"""Real API runs against a loopback server: the shared limiter, the retry budget, prices,
the cost budget, the response cache, and settings from spec, YAML and CLI."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import cli
from tui_eval import Agent, Case, RunSettings, contains, equals, evaluate
from tui_eval.agents import TokenLimitExceeded
from tui_eval.agents.http.context import Runtime
from tui_eval.agents.http.limits import LimitStatus, RateLimiter
from tui_eval.agents.http.options import ProviderOptions
from tui_eval.agents.providers import ModelSpecError, resolve_model
from tui_eval.agents.providers.openai import OpenAIProvider
from tui_eval.run.events import RunStatus
from tui_eval.testing import ScriptedProvider, text

from .wire_server import Reply, WireServer, openai_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from loopback_api import LoopbackAPI

pytestmark = pytest.mark.anyio


def echo_cases(n: int, samples: int = 1) -> list[Case]:
    return [
        Case(f"question {i}", checks=[equals(f"answer {i}")], name=f"case {i}", samples=samples)
        for i in range(n)
    ]


class LimiterLog:
    """What one limiter decided, on its own clock: every slot it handed out (with what it
    knew then), every pause a 429 asked for, and when each request was let go.

    These are the limiter's decisions, so the assertions on them hold at any speed: a
    loaded machine delays requests past their slots (and a real token bucket then rejects
    a few more), but never moves a slot or shortens a pause."""

    def __init__(self, limiter: RateLimiter) -> None:
        self.limiter = limiter
        self.slots: list[tuple[float, bool]] = []  # (slot, the headers' limit was known)
        self.pauses: list[tuple[float, float]] = []  # (429 handled at, retry-after)
        self.released: list[float] = []
        reserve, acquire, on_limited = limiter.reserve, limiter.acquire, limiter.on_limited
        clock = limiter.clock
        read: list[float] = [0.0]

        def recorded_clock() -> float:
            read[0] = clock()
            return read[0]

        limiter.clock = recorded_clock

        def logged_reserve(tokens: int = 0) -> float:
            known = limiter.header_request_cap is not None and limiter.header_verdict is None
            wait = reserve(tokens)
            # The slot is `now + wait` for the `now` reserve() read. Reading the clock again
            # here would add whatever time passed since (a loaded machine, the server thread
            # taking the GIL) to this slot alone, and shrink its gap to the next one.
            self.slots.append((read[0] + wait, known))
            return wait

        async def logged_acquire(tokens: int = 0, deadline: Any = None) -> None:
            await acquire(tokens, deadline)
            self.released.append(limiter.clock())

        def logged_on_limited(retry_after: float | None) -> None:
            self.pauses.append((limiter.clock(), retry_after or 0.0))
            on_limited(retry_after)

        limiter.reserve = logged_reserve  # type: ignore[method-assign]
        limiter.acquire = logged_acquire  # type: ignore[method-assign]
        limiter.on_limited = logged_on_limited  # type: ignore[method-assign]


def logged_runtime() -> tuple[Runtime, list[LimiterLog]]:
    """A runtime whose every limiter is logged (its runs' logs, in the order made)."""
    logs: list[LimiterLog] = []

    def factory(base_url: str, key: str, rpm: float | None, tpm: float | None) -> RateLimiter:
        logs.append(LimiterLog(RateLimiter(base_url, rpm=rpm, tpm=tpm)))
        return logs[-1].limiter

    return Runtime(factory), logs


async def test_a_429_pauses_every_worker_and_the_pace_is_learned_without_headers():
    # 40 requests from 20 workers against a 40 req/s bucket that sends no limit headers.
    with LoopbackAPI(rate=40, burst=2, latency=0.01, headers=False) as api:
        provider = OpenAIProvider("m", base_url=api.url)
        runtime, logs = logged_runtime()
        settings = RunSettings(concurrency=20, runtime=runtime)
        report = await evaluate(Agent(provider), echo_cases(40), settings=settings)
    assert report.passed, report.header()
    (log,) = logs
    stats = api.stats.as_dict()
    assert api.stats.ok == 40 and api.stats.limited >= 1, stats  # burst 2: the first wave hits
    # Every request the server saw was let go by the shared limiter, and every 429 told it.
    assert len(log.released) == api.stats.ok + api.stats.limited, stats
    assert len(log.pauses) == api.stats.limited, stats
    # A 429 pauses every worker: nothing is let go while a pause it asked for still runs.
    early = [(t, at, wait) for t in log.released for at, wait in log.pauses if at < t < at + wait]
    assert not early, early[:3]
    # ...and the pace is learned from the 429s alone.
    limiter = log.limiter
    assert limiter.learned and limiter.pace is not None and limiter.header_request_cap is None


async def test_rate_limit_headers_set_the_pace_before_anything_is_rejected_again(monkeypatch):
    # Held at the headers' pace for 2 s with nothing rejected, the limiter probes above
    # them (tested with a fake clock below); a slow machine stretches this run past that.
    monkeypatch.setattr("tui_eval.agents.http.limits.PROBE_AFTER_S", 3600.0)
    with LoopbackAPI(rate=50, burst=2, latency=0.01) as api:
        provider = OpenAIProvider("m", base_url=api.url)
        runtime, logs = logged_runtime()
        settings = RunSettings(concurrency=10, runtime=runtime)
        report = await evaluate(Agent(provider), echo_cases(50), settings=settings)
    (log,) = logs
    limiter = log.limiter
    assert report.passed
    assert limiter.pace is not None and limiter.pace <= 50
    # Only the first wave (one request per worker) leaves before a response said the limit;
    # from then on every slot is at least one 50/s step after the one before.
    before = [slot for slot, known in log.slots if not known]
    after = sorted(slot for slot, known in log.slots if known)
    assert len(before) <= 10, len(before)
    assert len(after) >= 40, len(after)
    gaps = [b - a for a, b in itertools.pairwise(after)]
    assert min(gaps) >= 1 / 50 - 1e-9, min(gaps)


def test_limiter_pause_and_aimd_with_a_fake_clock():
    now = [100.0]
    limiter = RateLimiter("api", clock=lambda: now[0])
    for _ in range(30):  # the server accepted 30 requests in the last second
        now[0] += 1 / 30
        limiter.on_response(200, {})
    limiter.on_limited(0.5)
    assert limiter.paused_until == pytest.approx(now[0] + 0.5)
    assert limiter.pace is not None and 25 < limiter.pace < 31  # just under the accepted rate
    cut = limiter.pace
    limiter.on_limited(0.5)  # same episode: no second cut
    assert limiter.pace == cut
    now[0] += 10
    limiter.on_response(200, {})  # ten seconds without a 429: faster again
    assert limiter.pace > cut
    limiter.on_response(200, {"x-ratelimit-limit-requests": "600"})
    assert limiter.pace == pytest.approx(9.9)  # just under the server's own limit
    assert "rate limited" not in str(limiter.status())  # the last 429 was 10 s ago
    limiter.on_limited(1.5)
    assert str(limiter.status()).startswith("rate limited · waiting 1.5 s")


async def test_a_run_that_stops_progressing_fails_on_its_retry_budget():
    with WireServer() as server:
        server.reply(*[Reply(429, {"error": {"message": "slow"}}, {"retry-after-ms": "100"})] * 40)
        agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1"))
        report = await evaluate(agent, [Case("hi")], provider=ProviderOptions(retry_budget=0.2))
    sample = report.cases[0].samples[0]
    assert sample.status == "error"
    assert "still rate-limited" in (sample.error or "") and "retry budget 0.2s" in sample.error


async def test_known_models_are_priced_without_a_price_callable():
    with LoopbackAPI(latency=0) as api:
        agent = Agent(OpenAIProvider("gpt-4o-mini", base_url=api.url))
        report = await evaluate(agent, echo_cases(3))
        unknown_model = OpenAIProvider("my-local-llama", base_url=api.url)
        unknown = await evaluate(Agent(unknown_model), echo_cases(1))
        overridden = await evaluate(agent, echo_cases(1), price=lambda usage: 1.0)
    # The model decides, not the host: gpt-4o-mini on this machine (a proxy) is priced.
    assert report.priced and report.cost is not None and report.cost > 0
    assert "$" in report.header()
    assert not unknown.priced and unknown.cost is None
    assert overridden.cost == 1.0


async def test_max_cost_starts_no_sample_past_the_budget():
    agent = Agent(ScriptedProvider.factory([text("ok")]))
    cases = [
        Case(f"q{i}", checks=[contains("ok")], name=f"c{i}", model=agent.model) for i in range(10)
    ]
    report = await evaluate(agent, cases, concurrency=1, price=lambda usage: 0.01, max_cost=0.035)
    # 0.03 spent: the next sample (0.01, like every one so far) would pass 0.035.
    assert len(report.samples) == 3
    assert report.cancelled and report.stopped is not None
    assert "max_cost $0.035 reached" in report.stopped
    assert "stopped: max_cost" in report.header()


async def test_max_cost_counts_samples_in_flight():
    with LoopbackAPI(latency=0.05) as api:
        agent = Agent(OpenAIProvider("m", base_url=api.url))
        report = await evaluate(
            agent, echo_cases(40), concurrency=8, price=lambda usage: 0.01, max_cost=0.1
        )
    # Once some are priced, samples in flight count at the mean: the overshoot is bounded
    # by the first wave, not by the whole suite.
    assert 10 <= len(report.samples) <= 18, len(report.samples)
    assert report.stopped


async def test_token_limit_stops_the_agent_loop():
    agent = Agent(ScriptedProvider([text("a long answer " * 50)]), token_limit=20)
    with pytest.raises(TokenLimitExceeded, match="over its token_limit=20"):
        await agent.run("hi")


async def test_the_cache_replays_per_sample_and_never_merges_samples(tmp_path):
    with LoopbackAPI(latency=0) as api:
        agent = Agent(OpenAIProvider("m", base_url=api.url))
        first = await evaluate(agent, echo_cases(3, samples=2), cache=True)
        assert api.stats.ok == 6 and not any(s.cached for s in first.samples)
        again = await evaluate(agent, echo_cases(3, samples=2), cache=True)
        assert api.stats.ok == 6  # every answer came from the cache
        assert all(s.cached for s in again.samples) and again.passed
        assert "6 cached" in again.header()
        more = await evaluate(agent, echo_cases(3, samples=3), cache="read-only")
        assert api.stats.ok == 9  # sample 3 of each case is a new request...
        later = await evaluate(agent, echo_cases(3, samples=3), cache="read-only")
        assert api.stats.ok == 12  # ...and read-only stored none of them
    assert [s.cached for s in more.cases[0].samples] == [True, True, False]
    assert later.passed
    stored = list((Path(tmp_path).parent).glob("**/cache/responses/*/*.json"))
    assert len(stored) >= 6


async def test_errors_are_never_cached():
    with WireServer() as server:
        server.reply(
            Reply(400, {"error": {"message": "bad request"}}), Reply(body=openai_text("ok"))
        )
        agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1"))
        failed = await evaluate(agent, [Case("hi")], cache=True)
        passed = await evaluate(agent, [Case("hi", checks=[contains("ok")])], cache=True)
    assert failed.cases[0].samples[0].status == "error"
    assert passed.passed and len(server.requests) == 2


async def test_spec_options_reach_the_provider():
    with WireServer() as server:
        server.reply(Reply(body=openai_text("ok")))
        spec = f"openai-compatible:m@{server.url}/v1?rpm=120&timeout=5&header.X-Team=evals"
        provider = resolve_model(spec)
        assert isinstance(provider, OpenAIProvider)
        options = provider.effective_options()
        assert options.rpm == 120 and options.timeout == 5
        await Agent(provider).run("hi")
        assert server.requests[0].headers.get("X-Team") == "evals"
        assert provider.limiter().pace == pytest.approx(1.98)  # just under rpm=120
    with pytest.raises(ModelSpecError, match="unknown option 'rmp'"):
        resolve_model("openai-compatible:m@http://127.0.0.1:1/v1?rmp=5")
    with pytest.raises(ModelSpecError, match="rpm"):
        resolve_model("openai-compatible:m@http://127.0.0.1:1/v1?rpm=fast")


def _yaml_suite(folder: Path, url: str, extra: str = "") -> Path:
    path = folder / "api.yaml"
    path.write_text(
        f"name: api\nmodel: openai-compatible:m@{url}/v1\n"
        "provider:\n  headers: {X-Suite: yaml}\n  timeout: 7\n"
        f"{extra}cases:\n  - input: hi\n    checks: [{{contains: ok}}]\n"
    )
    return path


def test_yaml_and_cli_settings_reach_the_provider(tmp_path):
    with WireServer() as server:
        server.reply(Reply(body=openai_text("ok")), Reply(body=openai_text("ok")))
        path = _yaml_suite(tmp_path, server.url, "cache: on\nmax_cost: 5\n")
        done = cli("run", "--headless", str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        # A model on this machine has no price: the budget cannot be enforced, and says so.
        assert "max_cost $5 was not enforced: no sample had a price" in done.stdout
        assert server.requests[0].headers.get("X-Suite") == "yaml"
        done = cli(
            "run",
            "--headless",
            str(path),
            "--header",
            "X-Cli: flag",
            "--header",
            "Authorization: Bearer sk-cli-secret-123",
            "--rpm",
            "6000",
            "--cache",
            "off",
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert server.requests[1].headers.get("X-Cli") == "flag"
        assert server.requests[1].headers.get("X-Suite") == "yaml"
        assert server.requests[1].headers.get("Authorization") == "Bearer sk-cli-secret-123"
    home = Path(os.environ["TUI_EVAL_HOME"])
    on_disk = [p.read_text() for p in home.rglob("*") if p.is_file()]
    assert on_disk and not any("sk-cli-secret-123" in text for text in on_disk)
    done = cli("run", "--headless", str(path), "--header", "no colon", cwd=tmp_path)
    # A usage error that never shows the value (it may be a key).
    assert done.returncode == 2 and "without a colon" in done.stderr
    assert "no colon" not in done.stderr


def test_yaml_suite_rejects_unknown_provider_options(tmp_path):
    path = _yaml_suite(tmp_path, "http://127.0.0.1:1", "")
    path.write_text(path.read_text().replace("timeout: 7", "timeuot: 7"))
    done = cli("run", "--headless", str(path), cwd=tmp_path)
    assert done.returncode == 2 and "timeuot" in done.stderr and str(path) in done.stderr


def test_the_run_header_shows_rate_limits_and_the_budget():
    from tui_eval.run.state import RunState
    from tui_eval.tui.widgets.run_header import RunHeader

    state = RunState()
    status = LimitStatus("http://api", True, 1.2, 96.0, 100.0, 3)
    state.apply(RunStatus([status], 0.0123, 0.5))
    state.cost = 0.0123
    line = RunHeader._in_flight(state).plain
    assert "rate limited · waiting 1.2 s · 96 req/s" in line
    assert "$0.0123 of $0.5" in RunHeader._counters(state).plain


def test_json_report_keeps_cached_and_stopped(tmp_path):
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report

    report = Report(
        "r", [CaseResult("c", [SampleResult("c", 0, "passed", cached=True)])], stopped="max_cost"
    )
    path = tmp_path / "r.json"
    report.save(path)
    loaded = Report.load(path)
    assert loaded.stopped == "max_cost" and loaded.cases[0].samples[0].cached
    assert json.loads(path.read_text())


def test_credential_headers_never_reach_the_journal(tmp_path):
    from tui_eval.core.settings import RunSettings
    from tui_eval.service.request import RunRequest

    options = RunRequest(
        settings=RunSettings(
            provider=ProviderOptions(
                headers={
                    "Authorization": "Bearer sk-live-123",
                    "X-Api-Key": "k",
                    "OpenAI-Project": "p1",
                }
            )
        )
    )
    kept = options.for_disk().settings
    assert kept.provider is not None and kept.provider.headers == {"OpenAI-Project": "p1"}
    assert options.settings.provider is not None
    assert "Authorization" in options.settings.provider.headers
    assert "sk-live-123" not in options.for_disk().model_dump_json()

"""A run's context is explicit: its session owns the rate limiters, its samples carry the rest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tui_eval
from tui_eval import Agent, Case, RunSettings, evaluate
from tui_eval.agents.http.context import ProviderSession, current_sample
from tui_eval.agents.http.limits import RateLimiter
from tui_eval.agents.providers.openai import OpenAIProvider
from tui_eval.run.sample_runner import SampleRunner
from tui_eval.run.sample_sources import AgentRuns

from .wire_server import Reply, WireServer, openai_text

pytestmark = pytest.mark.anyio

KEY = "sk-test-CONTEXT-0123456789"


def answering(server: WireServer) -> tuple[OpenAIProvider, list[RateLimiter], object]:
    """A provider, the limiters its samples' requests went through, and an agent using it."""
    provider = OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY)
    used: list[RateLimiter] = []

    async def agent(question: str) -> str:
        result = await Agent(provider).run(question)
        used.append(provider.limiter())  # the one the run's session gives this quota
        return str(result.output)

    return provider, used, agent


async def test_runs_with_the_default_session_share_a_quotas_limiter(provider_session):
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        _, used, agent = answering(server)
        await evaluate(agent, [Case("a")])
        await evaluate(agent, [Case("b")])
    first, second = used
    assert first is second
    assert provider_session.limiters() == [first]


async def test_runs_given_sessions_of_their_own_share_no_limiter(provider_session):
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        _, used, agent = answering(server)
        sessions = [ProviderSession(), ProviderSession()]
        for session in sessions:
            await evaluate(agent, [Case("a")], settings=RunSettings(session=session))
        await evaluate(agent, [Case("b")])  # given none: the default session
    assert len({id(limiter) for limiter in used}) == 3
    assert [s.limiters() for s in sessions] == [[used[0]], [used[1]]]
    assert provider_session.limiters() == [used[2]]


async def test_a_session_made_the_default_serves_the_runs_given_none(provider_session):
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        _, used, agent = answering(server)
        fresh = ProviderSession()
        with fresh.as_default():  # what each test's fixture does
            await evaluate(agent, [Case("a")])
            runner = SampleRunner([Case("b")], AgentRuns(agent))  # the engine's own default
            assert (await runner.sample(0, 0)).status == "passed"
        await evaluate(agent, [Case("c")])
    assert fresh.limiters() == [used[0]] and used[1] is used[0]
    assert provider_session.limiters() == [used[2]] and used[2] is not used[0]


@pytest.mark.parametrize(
    ("userinfo", "options"),
    [("me:pw@", {"api_key": ""}), ("", {"api_key": KEY, "headers": {"Authorization": "Bearer b"}})],
    ids=["credentials in base_url", "key given as a header"],
)
async def test_a_providers_limiter_is_the_one_its_requests_go_through(
    provider_session, userinfo, options
):
    """The quota is named by the key a request carries, however the key was given."""
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        base_url = server.url.replace("http://", f"http://{userinfo}") + "/v1"
        provider = OpenAIProvider("m", base_url=base_url, **options)
        await Agent(provider).run("hi")
        assert provider_session.limiters() == [provider.limiter()]


def test_a_session_builds_each_quotas_limiter_once_with_its_factory():
    built: list[tuple[str, str, float | None, float | None]] = []

    def factory(base_url: str, key: str, rpm: float | None, tpm: float | None) -> RateLimiter:
        built.append((base_url, key, rpm, tpm))
        return RateLimiter(base_url, rpm=rpm, tpm=tpm)

    session = ProviderSession(factory)
    one = session.limiter("http://api", "k1", rpm=60)
    assert session.limiter("http://api", "k1") is one
    assert session.limiter("http://api", "k2") is not one
    assert built == [("http://api", "k1", 60, None), ("http://api", "k2", None, None)]


async def test_an_agent_sees_the_sample_it_runs_in():
    seen: list[tuple[str, int, object]] = []

    async def agent(question: str) -> str:
        sample = current_sample()
        assert sample is not None
        seen.append((sample.case_name, sample.index, sample.run.provider))
        return question

    assert current_sample() is None
    await evaluate(agent, [Case("q", name="named", samples=2)], concurrency=1)
    assert seen == [("named", 0, None), ("named", 1, None)]
    assert current_sample() is None


async def test_the_connections_a_run_opens_are_closed_when_it_ends():
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        _, _, agent = answering(server)
        open_during: list[object] = []

        async def watched(question: str) -> str:
            answer = await agent(question)
            run = current_sample().run
            open_during.extend(run.sockets._transports.values())
            return answer

        await evaluate(watched, [Case("a")])
    (connections,) = open_during  # the run's own connections (aiohttp's)...
    assert connections._session is None  # ...closed when the run ended


def test_the_current_sample_is_the_one_context_variable():
    """Everything else a run needs travels in explicit objects (issue #33)."""
    root = Path(tui_eval.__file__).parent
    defined = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bContextVar\(", line)
    ]
    assert len(defined) == 1 and defined[0].startswith("agents/http/context.py:"), defined

"""An LLM-driven user and an LLM agent, both `openai:gpt-4o-mini` through a loopback
OpenAI-compatible server: the user ends the conversation with its stop signal, `max_turns`
bounds one that never stops, both parties' requests go through the run's one rate limiter
and its response cache, and the sample's cost is the agent's plus the user's, the user's
part kept apart on the conversation (issue 37)."""

from __future__ import annotations

from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from tests.agents.chat_server import MODEL, ChatServer, completion, is_user
from tests.agents.wire_server import Reply
from tui_eval import Agent, Case, RunSettings, SimulatedUser, evaluate, tool_called
from tui_eval.agents.http.context import Runtime
from tui_eval.agents.http.limits import RateLimiter
from tui_eval.agents.messages import Usage

pytestmark = pytest.mark.anyio

AGENT_TOKENS = (1000, 100)
"""Every agent response's (prompt, completion) tokens."""
USER_TOKENS = (300, 30)
"""Every user response's: distinct from the agent's, so a mix-up shows."""
LINES = ["Please cancel order A-17.", "Yes, go ahead.", "Thank you, goodbye! ###STOP###"]


def price(tokens: tuple[int, int]) -> float:
    """genai-prices' price of one response, independently of tui-eval's meter."""
    usage = PriceUsage(input_tokens=tokens[0], output_tokens=tokens[1])
    return float(calc_price(usage, MODEL, provider_id="openai").total_price)


def cancel(order_id: str) -> str:
    """Cancel an order."""
    return f"order {order_id} cancelled"


def agent_reply(body: dict[str, Any]) -> Reply:
    """Asks to confirm; cancels once the user confirms; says so after the tool ran."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(body=completion("Order A-17 is cancelled.", prompt=1000, output=100))
    if "yes" in str(last.get("content") or "").lower():
        return Reply(
            body=completion(call=("cancel", {"order_id": "A-17"}), prompt=1000, output=100)
        )
    return Reply(
        body=completion("Shall I cancel order A-17? Please confirm.", prompt=1000, output=100)
    )


def scripted_user(lines: list[str]) -> Any:
    """The user says `lines` in order (its earlier messages come back to it as the
    assistant's), the last one again and again once they run out."""

    def reply(body: dict[str, Any]) -> Reply:
        said = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(body=completion(lines[min(said, len(lines) - 1)], prompt=300, output=30))

    return reply


def answer(user: Any) -> Any:
    return lambda body: user(body) if is_user(body) else agent_reply(body)


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    def point_at(server: ChatServer) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    return point_at


def shop_case(model: str = f"openai:{MODEL}", **user_options: Any) -> Case:
    user = SimulatedUser(
        "You want order A-17 cancelled. Confirm when asked.", model=model, **user_options
    )
    return Case(user=user, checks=[tool_called("cancel", order_id="A-17")], name="cancel A-17")


def agent(model: str = f"openai:{MODEL}") -> Agent:
    return Agent(model, tools=[cancel], instructions="You run a shop's desk.")


async def test_the_user_ends_on_its_stop_signal_and_its_cost_is_kept_apart(openai_env):
    with ChatServer(answer(scripted_user(LINES))) as server:
        openai_env(server)
        report = await evaluate(agent(), [shop_case()])
    sample = report.samples[0]
    assert sample.passed, (sample.error, sample.checks)
    conversation = sample.run.conversation
    assert conversation.ended_by == "user" and conversation.closing == "Thank you, goodbye!"
    assert [t.user for t in conversation.turns] == LINES[:2]
    assert [t.reply for t in conversation.turns] == [
        "Shall I cancel order A-17? Please confirm.",
        "Order A-17 is cancelled.",
    ]
    # Three user messages (the third one the stop), three agent responses (one, then two).
    assert len(server.of_user()) == 3 and len(server.of_agent()) == 3
    assert conversation.user_usage == Usage(900, 90, 3)
    assert [t.user_usage for t in conversation.turns] == [Usage(300, 30, 1)] * 2
    assert sample.run.usage == Usage(3000, 300, 3)  # the agent's alone
    assert [t.usage for t in conversation.turns] == [Usage(1000, 100, 1), Usage(2000, 200, 2)]
    assert sample.usage == sample.run.usage + conversation.user_usage
    user_cost, agent_cost = 3 * price(USER_TOKENS), 3 * price(AGENT_TOKENS)
    assert conversation.user_cost == pytest.approx(user_cost, rel=1e-9)
    assert sample.cost == pytest.approx(agent_cost + user_cost, rel=1e-9)
    assert report.priced


async def test_max_turns_bounds_a_user_that_never_stops(openai_env):
    with ChatServer(
        answer(scripted_user(["Please cancel order A-17.", "Hmm, are you sure?"]))
    ) as server:
        openai_env(server)
        report = await evaluate(agent(), [shop_case(max_turns=3)])
    conversation = report.samples[0].run.conversation
    assert conversation.ended_by == "max_turns" and conversation.max_turns == 3
    assert len(conversation.turns) == 3
    # The user is not asked for a message past the limit.
    assert len(server.of_user()) == 3 and conversation.user_usage.requests == 3


class CountingLimiter(RateLimiter):
    """A quota's limiter that counts the requests it let go."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.let_go = 0

    async def acquire(self, tokens: int = 0, deadline: Any = None) -> None:
        await super().acquire(tokens, deadline)
        self.let_go += 1


async def test_both_parties_go_through_the_runs_one_limiter(openai_env):
    made: list[CountingLimiter] = []

    def limiter(base_url: str, key: str, rpm: float | None, tpm: float | None) -> RateLimiter:
        made.append(CountingLimiter(base_url, rpm=rpm, tpm=tpm))
        return made[-1]

    user = scripted_user(LINES)
    limited: list[dict[str, Any]] = []

    def user_once_limited(body: dict[str, Any]) -> Reply:
        if not limited:  # the user's first request is told to wait
            limited.append(body)
            return Reply(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "20"})
        return user(body)

    with ChatServer(answer(user_once_limited)) as server:
        openai_env(server)
        report = await evaluate(
            agent(), [shop_case()], settings=RunSettings(runtime=Runtime(limiter))
        )
    sample = report.samples[0]
    assert sample.passed, sample.error
    assert limited and is_user(limited[0])
    # One quota, one limiter: it let every request go, the user's as well as the agent's,
    # and the user's 429 paused it (so it paused the agent too).
    (shared,) = made
    assert len(server.of_user()) == 4 and len(server.of_agent()) == 3
    assert shared.let_go == len(server.requests) == 7
    assert shared.rejected == 1 and shared.paused_until > 0


async def test_a_rerun_with_the_cache_asks_neither_party_s_model_again(openai_env):
    with ChatServer(answer(scripted_user(LINES))) as server:
        openai_env(server)
        first = await evaluate(agent(), [shop_case()], cache="on")
        sent = len(server.requests)
        second = await evaluate(agent(), [shop_case()], cache="on")
    assert sent == 6 and len(server.requests) == sent  # nothing more went upstream
    again = second.samples[0]
    assert again.passed and again.cached
    one, two = first.samples[0].run.conversation, again.run.conversation
    assert [(t.user, t.reply) for t in two.turns] == [(t.user, t.reply) for t in one.turns]
    assert two.ended_by == "user" and two.user_usage == one.user_usage


async def test_a_price_function_prices_the_user_s_usage_too(openai_env):
    def by_the_token(usage: Usage) -> float:
        return usage.input_tokens * 1e-6 + usage.output_tokens * 4e-6

    with ChatServer(answer(scripted_user(LINES))) as server:
        openai_env(server)
        report = await evaluate(agent(), [shop_case()], price=by_the_token)
    sample = report.samples[0]
    assert sample.passed, sample.error
    conversation = sample.run.conversation
    assert conversation.user_cost == pytest.approx(by_the_token(Usage(900, 90, 3)))
    assert [t.cost for t in conversation.turns] == pytest.approx(
        [by_the_token(t.usage) for t in conversation.turns]
    )
    assert sample.cost == pytest.approx(by_the_token(sample.run.usage) + conversation.user_cost)


async def test_a_model_without_a_price_leaves_the_costs_unknown(openai_env):
    def unpriced(body: dict[str, Any]) -> Reply:
        reply = answer(scripted_user(LINES))(body)
        reply.body["model"] = "my-own-model"
        return reply

    with ChatServer(unpriced) as server:
        openai_env(server)
        unknown = "openai:my-own-model"
        report = await evaluate(agent(unknown), [shop_case(unknown)])
    sample = report.samples[0]
    assert sample.passed, sample.error
    conversation = sample.run.conversation
    assert sample.cost is None and conversation.user_cost is None
    assert [t.cost for t in conversation.turns] == [None, None]

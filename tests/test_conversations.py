"""Conversations with scripted and simulated users: turns, state checks, fault attribution."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pydantic
import pytest

from tui_eval import (
    Agent,
    Case,
    RunSettings,
    ScriptedUser,
    SimulatedUser,
    at_turn,
    current_state,
    evaluate,
    every_turn,
    goal_reached,
    llm_judge,
    no_error,
    not_contains,
    state_equals,
    state_matches,
    tool_called,
)
from tui_eval.agents.providers.scripted import ScriptedProvider, call, text
from tui_eval.agents.state import Environment, differences, same_value
from tui_eval.testing import verdict

pytestmark = pytest.mark.anyio

SHOP: dict[str, Any] = {
    "orders": {"A-17": {"status": "paid", "refund": 0}, "A-18": {"status": "paid", "refund": 0}}
}


def look_up(order_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """Read an order."""
    return dict(state["orders"][order_id])


def cancel(order_id: str, refund: float, state: dict[str, Any]) -> str:
    """Cancel an order and refund it."""
    order = state["orders"][order_id]
    order["status"] = "cancelled"
    order["refund"] = refund
    return "cancelled"


def broken_tool(order_id: str) -> str:
    """Always fails: the shop's backend is down."""
    raise ConnectionError("backend unavailable")


def shop_agent(*steps: Any, tools: tuple[Any, ...] = (look_up, cancel)) -> Agent:
    return Agent(ScriptedProvider(list(steps)), tools=list(tools))


FIVE_TURNS = [
    call("look_up", {"order_id": "A-17"}),
    text("Order A-17 is paid. What would you like to do?"),
    text("Do you want me to cancel it? Please confirm."),
    call("cancel", {"order_id": "A-17", "refund": 25.0}),
    text("Cancelled, refund of 25 issued."),
    text("Anything else?"),
    text("Goodbye!"),
]
LINES = ["Cancel it please.", "Yes, I confirm.", "Was the refund 25?", "No, thanks. Bye."]


async def run_one(case: Case, agent: Any, **settings: Any) -> Any:
    report = await evaluate(agent, [case], settings=RunSettings(**settings))
    return report.cases[0]


async def test_a_five_turn_scripted_conversation_records_every_turn_in_order() -> None:
    case = Case(
        "Hi, I have an order A-17.",
        user=ScriptedUser(LINES),
        state=SHOP,
        checks=[
            tool_called("cancel", order_id="A-17"),
            no_error(),
            state_equals(
                {
                    "orders": {
                        "A-17": {"status": "cancelled", "refund": 25},
                        "A-18": SHOP["orders"]["A-18"],
                    }
                }
            ),
            llm_judge("polite", model=ScriptedProvider([verdict(0.9, "polite")])),
        ],
    )
    result = await run_one(case, shop_agent(*FIVE_TURNS))
    sample = result.samples[0]
    assert sample.status == "passed", sample.first_failure
    conversation = sample.run.conversation
    assert [t.user for t in conversation.turns] == ["Hi, I have an order A-17.", *LINES]
    assert [t.index for t in conversation.turns] == [1, 2, 3, 4, 5]
    assert conversation.turns[0].reply == "Order A-17 is paid. What would you like to do?"
    assert [c.name for c in conversation.turns[0].tool_calls] == ["look_up"]
    assert conversation.turns[0].changes == []  # a read changes nothing
    assert [str(c) for c in conversation.turns[2].changes] == [
        "orders.A-17.status: 'paid' → 'cancelled'",
        "orders.A-17.refund: 0 → 25.0",
    ]
    assert conversation.ended_by == "user"  # the script ran out
    assert sample.run.output == "Goodbye!"
    assert sample.run.tool_names == ["look_up", "cancel"]
    roles = [m.role for m in sample.run.messages]
    assert roles.count("user") == 5 and roles[0] == "user"
    assert sample.run.turns == 7  # model responses over the whole conversation
    assert sample.fault is None
    # The template is copied per sample, never changed.
    assert SHOP["orders"]["A-17"]["status"] == "paid"


async def test_state_equals_fails_with_a_readable_diff_and_compares_numbers_by_value() -> None:
    expected = {
        "orders": {"A-17": {"status": "cancelled", "refund": 25}, "A-18": SHOP["orders"]["A-18"]}
    }
    wrong = [
        call("cancel", {"order_id": "A-18", "refund": 25}),  # the wrong order
        text("Done."),
    ]
    case = Case("Cancel A-17.", user=ScriptedUser([]), state=SHOP, checks=[state_equals(expected)])
    sample = (await run_one(case, shop_agent(*wrong))).samples[0]
    assert sample.status == "failed"
    reason = sample.checks[0].reason
    assert "orders.A-17.status: expected 'cancelled', got 'paid'" in reason
    assert "orders.A-18.status: expected 'paid', got 'cancelled'" in reason
    assert same_value(25, 25.0) and not same_value(True, 1)
    assert differences({"a": [1, 2.0]}, {"a": [1.0, 2]}) == []


async def test_state_equals_ignores_paths_and_state_matches_takes_a_function() -> None:
    expected = {"orders": {"A-17": {"status": "cancelled", "refund": 0}, "A-18": {"status": "x"}}}
    check = state_equals(expected, ignore=["orders.A-18", "orders.*.refund"])
    steps = [call("cancel", {"order_id": "A-17", "refund": 3}), text("Done.")]
    case = Case(
        "Cancel A-17.",
        user=ScriptedUser([]),
        state=SHOP,
        checks=[check, state_matches(lambda s: s["orders"]["A-17"]["refund"] == 3.0)],
    )
    sample = (await run_one(case, shop_agent(*steps))).samples[0]
    assert sample.status == "passed", sample.first_failure


class Shop(pydantic.BaseModel):
    stock: dict[str, int]


async def test_a_pydantic_state_and_current_state_for_framework_style_tools() -> None:
    def sell(item: str) -> str:
        """Sell one item."""
        shop = current_state()
        shop.stock[item] -= 1
        return "sold"

    agent = shop_agent(call("sell", {"item": "pen"}), text("Sold."), tools=(sell,))
    case = Case(
        "A pen please.", state=Shop(stock={"pen": 2}), checks=[state_equals({"stock": {"pen": 1}})]
    )
    sample = (await run_one(case, agent)).samples[0]
    assert sample.status == "passed", sample.first_failure
    assert sample.run.state == {"stock": {"pen": 1}}


async def test_an_sqlite_state_is_copied_per_sample(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT)")
        connection.execute("INSERT INTO orders VALUES ('A-17', 'paid')")

    def cancel_row(order_id: str, state: Path) -> str:
        """Cancel an order."""
        with sqlite3.connect(state) as connection:
            connection.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order_id,))
        return "ok"

    def agent() -> Agent:
        return Agent(
            ScriptedProvider([call("cancel_row", {"order_id": "A-17"}), text("ok")]),
            tools=[cancel_row],
        )

    case = Case(
        "Cancel A-17",
        state=db,
        samples=2,
        checks=[state_equals({"orders": [{"id": "A-17", "status": "cancelled"}]})],
    )
    result = await run_one(case, agent)
    assert [s.status for s in result.samples] == ["passed", "passed"], result.first_failure
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT status FROM orders").fetchall() == [("paid",)]
    environment = Environment.fresh(db)
    environment.close()
    assert not Path(environment.live).exists()


async def test_a_raising_tool_is_the_environments_fault() -> None:
    steps = [call("broken_tool", {"order_id": "A-17"}), text("Sorry, something went wrong.")]
    case = Case("Cancel A-17.", user=ScriptedUser([]), checks=[no_error()])
    sample = (await run_one(case, shop_agent(*steps, tools=(broken_tool,)))).samples[0]
    assert sample.status == "failed"
    assert (sample.fault.party, sample.fault.turn, sample.fault.by) == ("environment", 1, "rule")
    assert "broken_tool" in sample.fault.reason and not sample.excluded


async def test_a_wrong_tool_argument_is_the_agents_fault_at_the_turn_that_made_it() -> None:
    expected = {
        "orders": {"A-17": {"status": "cancelled", "refund": 0}, "A-18": SHOP["orders"]["A-18"]}
    }
    steps = [
        text("Which order?"),
        call("cancel", {"order_id": "A-18", "refund": 0}),
        text("Cancelled."),
    ]
    case = Case(
        "Cancel my order.", user=ScriptedUser(["A-17"]), state=SHOP, checks=[state_equals(expected)]
    )
    sample = (await run_one(case, shop_agent(*steps))).samples[0]
    assert sample.status == "failed"
    assert (sample.fault.party, sample.fault.turn) == ("agent", 2)
    assert not sample.excluded


async def test_a_user_that_stops_before_the_goal_is_blamed_and_left_out() -> None:
    expected = {
        "orders": {"A-17": {"status": "cancelled", "refund": 0}, "A-18": SHOP["orders"]["A-18"]}
    }
    steps = [text("Which order do you want cancelled?")]
    case = Case(
        "Cancel my order.",
        user=ScriptedUser([]),
        state=SHOP,
        samples=2,
        checks=[state_equals(expected)],
    )
    result = await run_one(case, lambda: Agent(ScriptedProvider(list(steps))))
    first = result.samples[0]
    assert first.status == "failed"
    assert (first.fault.party, first.fault.turn) == ("user", 1)
    assert "waiting for its answer" in first.fault.reason
    assert first.excluded and result.left_out == 2 and result.counted == 0
    assert not result.passed and result.undecided
    kept = await run_one(case, lambda: Agent(ScriptedProvider(list(steps))), count_user_faults=True)
    assert kept.left_out == 0 and kept.pass_rate == 0.0 and not kept.undecided


async def test_a_question_after_the_agent_changed_the_state_does_not_blame_the_user() -> None:
    """The agent cancelled the wrong order, then asked "Anything else?": the user who says
    nothing more did not cause the failure, and it must not leave the pass rate."""
    expected = {
        "orders": {"A-17": {"status": "cancelled", "refund": 0}, "A-18": SHOP["orders"]["A-18"]}
    }
    acted = [call("cancel", {"order_id": "A-18", "refund": 0}), text("Done. Anything else?")]
    case = Case("Cancel A-17.", user=ScriptedUser([]), state=SHOP, checks=[state_equals(expected)])
    sample = (await run_one(case, shop_agent(*acted))).samples[0]
    assert (sample.fault.party, sample.fault.turn) == ("agent", 1)
    assert not sample.excluded


async def test_a_broken_user_rule_blames_the_user() -> None:
    def never_says_password(message: str) -> bool:
        return "password" not in message.lower()

    user = ScriptedUser(["My password is hunter2."], rules=[never_says_password])
    case = Case("Hi", user=user, checks=[tool_called("look_up")])
    sample = (await run_one(case, shop_agent(text("Hello!"), text("Thanks.")))).samples[0]
    assert sample.fault.party == "user" and sample.fault.turn == 2
    assert "never_says_password" in sample.fault.reason


async def test_max_turns_bounds_a_conversation_and_a_handoff_ends_it() -> None:
    def forever(view: Any) -> str:
        return f"message {view.turn}"

    agent = Agent(lambda: ScriptedProvider([text("ok")] * 10))
    sample = (await run_one(Case("start", user=ScriptedUser(forever, max_turns=3)), agent)).samples[
        0
    ]
    assert len(sample.run.conversation.turns) == 3
    assert sample.run.conversation.ended_by == "max_turns"

    def transfer_to_human(reason: str) -> str:
        """Hand the user to a person."""
        return "transferred"

    handoff = Agent(
        ScriptedProvider([call("transfer_to_human", {"reason": "angry"}), text("Transferring.")]),
        tools=[transfer_to_human],
    )
    sample = (await run_one(Case("I want a human", user=ScriptedUser(["more"])), handoff)).samples[
        0
    ]
    assert sample.run.conversation.ended_by == "handoff"
    assert len(sample.run.conversation.turns) == 1


async def test_stop_when_ends_the_conversation_on_the_state() -> None:
    steps = [call("cancel", {"order_id": "A-17", "refund": 0}), text("Done."), text("never")]
    user = ScriptedUser(
        ["more", "more"], stop_when=lambda s: s["orders"]["A-17"]["status"] == "cancelled"
    )
    sample = (
        await run_one(Case("Cancel A-17", user=user, state=SHOP), shop_agent(*steps))
    ).samples[0]
    assert sample.run.conversation.ended_by == "state"
    assert len(sample.run.conversation.turns) == 1


async def test_per_turn_checks_and_goal_reached() -> None:
    agent = Agent(lambda: ScriptedProvider([text("Hi!"), text("As an AI, I cannot.")]))
    case = Case(
        "Hello",
        user=ScriptedUser(["Cancel A-17"]),
        checks=[
            every_turn(not_contains("As an AI")),
            at_turn(1, not_contains("As an AI")),
            goal_reached(
                "A-17 cancelled", model=ScriptedProvider([verdict(0.1, "never cancelled")])
            ),
        ],
    )
    sample = (await run_one(case, agent)).samples[0]
    by_name = {c.name: c for c in sample.checks}
    assert not by_name["every_turn(not_contains)"].passed
    assert by_name["every_turn(not_contains)"].reason.startswith("turn 2: not_contains")
    assert by_name["at_turn(1, not_contains)"].passed
    assert (
        not by_name["goal_reached"].passed and by_name["goal_reached"].reason == "never cancelled"
    )


async def test_the_simulated_user_opens_when_the_case_has_no_input() -> None:
    user_model = ScriptedProvider([text("I need to cancel A-17."), text("Thanks! ###STOP###")])
    agent = Agent(lambda: ScriptedProvider([text("Done, cancelled.")]))
    case = Case(user=SimulatedUser("You want A-17 cancelled.", model=user_model))
    assert case.name == "You want A-17 cancelled."
    sample = (await run_one(case, agent)).samples[0]
    conversation = sample.run.conversation
    assert [t.user for t in conversation.turns] == ["I need to cancel A-17."]
    assert conversation.ended_by == "user" and conversation.closing == "Thanks!"
    assert conversation.user_usage.requests == 2
    # The user's usage is in the sample's, apart from the agent's.
    assert sample.usage.requests == sample.run.usage.requests + 2


def test_a_bad_user_or_state_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="case 'x': user must be"):
        Case("x", user=42)
    with pytest.raises(TypeError, match="not one string"):
        ScriptedUser("hello")
    with pytest.raises(ValueError, match="needs instructions"):
        SimulatedUser("  ")


async def test_a_recheck_grades_the_stored_conversation_again_and_attributes_its_fault() -> None:
    from tui_eval import recheck

    expected = {
        "orders": {"A-17": {"status": "cancelled", "refund": 0}, "A-18": SHOP["orders"]["A-18"]}
    }
    steps = [call("cancel", {"order_id": "A-18", "refund": 0}), text("Cancelled.")]
    case = Case("Cancel A-17.", user=ScriptedUser([]), state=SHOP, checks=[no_error()])
    report = await evaluate(shop_agent(*steps), [case])
    assert report.cases[0].samples[0].status == "passed"
    stricter = Case(
        "Cancel A-17.", user=ScriptedUser([]), state=SHOP, checks=[state_equals(expected)]
    )
    again = await recheck(report, [stricter])
    sample = again.cases[0].samples[0]
    assert sample.status == "failed" and sample.fault is not None
    assert (sample.fault.party, sample.fault.turn) == ("agent", 1)


async def test_a_factory_agent_and_a_case_model_are_built_once_per_conversation() -> None:
    built: list[int] = []

    def factory() -> Agent:
        built.append(1)
        return Agent(ScriptedProvider([text("Which order?"), text("Done.")]))

    case = Case("Cancel my order.", user=ScriptedUser(["A-17"]), samples=2)
    result = await run_one(case, factory)
    assert [s.run.conversation.turns[1].reply for s in result.samples] == ["Done.", "Done."]
    assert len(built) == 2  # one agent per sample, not per turn

    per_case = Case(
        "Cancel my order.",
        user=ScriptedUser(["A-17"]),
        model=ScriptedProvider.factory([text("Which order?"), text("Done.")]),
    )
    sample = (await run_one(per_case, Agent("openai:gpt-4o-mini"))).samples[0]
    assert sample.status == "passed", sample.first_failure
    assert [t.reply for t in sample.run.conversation.turns] == ["Which order?", "Done."]


async def test_a_user_hanging_up_on_a_question_after_a_lookup_is_the_users_fault() -> None:
    expected = {
        "orders": {"A-17": {"status": "cancelled", "refund": 0}, "A-18": SHOP["orders"]["A-18"]}
    }
    steps = [call("look_up", {"order_id": "A-17"}), text("Order A-17 is paid. Shall I cancel it?")]
    case = Case("Cancel A-17.", user=ScriptedUser([]), state=SHOP, checks=[state_equals(expected)])
    sample = (await run_one(case, shop_agent(*steps))).samples[0]
    assert (sample.fault.party, sample.fault.turn) == ("user", 1)


def test_a_tool_reads_its_functions_signature_once() -> None:
    from tui_eval.agents.tools import Tool

    first, second = Tool(cancel), Tool(cancel)
    assert first.arguments_model is second.arguments_model
    assert second.function is cancel and second._takes_state
    renamed = Tool(cancel, name="cancel_it")
    assert renamed.definition.name == "cancel_it"

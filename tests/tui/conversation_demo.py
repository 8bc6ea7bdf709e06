"""A small shop whose customers talk to an agent: conversations for the app's tests and
screenshots, offline and deterministic (scripted agent, scripted and simulated users).

Three cases: cancelling an order (three samples: one passes, one fails by the agent's
fault at turn 3, one by the user's at turn 1), a stock check whose tool is down (the environment's fault), and
an address change with a simulated user (passes).
"""

from __future__ import annotations

import copy
from typing import Any

from tui_eval import (
    Agent,
    Case,
    ScriptedUser,
    SimulatedUser,
    Suite,
    no_error,
    state_equals,
    tool_called,
)
from tui_eval.agents.http.context import current_sample
from tui_eval.agents.messages import Completion, Message
from tui_eval.agents.providers.scripted import ScriptedProvider, ScriptStep, call, text
from tui_eval.agents.users import UserView
from tui_eval.report.report import Report
from tui_eval.run.runner import evaluate

SHOP: dict[str, Any] = {
    "orders": {
        "A-17": {"item": "blue mug", "status": "paid", "refund": 0, "address": "1 Oak Road"},
        "A-18": {"item": "red mug", "status": "paid", "refund": 0, "address": "1 Oak Road"},
    }
}


def look_up(order_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """Read an order."""
    return dict(state["orders"][order_id])


def cancel(order_id: str, refund: float, state: dict[str, Any]) -> str:
    """Cancel an order and refund it."""
    order = state["orders"][order_id]
    order["status"], order["refund"] = "cancelled", refund
    return "cancelled"


def set_address(order_id: str, address: str, state: dict[str, Any]) -> str:
    """Change where an order is delivered."""
    state["orders"][order_id]["address"] = address
    return "ok"


def check_stock(item: str) -> int:
    """How many of an item are in stock."""
    raise ConnectionError("inventory service unavailable (503)")


def _by_sample(*scripts: list[list[ScriptStep]]) -> Any:
    """A model factory for conversations: sample i of the case answers turn t with the
    steps `scripts[i][t - 1]` (read from the conversation so far), whichever order the
    samples run in."""

    def respond(messages: list[Message]) -> Completion:
        sample = current_sample()
        turns = scripts[sample.index if sample is not None else 0]
        turn = sum(1 for m in messages if m.role == "user")
        since_user = next(i for i, m in enumerate(reversed(messages)) if m.role == "user")
        step = sum(1 for m in messages[len(messages) - since_user :] if m.role == "assistant")
        return turns[turn - 1][step].completion

    return lambda: ScriptedProvider([respond] * 50)


def _lines_by_sample(*scripts: list[str]) -> Any:
    """A scripted user saying `scripts[i]` in sample i (None once its lines run out)."""

    def say(view: UserView) -> str | None:
        sample = current_sample()
        lines = scripts[sample.index if sample is not None else 0]
        return lines[view.asked] if view.asked < len(lines) else None

    return say


def _user_says(messages: list[Message]) -> Completion:
    """The simulated user's model: asks for the change, then stops once told it is done."""
    if any("Done" in (m.content or "") for m in messages if m.role == "user"):
        return Completion(content="Great, thank you! ###STOP###")
    return Completion(content="Please send order A-18 to 5 Elm Street instead of Oak Road.")


OPENING = [
    [text("Sure, I can help. What is the order number?")],
    [
        call("look_up", {"order_id": "A-17"}),
        text("Order A-17 is the blue mug, paid. Shall I cancel it and refund $12.50?"),
    ],
]
CLOSING = [text("Cancelled: $12.50 is on its way to you.")], [text("Goodbye!")]
CANCELLED = copy.deepcopy(SHOP)
CANCELLED["orders"]["A-17"].update(status="cancelled", refund=12.5)
MOVED = copy.deepcopy(SHOP)
MOVED["orders"]["A-18"]["address"] = "5 Elm Street"

cases = [
    Case(
        "Hi! I'd like to cancel my order for the blue mug.",
        name="cancel the blue mug",
        user=ScriptedUser(
            _lines_by_sample(
                ["It's A-17.", "Yes, please.", "Thanks, bye!"],
                ["It's A-17.", "Yes, please.", "Thanks, bye!"],
                [],  # hangs up while the agent asks for the order number
            )
        ),
        state=SHOP,
        samples=3,
        pass_threshold=0.5,
        checks=[tool_called("cancel", order_id="A-17"), state_equals(CANCELLED)],
        model=_by_sample(
            [
                *OPENING,
                [call("cancel", {"order_id": "A-17", "refund": 12.5}), *CLOSING[0]],
                CLOSING[1],
            ],
            [
                *OPENING,
                [call("cancel", {"order_id": "A-18", "refund": 12.5}), *CLOSING[0]],
                CLOSING[1],
            ],
            OPENING[:1],
        ),
    ),
    Case(
        "Is the red mug in stock?",
        name="stock check (tool down)",
        user=ScriptedUser(["OK, I'll try later."]),
        checks=[no_error()],
        model=_by_sample(
            [
                [
                    call("check_stock", {"item": "red mug"}),
                    text("Sorry, I can't reach the stock system right now."),
                ],
                [text("Please try again in an hour.")],
            ]
        ),
    ),
    Case(
        name="change the address",
        user=SimulatedUser(
            "You want order A-18 delivered to 5 Elm Street. Stop once it is done.",
            model=lambda: ScriptedProvider([_user_says], name="scripted-user"),
        ),
        state=SHOP,
        checks=[state_equals(MOVED)],
        model=_by_sample(
            [
                [
                    call("set_address", {"order_id": "A-18", "address": "5 Elm Street"}),
                    text("Done: order A-18 will now go to 5 Elm Street."),
                ]
            ]
        ),
    ),
]

agent = Agent(
    ScriptedProvider(name="unused"),
    tools=[look_up, cancel, set_address, check_stock],
    instructions="You are a shop's support agent. Confirm before you cancel anything.",
    name="shop",
)

suite = Suite("shop", agent=agent, cases=cases, concurrency=1)


async def shop_report() -> Report:
    """The shop suite run offline, every measured time replaced by a fixed one."""
    report = await evaluate(agent, cases, name="shop", concurrency=1)
    report.started_at = 1_780_000_000.0
    report.duration_s = 2.4
    for case_index, case in enumerate(report.cases):
        for sample in case.samples:
            sample.latency_ms = 900.0 + 150.0 * (case_index + sample.index)
            run = sample.run
            if run is None:
                continue
            run.latency_ms = sample.latency_ms
            for call_ in run.tool_calls:
                call_.latency_ms = 0.8
            if run.conversation is not None:
                for turn in run.conversation.turns:
                    turn.latency_ms = 300.0 + 40.0 * turn.index
    report.metadata = {}
    return report

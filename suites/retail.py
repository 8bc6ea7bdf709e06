"""Example suite: conversations with the customers of a small store, offline.

A support agent with five tools (look up an order, list a customer's orders, cancel, return
an item, hand over to a person) talks with scripted customers (`ScriptedUser`: fixed lines,
or a function of what the agent said). Each conversation starts from its own copy of the
store (`Case(state=STORE)`), and its checks grade what the conversation left: the store's
state (`state_equals`, `state_matches`), the tools called, and single turns (`at_turn`,
`every_turn`). Two conversations fail on purpose: in one the agent cancels the wrong order
(the agent's fault); in the other the customer leaves while the agent waits for a "yes"
(the user's fault — left out of the pass rate, and the summary says so).

The agent's model is `retail_model.RetailModel`, a few rules in place of an LLM. Its
responses take a simulated 0.2 s each, so a run is slow enough to watch;
`TUI_EVAL_EXAMPLE_PACE` scales that (the tests run at 0.1). A failure no rule explains is
the agent's, unless `$TUI_EVAL_JUDGE_MODEL` names a model to review it.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from retail_model import RetailModel

from tui_eval import (
    Agent,
    Case,
    ScriptedUser,
    Suite,
    at_turn,
    every_turn,
    max_turns,
    no_error,
    state_equals,
    state_matches,
    tool_called,
    tool_not_called,
    tool_sequence,
)
from tui_eval.agents.users import UserView

PACE = float(os.environ.get("TUI_EVAL_EXAMPLE_PACE", "1"))

Store = dict[str, Any]

STORE: Store = {
    "customers": {
        "C-1": {"name": "Ada Park", "email": "ada@example.com"},
        "C-2": {"name": "Grace Hill", "email": "grace@example.com"},
        "C-3": {"name": "Alan Reyes", "email": "alan@example.com"},
    },
    "items": {
        "mug": {"price": 12.0, "stock": 8},
        "kettle": {"price": 40.0, "stock": 3},
        "teapot": {"price": 30.0, "stock": 2},
    },
    "orders": {
        "A-1001": {"customer": "C-1", "items": {"mug": 2}, "status": "delivered"},
        "A-1002": {"customer": "C-1", "items": {"kettle": 1}, "status": "pending"},
        "A-1003": {"customer": "C-2", "items": {"teapot": 1}, "status": "shipped"},
        "A-1004": {"customer": "C-3", "items": {"mug": 1}, "status": "pending"},
        "A-1005": {"customer": "C-3", "items": {"teapot": 1, "mug": 2}, "status": "pending"},
        "A-1006": {"customer": "C-2", "items": {"kettle": 1}, "status": "delivered"},
    },
    "log": [],  # the store's audit trail: what each write did, in words
}
for _order in STORE["orders"].values():
    _order.update(refund=0, returned={})


# -- the tools: each gets the sample's own copy of the store as `state` -----------------------


def _total(order: dict[str, Any], state: Store) -> float:
    return sum(state["items"][item]["price"] * n for item, n in order["items"].items())


def look_up_order(order_id: str, state: Store) -> dict[str, Any] | str:
    """An order: its status, items, their prices and the total."""
    order = state["orders"].get(order_id)
    if order is None:
        return f"There is no order {order_id}."
    return {
        "order_id": order_id,
        "status": order["status"],
        "items": order["items"],
        "prices": {item: state["items"][item]["price"] for item in order["items"]},
        "total": _total(order, state),
        "returned": order["returned"],
    }


def list_orders(email: str, state: Store) -> list[dict[str, Any]]:
    """The orders of the customer with this email address."""
    ids = [key for key, c in state["customers"].items() if c["email"] == email.strip().lower()]
    return [
        {"order_id": key, "status": order["status"], "items": order["items"]}
        for key, order in state["orders"].items()
        if order["customer"] in ids
    ]


def cancel_order(order_id: str, state: Store) -> str:
    """Cancel a pending order: its items go back in stock and its total is refunded."""
    order = state["orders"].get(order_id)
    if order is None:
        return f"There is no order {order_id}."
    if order["status"] != "pending":
        return f"Order {order_id} is {order['status']}: only pending orders can be cancelled."
    order["status"] = "cancelled"
    order["refund"] = _total(order, state)
    for item, count in order["items"].items():
        state["items"][item]["stock"] += count
    state["log"].append(f"cancelled {order_id}, refunded {order['refund']:.2f}")
    return f"Order {order_id} is cancelled; ${order['refund']:.2f} will be refunded to your card."


def return_item(order_id: str, item: str, quantity: int, state: Store) -> str:
    """Take back `quantity` of an item from a delivered order and refund them."""
    order = state["orders"].get(order_id)
    if order is None:
        return f"There is no order {order_id}."
    if order["status"] != "delivered":
        return f"Order {order_id} is {order['status']}: only delivered items can be returned."
    left = order["items"].get(item, 0) - order["returned"].get(item, 0)
    if quantity < 1 or quantity > left:
        return f"Order {order_id} has {left} × {item} that can be returned, not {quantity}."
    refund = state["items"][item]["price"] * quantity
    order["returned"][item] = order["returned"].get(item, 0) + quantity
    order["refund"] += refund
    state["items"][item]["stock"] += quantity
    state["log"].append(f"returned {quantity} × {item} of {order_id}, refunded {refund:.2f}")
    return (
        f"Done: {quantity} × {item} from order {order_id} will be picked up tomorrow; "
        f"${refund:.2f} will be refunded to your card."
    )


def transfer_to_human(summary: str, state: Store) -> str:
    """Hand the customer over to a person, with a note of what they need."""
    state["log"].append(f"handed over: {summary}")
    return "A colleague has the conversation."


def make_agent() -> Agent:
    """The support agent: a fresh one per sample (and per turn: it keeps no memory, the
    whole conversation is sent each time)."""
    return Agent(
        RetailModel(delay=0.2 * PACE),
        tools=[look_up_order, list_orders, cancel_order, return_item, transfer_to_human],
        instructions=(
            "You are the support agent of a small homeware store. Look an order up before "
            "you act on it. Cancel only pending orders and return only delivered items, and "
            "only once the customer has said yes. Hand the customer to a person when they "
            "ask for one."
        ),
        name="retail-support",
        max_turns=4,
    )


# -- what each conversation should leave -----------------------------------------------------


def store_after(changes: dict[str, Any]) -> Store:
    """The store as a conversation should leave it: STORE with `changes` ("orders.A-1002.status":
    "cancelled") made. The audit trail is not compared (`ignore=["log"]`)."""
    store = copy.deepcopy(STORE)
    for path, value in changes.items():
        *parents, key = path.split(".")
        place: Any = store
        for name in parents:
            place = place[name]
        place[key] = value
    return store


def handover_names_the_order(state: Store) -> bool | str:
    """The note a person gets names the order the customer was charged twice for."""
    notes = [line for line in state["log"] if line.startswith("handed over")]
    if any("A-1004" in note for note in notes):
        return True
    return f"no hand-over note names order A-1004 (notes: {notes})"


def mug_customer(view: UserView) -> str | None:
    """Says yes to exactly what they asked for, corrects anything else, and leaves once it
    is done."""
    reply = view.reply or ""
    if "return 1 × mug from order A-1001" in reply:
        return "Yes, go ahead."
    if reply.endswith("?"):
        return "No: I only want to send back one mug from order A-1001."
    return None


EACH_TURN_IS_SHORT = every_turn(max_turns(3))  # a turn takes at most three model responses

cases = [
    Case(
        "Hi, please cancel my order A-1002, I picked the wrong kettle.",
        name="cancel a pending order",
        user=ScriptedUser(["Yes, please.", "Thanks, that's all."]),
        state=STORE,
        checks=[
            state_equals(
                store_after(
                    {
                        "orders.A-1002.status": "cancelled",
                        "orders.A-1002.refund": 40,  # the tool writes 40.0: equal by value
                        "items.kettle.stock": 4,
                    }
                ),
                ignore=["log"],
            ),
            tool_called("cancel_order", order_id="A-1002"),
            at_turn(1, tool_not_called("cancel_order")),  # it asks before it cancels
            no_error(),
            EACH_TURN_IS_SHORT,
        ],
    ),
    Case(
        "I'd like to return one mug from order A-1001, it arrived chipped.",
        name="return one item",
        user=ScriptedUser(mug_customer, max_turns=6),
        state=STORE,
        checks=[
            state_equals(
                store_after(
                    {
                        "orders.A-1001.returned": {"mug": 1},
                        "orders.A-1001.refund": 12,
                        "items.mug.stock": 9,
                    }
                ),
                ignore=["log"],
            ),
            tool_called("return_item", order_id="A-1001", item="mug", quantity=1),
            no_error(),
            EACH_TURN_IS_SHORT,
        ],
    ),
    Case(
        "Where is my order? I don't have the number, but my email is grace@example.com.",
        name="where is my order (read only)",
        user=ScriptedUser(["A-1003, the teapot.", "Great, thank you!"]),
        state=STORE,
        checks=[
            state_equals(STORE),  # reads change nothing
            tool_sequence(["list_orders", "look_up_order"]),
            at_turn(1, tool_called("list_orders", email="grace@example.com")),
            EACH_TURN_IS_SHORT,
        ],
    ),
    Case(
        "I was charged twice for order A-1004. I want to talk to a person.",
        name="hand over to a person",
        user=ScriptedUser(["Thank you."]),  # never said: the hand-over ends the conversation
        state=STORE,
        checks=[
            tool_called("transfer_to_human"),
            state_equals(STORE, ignore=["log"]),
            state_matches(handover_names_the_order),
            no_error(),
        ],
    ),
    Case(
        "Cancel order A-1005 please, I confirm. Keep my other order, A-1004, as it is.",
        name="cancels the wrong order (agent's fault)",
        user=ScriptedUser(["Thanks, bye."]),
        state=STORE,
        checks=[
            state_equals(
                store_after(
                    {
                        "orders.A-1005.status": "cancelled",
                        "orders.A-1005.refund": 54,
                        "items.teapot.stock": 3,
                        "items.mug.stock": 10,
                    }
                ),
                ignore=["log"],
            ),
            tool_called("cancel_order", order_id="A-1005"),
            no_error(),
        ],
    ),
    Case(
        "I want to return the kettle from order A-1006.",
        name="leaves before confirming (user's fault)",
        user=ScriptedUser([]),  # says nothing more: gone while the agent waits for a yes
        state=STORE,
        checks=[
            state_equals(
                store_after(
                    {
                        "orders.A-1006.returned": {"kettle": 1},
                        "orders.A-1006.refund": 40,
                        "items.kettle.stock": 4,
                    }
                ),
                ignore=["log"],
            ),
            tool_called("return_item", order_id="A-1006"),
        ],
    ),
]

suite = Suite(
    "retail",
    agent=make_agent,
    cases=cases,
    concurrency=4,
    price=lambda u: u.input_tokens * 0.15e-6 + u.output_tokens * 0.6e-6,
    description=(
        "Conversations with scripted customers of a store: five tools, a state per sample, "
        "state checks; one fails by the agent's fault, one by the user's."
    ),
)

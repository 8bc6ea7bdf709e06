"""The offline model behind the retail example (`retail.py`): a few rules in place of an LLM.

`RetailModel` reads the conversation the agent sends it — the user's messages, its own
earlier replies and tool calls, the tools' results — and answers as a support model
would: it looks an order up before acting on it, asks the user to confirm a cancellation
or a return, acts on a "yes", and hands the user to a person when asked. Everything it
knows about the store comes from the tools' results; it keeps nothing between requests,
so any number of conversations can share one.

It has one weakness, on purpose: when a message names several orders it acts on the last
one named, and a user who confirms in the same message ("cancel A-1005, I confirm") is not
asked again. The example's "cancels the wrong order" conversation shows what that costs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import anyio

from tui_eval import Completion, Message, ToolCall, Usage
from tui_eval.testing import estimate_tokens

ORDER_ID = re.compile(r"\b[A-Z]-\d{4}\b")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
COUNT_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}
PROPOSAL = re.compile(
    r"Shall I (?:cancel order (?P<cancel>[A-Z]-\d{4})"
    r"|return (?P<quantity>\d+) × (?P<item>[\w-]+) from order (?P<order>[A-Z]-\d{4}))"
)


class RetailModel:
    """A deterministic stand-in for the support agent's LLM (a provider: `complete()`).

    Args:
        delay: seconds each response takes, so a run in the app can be watched.
    """

    name = "retail-rules"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    async def complete(
        self,
        messages: list[Message],
        tools: list[Any],
        *,
        output_schema: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Completion:
        """The next response to `messages`: tool calls, or a reply to the user."""
        if self.delay:
            await anyio.sleep(self.delay)
        completion = respond(messages)
        completion.model = self.name
        read = sum(estimate_tokens(m.content or "") + 4 for m in messages)
        written = estimate_tokens(completion.content or "") + sum(
            estimate_tokens(json.dumps(c.arguments)) + 4 for c in completion.tool_calls
        )
        completion.usage = Usage(read, max(written, 1), 1)
        return completion


def respond(messages: Sequence[Message]) -> Completion:
    """What the model answers: after a tool's result, a reply built from it; after the
    user's message, a tool call or a reply."""
    if messages and messages[-1].role == "tool":
        return _after_tool(messages)
    return _after_user(messages)


# -- reading the conversation ----------------------------------------------------------------


def _users(messages: Sequence[Message]) -> list[str]:
    return [m.content or "" for m in messages if m.role == "user"]


def _intent(text: str) -> str | None:
    """What a user's message asks for (None: it asks for nothing new)."""
    lowered = text.lower()
    if any(word in lowered for word in ("human", "a person", "someone", "manager")):
        return "handoff"
    if "cancel" in lowered:
        return "cancel"
    if "return" in lowered or "send back" in lowered:
        return "return"
    if any(word in lowered for word in ("where", "status", "track", "arrive")):
        return "where"
    return None


def _request(messages: Sequence[Message]) -> tuple[str, str]:
    """The user's latest request — its intent and its words — however many messages ago
    it was made ("A-1003, the teapot." answers a question, it asks nothing new)."""
    for text in reversed(_users(messages)):
        intent = _intent(text)
        if intent is not None:
            return intent, text
    return "where", ""


def _last_order_id(text: str) -> str | None:
    """The order the model acts on: the last one a message names (its weakness)."""
    found = ORDER_ID.findall(text)
    return found[-1] if found else None


def _agrees(text: str) -> bool:
    return (
        re.match(r"\s*(yes|yeah|yep|sure|ok|okay|please do|go ahead)\b", text.lower()) is not None
    )


def _declines(text: str) -> bool:
    return re.match(r"\s*(no|nope|don't|do not)\b", text.lower()) is not None


def _last_reply(messages: Sequence[Message]) -> str:
    for message in reversed(messages[:-1]):
        if message.role == "assistant" and message.content:
            return message.content
    return ""


def _tool_call(name: str, **arguments: Any) -> Completion:
    return Completion(tool_calls=[ToolCall(name, arguments)], stop_reason="tool_calls")


def _reply(text: str) -> Completion:
    return Completion(content=text)


# -- answering the user ----------------------------------------------------------------------


def _after_user(messages: Sequence[Message]) -> Completion:
    said = _users(messages)[-1] if _users(messages) else ""
    intent = _intent(said)
    if intent == "handoff":
        return _tool_call("transfer_to_human", summary=said)
    proposal = PROPOSAL.search(_last_reply(messages))
    if proposal is not None and _agrees(said):
        if proposal["cancel"]:
            return _tool_call("cancel_order", order_id=proposal["cancel"])
        return _tool_call(
            "return_item",
            order_id=proposal["order"],
            item=proposal["item"],
            quantity=int(proposal["quantity"]),
        )
    if proposal is not None and _declines(said):
        return _reply("All right, I have left the order as it is.")
    order_id = _last_order_id(said)
    if order_id is not None:
        if intent == "cancel" and "i confirm" in said.lower():
            return _tool_call("cancel_order", order_id=order_id)
        return _tool_call("look_up_order", order_id=order_id)
    email = EMAIL.search(said)
    if email is not None:
        return _tool_call("list_orders", email=email.group())
    if any(word in said.lower() for word in ("thank", "bye")):
        return _reply("You're welcome. Goodbye!")
    return _reply("I can help with that. What is your order number, or your email address?")


# -- answering a tool's result ---------------------------------------------------------------


def _after_tool(messages: Sequence[Message]) -> Completion:
    call = next(m.tool_calls[0] for m in reversed(messages) if m.role == "assistant")
    result_text = messages[-1].content or ""
    if result_text.startswith("Error:"):
        return _reply(f"Sorry, I could not do that: {result_text.removeprefix('Error:').strip()}")
    result = json.loads(result_text) if result_text[:1] in "[{" else result_text
    if call.name == "look_up_order" and isinstance(result, dict):
        return _reply(_about_order(result, *_request(messages)))
    if call.name == "list_orders" and isinstance(result, list):
        return _reply(_about_orders(result, call.arguments.get("email", "")))
    if call.name == "transfer_to_human":
        return _reply("I have passed you to a colleague, who will write to you by email today.")
    return _reply(str(result))  # cancel_order and return_item say what they did


def _items_text(items: dict[str, int]) -> str:
    return ", ".join(f"{count} × {item}" for item, count in items.items())


def _about_order(order: dict[str, Any], intent: str, request: str) -> str:
    order_id, status = order["order_id"], order["status"]
    summary = f"Order {order_id} ({_items_text(order['items'])}, ${order['total']:.2f})"
    if intent == "cancel":
        if status != "pending":
            return f"{summary} is {status}, so it can no longer be cancelled."
        return f"{summary} has not shipped yet. Shall I cancel order {order_id}?"
    if intent == "return":
        if status != "delivered":
            return f"{summary} is {status}; it can be returned once it is delivered."
        item, quantity = _what_to_return(order["items"], request)
        refund = order["prices"][item] * quantity
        return (
            f"{summary} was delivered. Shall I return {quantity} × {item} from order "
            f"{order_id} for a refund of ${refund:.2f}?"
        )
    if status == "shipped":
        return f"{summary} has shipped and is on its way to you."
    return f"{summary} is {status}."


def _what_to_return(items: dict[str, int], request: str) -> tuple[str, int]:
    """The item and how many the user asked to return ("one mug"); the order's first item
    when the request names none, all of it when it gives no count."""
    lowered = request.lower()
    for item, count in items.items():
        found = re.search(rf"\b(\d+|{'|'.join(COUNT_WORDS)})\s+{re.escape(item)}", lowered)
        if found is not None:
            word = found.group(1)
            return item, int(word) if word.isdigit() else COUNT_WORDS[word]
        if item in lowered:
            return item, count
    item = next(iter(items))
    return item, items[item]


def _about_orders(orders: list[dict[str, Any]], email: str) -> str:
    if not orders:
        return f"I found no orders for {email}. Could you check the address?"
    listed = " and ".join(
        f"{o['order_id']} ({_items_text(o['items'])}, {o['status']})" for o in orders
    )
    if len(orders) == 1:
        return f"I found one order for {email}: {listed}."
    return f"I found {len(orders)} orders for {email}: {listed}. Which one do you mean?"

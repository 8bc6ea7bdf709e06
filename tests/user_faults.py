"""A small shop suite whose conversations the user simulator fails in some samples, for the
tests of how left-out samples are counted and told (issue #37, item 4).

Three cases, each with a scripted user that says nothing after the case's input:
- "never tested": the agent only asks a question and the user stops — the user
  simulator's fault in both samples, so the case is undecided;
- "partly left out": the agent cancels the order, then only asks, then cancels — one of
  three samples left out, the other two pass;
- "plain": the agent cancels the order; it passes.
By default every case passes or is undecided (exit 0); counting the user's faults fails two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tui_eval import Report, RunSettings, evaluate
from tui_eval.suites import Suite, load_suites

SUITE = '''
import itertools

from tui_eval import Agent, Case, ScriptedUser, Suite, state_equals
from tui_eval.agents.providers.scripted import ScriptedProvider, call, text

SHOP = {"orders": {"A-17": {"status": "paid"}}}
CANCELLED = {"orders": {"A-17": {"status": "cancelled"}}}


def cancel(order_id: str, state: dict) -> str:
    """Cancel an order."""
    state["orders"][order_id]["status"] = "cancelled"
    return "cancelled"


ASKS = [text("Which order do you want cancelled?")]
CANCELS = [call("cancel", {"order_id": "A-17"}), text("Cancelled A-17.")]
PLANS = {
    "Cancel my order.": itertools.cycle([ASKS]),
    "Cancel A-17 please.": itertools.cycle([CANCELS, ASKS, CANCELS]),
    "Cancel order A-17.": itertools.cycle([CANCELS]),
}


def agent():
    """A fresh agent per sample, replying as its case's plan says for this sample."""
    chosen = []

    def step(position):
        def respond(messages):
            if not chosen:
                opening = next(m.content for m in messages if m.role == "user")
                chosen.append(next(PLANS[opening]))
            return chosen[0][position].completion

        return respond

    return Agent(ScriptedProvider([step(0), step(1)]), tools=[cancel])


def case(name, opening, samples):
    return Case(
        opening,
        name=name,
        user=ScriptedUser([]),
        state=SHOP,
        samples=samples,
        checks=[state_equals(CANCELLED)],
    )


suite = Suite("shop", agent=agent, concurrency=1, cases=[
    case("never tested", "Cancel my order.", 2),
    case("partly left out", "Cancel A-17 please.", 3),
    case("plain", "Cancel order A-17.", 1),
])
'''

LEFT_OUT = "left out: the user simulator's fault"


def write_suite(folder: Path) -> Path:
    """The suite file in `folder/suites/` (its path)."""
    (folder / "suites").mkdir(parents=True, exist_ok=True)
    path = folder / "suites" / "shop_suite.py"
    path.write_text(SUITE)
    return path


def shop_suite(folder: Path) -> Suite:
    """The suite, loaded from its file in `folder`."""
    loaded = load_suites([write_suite(folder)])
    assert not loaded.errors, loaded.errors
    return loaded.suites[0]


async def shop_report(folder: Path, **settings: Any) -> Report:
    """A run of the suite (fresh plans) with `settings`."""
    suite = shop_suite(folder)
    return await evaluate(
        suite.agent, suite.cases, settings=RunSettings(concurrency=1, **settings), name="shop"
    )

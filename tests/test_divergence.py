"""Where two samples part ways: for conversations, the first turn that differs."""

from __future__ import annotations

from tui_eval import Conversation, Turn
from tui_eval.agents.messages import RunResult, StateChange, ToolCall
from tui_eval.core.results import SampleResult
from tui_eval.report.divergence import first_divergence


def sample(*turns: Turn, status: str = "failed", ended_by: str = "user") -> SampleResult:
    calls = [c for t in turns for c in t.tool_calls]
    run = RunResult(
        output=turns[-1].reply,
        tool_calls=calls,
        conversation=Conversation(list(turns), ended_by=ended_by),
    )
    return SampleResult("c", 0, status, run=run)


def cancel(order: str) -> ToolCall:
    return ToolCall("cancel", {"order_id": order}, result="cancelled")


HELLO = Turn(1, "Cancel my order.", "Which one?")


def test_the_first_turn_whose_tool_calls_differ_is_named() -> None:
    left = sample(HELLO, Turn(2, "A-17", "Done.", [cancel("A-18")]), Turn(3, "Bye", "Bye!"))
    right = sample(HELLO, Turn(2, "A-17", "Done.", [cancel("A-17")]), Turn(3, "Bye", "Bye!"))
    found = first_divergence(left, right)
    assert (found.where, found.line) == ("conversation", 1)
    assert found.description == "turn 2: tool call 1: cancel: order_id=A-18 vs A-17"


def test_actions_come_before_wording_and_a_user_who_said_other_things_is_named() -> None:
    # Turn 1's replies differ in wording; turn 2's user said something else: the turn
    # where what happened differs is named, not the earlier rewording.
    left = sample(Turn(1, "Hi", "Hello!"), Turn(2, "Cancel A-17", "Done."))
    right = sample(Turn(1, "Hi", "Hi there!"), Turn(2, "Cancel A-18", "Done."))
    found = first_divergence(left, right)
    assert (found.where, found.line) == ("conversation", 1)
    assert found.description == "turn 2: the user said 'Cancel A-17' vs 'Cancel A-18'"
    changed = sample(
        HELLO, Turn(2, "A-17", "Done.", changes=[StateChange("orders.A-17.status", 1, 2)])
    )
    same_calls = sample(HELLO, Turn(2, "A-17", "Done."))
    assert first_divergence(changed, same_calls).description == (
        "turn 2: state orders.A-17.status: 1 → 2 vs no change"
    )


def test_replies_then_the_length_of_the_conversation() -> None:
    left = sample(HELLO, Turn(2, "A-17", "Done."))
    right = sample(HELLO, Turn(2, "A-17", "Cancelled it."))
    found = first_divergence(left, right)
    assert found.description == "turn 2: the agent replied 'Done.' vs 'Cancelled it.'"
    short = sample(HELLO, ended_by="user")
    longer = sample(HELLO, Turn(2, "A-17", "Done."))
    found = first_divergence(short, longer)
    assert (found.where, found.line) == ("conversation", 1)
    assert found.description == "turn 2: only the passing sample has it (the other ended by user)"
    assert first_divergence(left, left).where is None

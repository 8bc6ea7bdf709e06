"""A conversation as the app shows it: its turns, ending and fault, as plain text (no markup)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tui_eval.agents.messages import Conversation, Turn, Usage
from tui_eval.checks.faults import Fault
from tui_eval.tui.widgets.text import format_ms, plain
from tui_eval.util.text import value_text

PARTY_STYLE = {"user": "yellow", "agent": "red", "environment": "magenta"}
PARTY_NAME = {
    "user": "the user simulator's",
    "agent": "the agent's",
    "environment": "the environment's",
}
LEFT_OUT = "⊘"
"""Marks a sample left out of the pass rate (the user simulator's fault)."""

ENDINGS = {
    "user": "ended by the user",
    "max_turns": "ended by the turn limit",
    "handoff": "ended by a hand-off: the agent transferred the user",
    "state": "ended by the state: the user's stop_when test held",
    "error": "ended by an error (4 Error shows it)",
}


def usage_text(usage: Usage) -> str:
    """`312 tokens (in 290 · out 22 · 2 requests)`, or that it was not reported."""
    if not usage.known:
        return "tokens not reported"
    return (
        f"{usage.total_tokens:,} tokens (in {usage.input_tokens:,} · "
        f"out {usage.output_tokens:,} · {usage.requests:,} requests)"
    )


def fault_text(fault: Fault, *, excluded: bool, reason: bool = True) -> Text:
    """`✗ the agent's fault at turn 3 (by rule): <reason>` and whether the sample is left out."""
    party = fault.party
    text = Text()
    text.append(f"{LEFT_OUT if excluded else '✗'} ", style=PARTY_STYLE.get(party, "red"))
    text.append(f"{PARTY_NAME.get(party, party)} fault", style=f"bold {PARTY_STYLE.get(party, '')}")
    if fault.turn is not None:
        text.append(f" at turn {fault.turn}", style="bold")
    if reason:
        text.append(f" (by {fault.by}): ", style="dim")
        text.append_text(plain(fault.reason, limit=1000))
    if excluded:
        text.append(
            " · left out of the pass rate, pass^k and the verdict"
            + (" (count_user_faults keeps such samples in)" if reason else ""),
            style="yellow",
        )
    elif party == "user":
        text.append(" · counted in the pass rate (count_user_faults)", style="dim")
    return text


def render_turn(turn: Turn, *, critical: Fault | None = None) -> Text:
    """One turn: a header (number, critical mark, time, tokens), then what happened, in order."""
    text = Text()
    text.append(f"turn {turn.index}", style="bold reverse" if critical else "bold")
    if critical is not None:
        party = PARTY_NAME.get(critical.party, critical.party)
        text.append(
            f" · ✗ first critical turn: {party} fault",
            style=f"bold {PARTY_STYLE.get(critical.party, 'red')}",
        )
    details = []
    if turn.latency_ms:
        details.append(format_ms(turn.latency_ms))
    details.append(
        f"agent {turn.usage.total_tokens:,} tokens"
        if turn.usage.known
        else "agent tokens not reported"
    )
    if turn.user_usage.requests or turn.user_usage.total_tokens:
        details.append(f"user {turn.user_usage.total_tokens:,} tokens")
    if turn.stop_reason not in (None, "stop", "tool_calls"):
        details.append(f"stopped: {turn.stop_reason}")
    text.append(" · " + " · ".join(details) + "\n", style="dim")
    _labelled(text, "user ", turn.user, "bold cyan")
    for call in turn.tool_calls:
        text.append("  → ", style="bold")
        text.append_text(plain(f"{call.name}({value_text(call.arguments)})", limit=2000))
        if call.latency_ms:
            text.append(f"  {format_ms(call.latency_ms)}", style="dim")
        text.append("\n")
        if call.error is not None:
            text.append("      ✗ ", style="red")
            _indented(text, plain(call.error, limit=2000, style="red"), 8)
        else:
            text.append("      ← ", style="dim")
            # Compact JSON: a turn shows what came back, the Output tab shows it laid out.
            _indented(text, plain(value_text(call.result), limit=2000), 8)
        text.append("\n")
    for change in turn.changes:
        text.append("  state ", style="bold blue")  # already one line, cut at 200 a value
        text.append_text(plain(str(change), limit=1000))
        text.append("\n")
    if turn.error:
        text.append("agent", style="bold red")
        text.append(" raised ", style="red")
        text.append_text(plain(turn.error, limit=2000, style="red"))
    else:
        _labelled(text, "agent", turn.reply, "bold green", end="")
    return text


def _labelled(text: Text, label: str, body: str, style: str, *, end: str = "\n") -> None:
    """`label  body`, the body's later lines indented under its first."""
    text.append(label, style=style)
    text.append(" ")
    _indented(text, plain(body, limit=4000) if body else Text("(nothing)", style="dim"), 6)
    text.append(end)


def _indented(text: Text, body: Text, indent: int) -> None:
    """Append `body`, its later lines indented by `indent` spaces."""
    for number, line in enumerate(body.split("\n", allow_blank=True)):
        if number:
            text.append("\n" + " " * indent)
        text.append_text(line)


def render_ending(conversation: Conversation) -> Text:
    """How the conversation ended, its length, and who played the user at what cost."""
    text = Text()
    text.append(
        ENDINGS.get(conversation.ended_by, f"ended by {conversation.ended_by}"), style="bold"
    )
    if conversation.ended_by == "max_turns":
        text.append(f" ({conversation.max_turns})", style="bold")
    if conversation.closing:
        text.append(", saying “")
        text.append_text(plain(conversation.closing, limit=500))
        text.append("”")
    text.append("\n")
    if conversation.user_error:
        text.append_text(plain(conversation.user_error, limit=500, style="yellow"))
        text.append("\n")
    if conversation.broken_rule:
        text.append(f"the user broke a rule at turn {conversation.broken_rule_turn}: ", "yellow")
        text.append_text(plain(conversation.broken_rule, limit=500, style="yellow"))
        text.append("\n")
    count = len(conversation.turns)
    limit = f" (at most {conversation.max_turns})" if conversation.max_turns else ""
    text.append(f"{count} turn{'' if count == 1 else 's'}{limit}", style="dim")
    if conversation.user:
        text.append(" · user: ", style="dim")
        text.append_text(plain(conversation.user, limit=200, style="dim"))
    usage = conversation.user_usage
    if usage.requests or usage.total_tokens:
        text.append(f" · user {usage_text(usage)}", style="dim")
    if conversation.user_cost is not None:
        text.append(f" · ${conversation.user_cost:.4f}", style="dim")
    return text


class TurnList(Vertical):
    """A conversation's turns, one `Static` each (`.turn`, the first critical also `.critical`),
    then its ending; another conversation reuses them (no wait for a removal, no id twice)."""

    DEFAULT_CSS = """
    TurnList { height: auto; }
    TurnList > .turn {
        height: auto;
        padding: 0 1;
        margin: 0 0 1 0;
        border-left: blank;
    }
    TurnList > .turn.critical {
        border-left: thick $error;
        background: $error 12%;
    }
    TurnList > #conversation-end { height: auto; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="conversation-end")

    def show(self, conversation: Conversation, fault: Fault | None) -> Static | None:
        """Show `conversation` (replacing what was shown); the critical turn's widget."""
        critical_turn = fault.turn if fault is not None else None
        shown = [Text("no turns: the conversation never began", style="dim")]
        marks: list[bool] = [False]
        if conversation.turns:
            shown = [
                render_turn(turn, critical=fault if turn.index == critical_turn else None)
                for turn in conversation.turns
            ]
            marks = [turn.index == critical_turn for turn in conversation.turns]
        turns = list(self.query_children(".turn").results(Static))
        for widget in turns[len(shown) :]:
            widget.remove_class("critical")
            widget.remove()
        fresh = [Static(classes="turn") for _ in range(len(shown) - len(turns))]
        if fresh:
            self.mount_all(fresh, before="#conversation-end")
        critical: Static | None = None
        for widget, text, marked in zip(turns[: len(shown)] + fresh, shown, marks, strict=True):
            widget.update(text)
            widget.set_class(marked, "critical")
            if marked:
                critical = widget
        ending = render_ending(conversation)
        if fault is not None and fault.reason:  # whole here: the header's may be cut
            ending.append("\nwhy: ", style="bold")
            ending.append_text(plain(fault.reason, limit=4000))
        self.query_one("#conversation-end", Static).update(ending)
        return critical


def turn_rows(
    left: Conversation | None, right: Conversation | None, *, mark: int | None = None
) -> list[tuple[Text, Text]]:
    """Two conversations as grid rows, turn N beside turn N (or a note), then their endings;
    `mark` (from 1) flags the turn where they part ways."""
    count = max(len(left.turns) if left else 0, len(right.turns) if right else 0)
    rows = [
        (_turn_cell(left, number, mark), _turn_cell(right, number, mark))
        for number in range(1, count + 1)
    ]
    rows.append((_ending_cell(left), _ending_cell(right)))
    return rows


def _turn_cell(conversation: Conversation | None, number: int, mark: int | None) -> Text:
    if conversation is None or number > len(conversation.turns):
        return Text(f"(no turn {number})", style="dim")
    text = render_turn(conversation.turns[number - 1])
    if mark == number:
        text.stylize("bold reverse yellow", 0, len(f"turn {number}"))
        text.append("\n▲ they part ways here", style="bold yellow")
    return text


def _ending_cell(conversation: Conversation | None) -> Text:
    if conversation is None:
        return Text("not a conversation", style="dim")
    return render_ending(conversation)

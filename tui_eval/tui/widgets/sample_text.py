"""A sample as text: its trajectory, checks and usage, for the screens that show samples."""

from __future__ import annotations

from rich.text import Text

from tui_eval.agents.messages import RunResult, Usage
from tui_eval.checks import CheckResult
from tui_eval.core.results import SampleResult
from tui_eval.service.session import RunSession
from tui_eval.tui.widgets.text import cell, format_ms, plain
from tui_eval.util.text import one_line, value_text


def render_trajectory(run: RunResult | None, *, mark: int | None = None) -> Text:
    """Messages and tool calls in order, with results and latency; call `mark` (from 0) marked."""
    if run is None:
        return Text("no trajectory: the agent produced no run", style="dim")
    text = Text()
    results = {m.tool_call_id: m for m in run.messages if m.role == "tool"}
    calls = 0
    for message in run.messages:
        if message.role == "tool" and any(c.id == message.tool_call_id for c in run.tool_calls):
            continue  # shown under the call that produced it
        text.append(
            f"{message.role}\n",
            style="bold "
            + {"user": "cyan", "assistant": "green", "system": "magenta"}.get(
                message.role, "yellow"
            ),
        )
        if message.content:
            text.append_text(plain(message.content, limit=4000))
            text.append("\n")
        for call in message.tool_calls:
            args = value_text(call.arguments)
            text.append("  → ", style="bold")
            style = "bold reverse" if calls == mark else "bold"
            text.append_text(plain(f"{call.name}({args})", limit=2000, style=style))
            calls += 1
            text.append(f"  {format_ms(call.latency_ms)}" if call.latency_ms else "", style="dim")
            text.append("\n")
            if call.error is not None:
                text.append("    ✗ ", style="red")
                text.append_text(plain(call.error, limit=2000, style="red"))
            else:
                shown = results.get(call.id)
                value = call.result if call.result is not None or shown is None else shown.content
                text.append("    ← ", style="dim")
                text.append_text(plain(value_text(value, pretty=True), limit=2000))
            text.append("\n")
        text.append("\n")
    # A baseline file keeps no latencies (they would change it on every save): say so
    # rather than show 0ms.
    latency = format_ms(run.latency_ms) if run.latency_ms else "latency not recorded"
    text.append(
        f"{run.turns} turn(s) · {len(run.tool_calls)} tool call(s) · {latency}", style="dim"
    )
    return text


def render_checks(sample: SampleResult) -> Text:
    """Each check with pass/fail, score and its whole reason (the judge's reasoning)."""
    if not sample.checks:
        why = (
            "checks did not run: the sample ended with " + sample.status
            if sample.status in ("error", "timeout")
            else "no checks"
        )
        return Text(why, style="dim")
    text = Text()
    for check in sample.checks:
        text.append_text(render_check(check))
        text.append("\n")
    return text


def render_check(check: CheckResult) -> Text:
    """One check: pass/fail, its score and its whole reason, then a blank line."""
    mark, style = ("✓", "green") if check.passed else ("✗", "red")
    text = Text()
    text.append(f"{mark} {check.name}", style=f"bold {style}")
    if check.score is not None:  # a judge's against its threshold: score 0.55 < 0.70
        text.append(f"  {check.score_text or f'score {check.score:.2f}'}")
    if check.usage is not None:
        text.append(f"  · judge {check.usage.total_tokens:,} tokens", style="dim")
    text.append("\n")
    if check.reason:
        text.append_text(plain(check.reason, limit=8000))
        text.append("\n")
    return text


def verdict_text(check: CheckResult, *, short: bool = False) -> Text:
    """A judge's verdict: pass/fail, score against threshold, reasoning, jurors."""
    text = Text()
    text.append("judge: ")
    text.append("pass" if check.passed else "fail", "bold green" if check.passed else "bold red")
    if check.score_text:
        text.append(f" ({check.score_text})")
    elif check.score is not None:
        text.append(f" (score {check.score:.2f})")
    if short:
        return text
    if check.verdicts:
        for verdict in check.verdicts:
            text.append("\n  ")
            text.append_text(cell(verdict.judge, 40))
            text.append(": " + ("pass" if verdict.passed else "fail"))
            if verdict.score is not None:
                text.append(f" {verdict.score:.2f}")
            if verdict.reasoning:
                text.append(" — ")
                text.append_text(plain(verdict.reasoning, limit=600))
    elif check.reason:
        text.append("\n")
        text.append_text(plain(check.reason, limit=2000))
    return text


def render_usage(session: RunSession, sample: SampleResult) -> Text:
    """Agent, judge and user-simulator tokens, cost, latency, turns and retries."""
    run = sample.run
    agent = run.usage if run is not None else None
    conversation = run.conversation if run is not None else None
    turns = f"{run.turns if run else 0}"
    if conversation is not None:  # its turns are exchanges; `run.turns` counts responses
        turns = f"{len(conversation.turns)} (of the conversation) · {turns} model responses"
    lines = [
        f"status        {sample.status}",
        f"latency       {format_ms(sample.latency_ms)}",
        f"turns         {turns}",
        f"retries       {run.retries if run else 0}",
    ]
    if agent is not None:
        lines.append(f"agent tokens  {_tokens(agent)}")
    lines.append(f"judge tokens  {_tokens(sample.judge_usage)}")
    if conversation is not None:
        # A simulated user's model spends too: apart from the agent's, inside the total.
        user = conversation.user_usage
        who = one_line(conversation.user or "the user", 60)
        if user.requests or user.total_tokens:
            spent = f"user tokens   {_tokens(user)}"
            if conversation.user_cost is not None:
                spent += f" · ${conversation.user_cost:.6f}"
            lines.append(f"{spent} · {who}")
        else:
            lines.append(f"user tokens   0  ({who}: no model)")
    lines.append(
        f"total tokens  {sample.usage.total_tokens:,}"
        + ("  (agent, judge and user)" if conversation is not None else "")
    )
    if sample.cost is not None:
        lines.append(f"cost          ${sample.cost:.6f}")
    if sample.cached:
        lines.append("cached        ⟲ every model response came from the response cache ($0)")
    return Text("\n".join(lines))


def _tokens(usage: Usage) -> str:
    return (
        f"{usage.total_tokens:,}  (in {usage.input_tokens:,} · out {usage.output_tokens:,} · "
        f"{usage.requests} requests)"
    )

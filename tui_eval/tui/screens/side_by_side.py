"""One case in the baseline and now: the differences first, then both samples section by
section (output, trajectory, checks, error), each section starting on the same line; two
conversations turn by turn, turn N beside turn N."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.agents.messages import Conversation
from tui_eval.checks import CheckResult
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.baselines import Decision
from tui_eval.report.divergence import first_differing_turn, output_lines, trajectory_lines
from tui_eval.tui.widgets.conversation import turn_rows
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.sample_text import render_check, render_checks, render_trajectory
from tui_eval.tui.widgets.text import cell, plain
from tui_eval.util.text import counted, value_text


def representative(case: CaseResult) -> SampleResult | None:
    """The sample that best explains the case: its first failure, else its first sample."""
    return next(
        (s for s in case.samples if not s.passed), case.samples[0] if case.samples else None
    )


def unified(before: list[str], after: list[str], what: str) -> Text:
    """A unified diff of two texts, coloured; `what: identical` when they are."""
    text = Text()
    diff = list(difflib.unified_diff(before, after, "baseline", "current", lineterm="", n=2))
    if not diff:
        return Text(f"{what}: identical\n", style="dim")
    text.append(f"{what}\n", style="bold")
    for line in diff[2:402]:  # the ---/+++ file lines say nothing the heading does not
        style = (
            "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        text.append_text(plain(line[:500], limit=None, style=style))
        text.append("\n")
    return text


def paired_checks(
    before: SampleResult | None, after: SampleResult | None
) -> list[tuple[Text, Text]]:
    """Each check of either sample beside its namesake on the other side (the second
    check of a name beside the other's second), in the order they ran; a side whose
    checks did not run says why on the first line."""
    keys: list[tuple[str, int]] = []
    found: list[dict[tuple[str, int], CheckResult]] = []
    for sample in (before, after):
        seen: dict[str, int] = {}
        mine = {}
        for check in sample.checks if sample is not None else []:
            key = (check.name, seen.get(check.name, 0))
            seen[check.name] = key[1] + 1
            mine[key] = check
            if key not in keys:
                keys.append(key)
        found.append(mine)

    def shown(side: int, key: tuple[str, int], first: bool) -> Text:
        sample = (before, after)[side]
        if key in found[side]:
            return render_check(found[side][key])
        if first:
            return render_checks(sample) if sample is not None else Text("–", style="dim")
        return Text("–", style="dim") if found[side] else Text("")

    rows = keys or [("", 0)]
    return [(shown(0, key, i == 0), shown(1, key, i == 0)) for i, key in enumerate(rows)]


def _lines(sample: SampleResult | None, lines: Callable[[SampleResult], list[str]]) -> list[str]:
    return lines(sample) if sample is not None else []


def _conversation(sample: SampleResult | None) -> Conversation | None:
    return sample.run.conversation if sample is not None and sample.run is not None else None


DECISION_KEYS = [
    # `k` keeps the baseline's result: `r` is "run" on every screen, and a key that changes
    # a baseline means nothing else anywhere.
    Binding("a", "decide('accept')", "Accept", tooltip="Accept the case's new result", id="accept"),
    Binding("k", "decide('reject')", "Reject", tooltip="Reject: keep the baseline's", id="reject"),
    Binding("s", "decide('skip')", "Skip", tooltip="Skip the case for now", id="skip"),
]
"""A review's decisions: the same keys on the Diff screen and side by side."""


class SideBySideScreen(Screen[Decision | None]):
    """A changed case, baseline beside current. In a review, `a`/`k`/`s` decide it here and
    return to the Diff screen, which opens the next case still pending."""

    TITLE = "Side by side"
    BINDINGS = [
        Binding("q,escape", "dismiss", "Back", id="back"),
        *DECISION_KEYS,
    ]

    def __init__(
        self,
        name: str,
        baseline: CaseResult | None,
        current: CaseResult | None,
        *,
        reviewing: bool = False,
        pending: str = "",
    ) -> None:
        super().__init__()
        self.case_name = name
        self.before = representative(baseline) if baseline else None
        self.after = representative(current) if current else None
        self.baseline_case = baseline
        self.current_case = current
        self.reviewing = reviewing
        """Whether `a`/`k`/`s` decide this case (a Diff screen that can write the baseline)."""
        self.pending = pending

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "decide":
            return self.reviewing
        return True

    def compose(self) -> ComposeResult:
        title = Text("Side by side · ")
        title.append_text(cell(self.case_name, 100))
        if self.pending:
            title.append(f" · review: {self.pending}", style="dim")
        yield Static(title, id="screen-title")
        with VerticalScroll(id="diffs"):
            yield Static(self._differences(), id="differences")
        with VerticalScroll(id="sides"):
            yield Static(self._sides(), id="sides-table")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#sides", VerticalScroll).focus()

    def _differences(self) -> RenderableType:
        parts: list[RenderableType] = []
        before, after = _conversation(self.before), _conversation(self.after)
        if before is not None and after is not None:
            found = first_differing_turn(before, after)
            line = Text("conversation: ", style="bold")
            line.append_text(cell(found.description, 300, style="yellow" if found.where else "dim"))
            parts.append(line)
        parts += [
            unified(
                _lines(self.before, output_lines), _lines(self.after, output_lines), "output diff"
            ),
            unified(
                _lines(self.before, trajectory_lines),
                _lines(self.after, trajectory_lines),
                "trajectory diff",
            ),
        ]
        return Group(*parts)

    def _sides(self) -> RichTable:
        """Both samples in one grid: a section starts on the same line on both sides."""
        grid = RichTable.grid(expand=True, padding=(0, 1))
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        sides = (
            (self.baseline_case, self.before, "baseline"),
            (self.current_case, self.after, "current"),
        )
        heads = []
        for case, sample, label in sides:
            head = Text(f"{label}\n", style="bold underline")
            if case is None or sample is None:
                head.append("not in this run", style="dim")
            else:
                head.append(
                    f"{case.samples_passed}/{counted(case.counted, 'sample')} passed · "
                    f"sample {sample.index + 1}: {sample.status}"
                )
                if case.left_out:  # the user simulator's faults: out of the rate, not hidden
                    head.append(f" · ⊘ {case.left_out} left out", style="yellow")
            heads.append(head)
        grid.add_row(*heads)
        if self.before is None and self.after is None:
            return grid
        conversations = [_conversation(sample) for _, sample, _ in sides]
        sections: tuple[tuple[str, Callable[[SampleResult], Text]], ...] = (
            ("output", lambda s: plain(value_text(s.output, pretty=True), limit=3000)),
            ("trajectory", lambda s: render_trajectory(s.run)),
        )
        if any(conversations):
            sections = sections[:1]  # the turns below show every tool call
        for section, render in sections:
            grid.add_row(Text(""), Text(""))
            grid.add_row(*(Text(section, style="bold") for _ in sides))
            grid.add_row(
                *(render(sample) if sample is not None else Text("–") for _, sample, _ in sides)
            )
        if any(conversations):
            grid.add_row(Text(""), Text(""))
            grid.add_row(*(Text("conversation", style="bold") for _ in sides))
            mark = None
            left, right = conversations
            if left is not None and right is not None:
                parting = first_differing_turn(left, right)
                mark = parting.line + 1 if parting.where else None
            for before, after in turn_rows(*conversations, mark=mark):
                grid.add_row(before, after)  # turn N starts on the same line on both sides
                grid.add_row(Text(""), Text(""))
        grid.add_row(Text(""), Text(""))
        grid.add_row(*(Text("checks", style="bold") for _ in sides))
        for before, after in paired_checks(self.before, self.after):
            grid.add_row(before, after)  # a check starts on the same line on both sides
        if any(sample is not None and sample.error for _, sample, _ in sides):
            grid.add_row(Text(""), Text(""))
            grid.add_row(*(Text("error", style="bold red") for _ in sides))
            grid.add_row(
                *(
                    plain(sample.error, limit=2000)
                    if sample is not None and sample.error
                    else Text("no error", style="dim")
                    for _, sample, _ in sides
                )
            )
        return grid

    def action_decide(self, decision: str) -> None:
        self.dismiss(Decision(decision))

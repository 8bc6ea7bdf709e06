"""Two samples of one case side by side (baseline and now, or failing beside passing): the
differences, then both aligned section by section and turn by turn, the first divergence marked."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tui_eval.agents.messages import Conversation
from tui_eval.checks import CheckResult
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.baselines import Decision
from tui_eval.report.divergence import first_divergence, output_lines, trajectory_lines
from tui_eval.tui.widgets.conversation import fault_text, turn_rows
from tui_eval.tui.widgets.footer import KeyFooter
from tui_eval.tui.widgets.sample_text import render_check, render_checks, render_trajectory
from tui_eval.tui.widgets.text import cell, plain
from tui_eval.util.text import counted, value_text

HIGHLIGHT = "bold reverse"


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
    styles = {"+": "green", "-": "red", "@": "cyan"}
    for line in diff[2:402]:  # the ---/+++ file lines say nothing the heading does not
        text.append_text(plain(line[:500], limit=None, style=styles.get(line[:1], "")))
        text.append("\n")
    return text


def paired_checks(
    before: SampleResult | None, after: SampleResult | None
) -> list[tuple[Text, Text]]:
    """Each check of either sample beside its namesake (the nth of a name beside the nth), in
    run order; a side whose checks did not run says why on the first line."""
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


def _output(sample: SampleResult, mark: int | None) -> Text:
    """The output, laid out, its line `mark` (from 0) highlighted."""
    text = plain(value_text(sample.output, pretty=True), limit=3000)
    if mark is not None:
        lines = text.plain.split("\n")
        if mark < len(lines):
            start = sum(len(line) + 1 for line in lines[:mark])
            text.stylize(HIGHLIGHT, start, start + len(lines[mark]))
    return text


DECISION_KEYS = [
    # `k` keeps the baseline's result: `r` is "run" on every screen, and a key that changes
    # a baseline means nothing else anywhere.
    Binding("a", "decide('accept')", "Accept", tooltip="Accept the case's new result", id="accept"),
    Binding("k", "decide('reject')", "Reject", tooltip="Reject: keep the baseline's", id="reject"),
    Binding("s", "decide('skip')", "Skip", tooltip="Skip the case for now", id="skip"),
]
"""A review's decisions: the same keys on the Diff screen and side by side."""

Side = tuple[str, CaseResult | None, SampleResult | None]
"""A side: its label, its case (None: a lone sample) and its sample (None: not in this run)."""


class SideBySideScreen(Screen[Decision | None]):
    """Two samples of a case side by side; in a review, `a`/`k`/`s` decide the case here."""

    TITLE = "Side by side"
    BINDINGS = [
        Binding("q,escape", "dismiss", "Back", id="back"),
        *DECISION_KEYS,
    ]

    def __init__(
        self,
        name: str,
        left: Side,
        right: Side,
        *,
        title: str = "Side by side",
        reviewing: bool = False,
        pending: str = "",
    ) -> None:
        super().__init__()
        self.case_name = name
        self.sides = (left, right)
        self.before, self.after = left[2], right[2]
        self.title_text = title
        self.reviewing = reviewing
        """Whether `a`/`k`/`s` decide this case (a Diff screen that can write the baseline)."""
        self.pending = pending
        self.divergence = (
            first_divergence(self.before, self.after)
            if self.before is not None and self.after is not None
            else None
        )
        self.pair = left[1] is None and right[1] is None
        """Two lone samples (failing beside passing): where they part ways is said in words."""

    @classmethod
    def of_cases(
        cls,
        name: str,
        baseline: CaseResult | None,
        current: CaseResult | None,
        *,
        reviewing: bool = False,
        pending: str = "",
    ) -> SideBySideScreen:
        """A changed case: the baseline's representative sample beside the current one's."""
        return cls(
            name,
            ("baseline", baseline, representative(baseline) if baseline else None),
            ("current", current, representative(current) if current else None),
            reviewing=reviewing,
            pending=pending,
        )

    @classmethod
    def beside_passing(
        cls, name: str, failing: SampleResult, passing: SampleResult
    ) -> SideBySideScreen:
        """A failing sample beside the closest passing sample of its case."""
        return cls(
            name,
            ("failing", None, failing),
            ("closest passing", None, passing),
            title="Failing beside passing",
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "decide":
            return self.reviewing
        return True

    def compose(self) -> ComposeResult:
        title = Text(f"{self.title_text} · ")
        title.append_text(cell(self.case_name, 100))
        if self.pending:
            title.append(f" · review: {self.pending}", style="dim")
        yield Static(title, id="screen-title")
        with VerticalScroll(id="diffs"):
            yield Static(self._differences(), id="differences")
        with VerticalScroll(id="sides"):
            yield from self._rows()
        yield KeyFooter()

    def on_mount(self) -> None:
        scroll = self.query_one("#sides", VerticalScroll)
        scroll.focus()
        if self.query("#parting"):
            # Once laid out: where the two conversations part ways, in view.
            parting = self.query_one("#parting")
            self.call_after_refresh(scroll.scroll_to_widget, parting, animate=False)

    def _differences(self) -> RenderableType:
        parts: list[RenderableType] = []
        found = self.divergence
        if found is not None and (found.where == "conversation" or self.pair):
            line = Text("first divergence: ", style="bold")
            line.append_text(cell(found.description, 300, style="yellow" if found.where else "dim"))
            parts.append(line)
        for what, lines in (("output diff", output_lines), ("trajectory diff", trajectory_lines)):
            parts.append(unified(_lines(self.before, lines), _lines(self.after, lines), what))
        return Group(*parts)

    def _mark(self, where: str) -> int | None:
        """The line (a conversation's: the turn, from 1) where the sides part ways in `where`."""
        found = self.divergence
        if found is None or found.where != where:
            return None
        return found.line + 1 if where == "conversation" else found.line

    def _rows(self) -> Iterator[Horizontal]:
        """Both samples row by row: each section, turn and check starts level on both sides."""
        heads = []
        for label, case, sample in self.sides:
            head = Text(f"{label}\n", style="bold underline")
            if sample is None:
                head.append("not in this run", style="dim")
            elif case is not None:
                head.append(
                    f"{case.samples_passed}/{counted(case.counted, 'sample')} passed · "
                    f"sample {sample.index + 1}: {sample.status}"
                )
                if case.left_out:  # the user simulator's faults: out of the rate, not hidden
                    head.append(f" · ⊘ {case.left_out} left out", style="yellow")
            else:
                head.append(f"sample {sample.index + 1}: {sample.status}")
            if sample is not None and sample.fault is not None:
                head.append("\n")
                head.append_text(fault_text(sample.fault, excluded=sample.excluded, reason=False))
            heads.append(head)
        yield _row(*heads)
        if self.before is None and self.after is None:
            return
        samples = (self.before, self.after)
        conversations = [_conversation(sample) for sample in samples]
        output, calls = self._mark("output"), self._mark("trajectory")
        sections: list[tuple[str, Callable[[SampleResult], Text]]] = [
            ("output", lambda s: _output(s, output)),
            ("trajectory", lambda s: render_trajectory(s.run, mark=calls)),
        ]
        if any(conversations):
            sections = sections[:1]  # the turns below show every tool call
        for section, render in sections:
            yield _row(*(Text(f"\n{section}", style="bold") for _ in samples))
            yield _row(*(render(s) if s is not None else Text("–") for s in samples))
        if any(conversations):
            yield _row(*(Text("\nconversation", style="bold") for _ in samples))
            mark = self._mark("conversation")
            for number, (before, after) in enumerate(turn_rows(*conversations, mark=mark), 1):
                yield _row(before, after, parting=number == mark, gap=True)
        yield _row(*(Text("\nchecks", style="bold") for _ in samples))
        for before, after in paired_checks(*samples):
            yield _row(before, after)
        if any(sample is not None and sample.error for sample in samples):
            yield _row(*(Text("\nerror", style="bold red") for _ in samples))
            yield _row(
                *(
                    plain(sample.error, limit=2000)
                    if sample is not None and sample.error
                    else Text("no error", style="dim")
                    for sample in samples
                )
            )

    def action_decide(self, decision: str) -> None:
        self.dismiss(Decision(decision))


def _row(left: Text, right: Text, *, parting: bool = False, gap: bool = False) -> Horizontal:
    return Horizontal(
        Static(left, classes="pair-cell"),
        Static(right, classes="pair-cell"),
        classes="pair-row gap" if gap else "pair-row",
        id="parting" if parting else None,
    )

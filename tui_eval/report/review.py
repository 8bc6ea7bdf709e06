"""`Review`: a baseline review's decisions (as in `cargo insta review`), kept in plain Python
until the user writes them all at once."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from tui_eval.report.baselines import merge_cases
from tui_eval.report.diff import Diff
from tui_eval.report.report import Report


class Decision(enum.Enum):
    """What the user decided for one changed case."""

    ACCEPT = "accept"
    """The current result becomes the baseline's (a removed case leaves the baseline)."""
    REJECT = "reject"
    """The baseline keeps its result."""
    SKIP = "skip"
    """Left for later: nothing changes."""


KINDS = ("regressed", "improved", "added", "removed", "redefined")


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """A case the review asks about, and how it changed (one of `KINDS`)."""

    name: str
    kind: str


def review_items(diff: Diff) -> list[ReviewItem]:
    """Every changed case of `diff`, regressions first (the order of the Diff screen)."""
    items = [ReviewItem(c.name, "regressed") for c in diff.regressions]
    items += [ReviewItem(c.name, "improved") for c in diff.improvements]
    items += [ReviewItem(name, "added") for name in diff.added]
    items += [ReviewItem(name, "removed") for name in diff.removed]
    listed = {item.name for item in items}
    items += [ReviewItem(n, "redefined") for n in diff.definition_changed if n not in listed]
    return items


class Review:
    """The decisions of one review: made, undone, and written together.

    Attributes:
        items: the changed cases, in the order they are reviewed.
        decisions: the decision for each case decided since the last write.
        written: cases whose acceptance was written to the baseline file.
    """

    def __init__(self, items: list[ReviewItem]) -> None:
        self.items = items
        self.decisions: dict[str, Decision] = {}
        self.written: set[str] = set()
        self._undo: list[tuple[str, Decision | None]] = []

    def kind(self, name: str) -> str:
        """How case `name` changed."""
        return next(item.kind for item in self.items if item.name == name)

    def decide(self, name: str, decision: Decision) -> None:
        """Record `decision` for case `name` (undoable with `undo`)."""
        self._undo.append((name, self.decisions.get(name)))
        self.decisions[name] = decision

    def undo(self) -> str | None:
        """Take back the last decision not yet written; the case it was about (None: none)."""
        if not self._undo:
            return None
        name, before = self._undo.pop()
        if before is None:
            self.decisions.pop(name, None)
        else:
            self.decisions[name] = before
        return name

    @property
    def pending(self) -> list[str]:
        """Cases with no decision yet (skipped ones are decided: for later)."""
        return [
            i.name
            for i in self.items
            if i.name not in self.decisions and i.name not in self.written
        ]

    def count(self, decision: Decision) -> int:
        """How many cases have `decision` (not yet written)."""
        return sum(1 for d in self.decisions.values() if d is decision)

    def next_pending(self, after: str | None) -> str | None:
        """The first undecided case after `after` in review order (wrapping), if any."""
        pending = set(self.pending)
        names = [i.name for i in self.items]
        start = names.index(after) + 1 if after in names else 0
        for name in names[start:] + names[:start]:
            if name in pending:
                return name
        return None

    def accepted(self) -> tuple[list[str], list[str]]:
        """The accepted cases not yet written: (results to write, removed cases to drop)."""
        names = [i.name for i in self.items if self.decisions.get(i.name) is Decision.ACCEPT]
        removed = [n for n in names if self.kind(n) == "removed"]
        return [n for n in names if n not in set(removed)], removed

    def mark_written(self) -> None:
        """The accepted decisions were written: they can no longer be undone."""
        changed, removed = self.accepted()
        self.written |= set(changed) | set(removed)
        self.decisions = {n: d for n, d in self.decisions.items() if d is not Decision.ACCEPT}
        self._undo = [(n, d) for n, d in self._undo if n not in self.written]

    def status(self) -> str:
        """`3 of 7 pending · 1 to accept · 1 rejected · 1 skipped · 2 written`."""
        parts = [f"{len(self.pending)} of {len(self.items)} pending"]
        for decision, words in (
            (Decision.ACCEPT, "to accept"),
            (Decision.REJECT, "rejected"),
            (Decision.SKIP, "skipped"),
        ):
            if self.count(decision):
                parts.append(f"{self.count(decision)} {words}")
        if self.written:
            parts.append(f"{len(self.written)} written")
        return " · ".join(parts)

    def preview(self, current: Report, baseline: Report, scope: set[str]) -> Diff:
        """The comparison as it will be once the accepted decisions are written: the
        baseline's cases in `scope` (those the first comparison covered), with the accepted
        results in place. Cases outside `scope` (not run) never count as removed."""
        changed, removed = self.accepted()
        kept = replace(baseline, cases=[c for c in baseline.cases if c.name in scope])
        chosen = [c for c in current.cases if c.name in set(changed)]
        return current.compare(merge_cases(kept, chosen, removed=removed))

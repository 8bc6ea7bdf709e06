"""`BaselineStore`: the one baseline policy. A partial run never turns the cases it did not
run into "removed"; a corrupt baseline is never replaced; a cancelled run is never saved;
reading renames nothing. A `Review` keeps the Diff's decisions until written all at once."""

from __future__ import annotations

import collections
import enum
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui_eval.core.results import CaseResult
from tui_eval.report.diff import Diff
from tui_eval.report.report import Report, ReportFileError
from tui_eval.util.atomic import atomic_write_bytes, folder_lock
from tui_eval.util.home import in_data_root

if TYPE_CHECKING:
    from tui_eval.suites import Suite

VOLATILE_SAMPLE_FIELDS = ("latency_ms", "cost")
VOLATILE_REPORT_FIELDS = ("started_at", "duration_s")
VOLATILE_METADATA = ("run_id", "resumed", "suite_path")
"""What differs between two runs with the same results: a baseline file leaves it out."""


class BaselineStatus(enum.Enum):
    """What happened when a run's baseline was read or written."""

    SAVED = "saved"
    """The run was written as the baseline."""
    COMPARED = "compared"
    """The baseline was read and compared: the outcome's `diff` holds the result."""
    MISSING = "missing"
    """There is no baseline file yet."""
    CORRUPT = "corrupt"
    """The file exists but is not a readable report; it is never replaced silently."""
    REFUSED = "refused"
    """Not saved: the run is not finished, was cancelled, or has no baseline path."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineOutcome:
    """The typed result of reading or saving a baseline (`diff` when `COMPARED`; `baseline`
    when one was read)."""

    status: BaselineStatus
    path: Path | None
    message: str
    diff: Diff | None = None
    baseline: Report | None = None

    @property
    def is_error(self) -> bool:
        """Whether the baseline file itself is a problem (exit 2 in the CLI)."""
        return self.status is BaselineStatus.CORRUPT


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which of the baseline's cases a run speaks for: `only` the cases it was asked to run
    (None: the whole suite), less those it never reached (`not_run`)."""

    only: tuple[str, ...] | None = None
    not_run: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """Whether the run covers only some cases: saving it merges into the baseline."""
        return self.only is not None or bool(self.not_run)


def covered(
    baseline: Report, *, only: Collection[str] | None = None, not_run: Collection[str] = ()
) -> Report:
    """`baseline` restricted to the cases in `only` (if given), less those in `not_run`."""
    wanted = None if only is None else set(only)
    skipped = set(not_run)
    cases = [
        c for c in baseline.cases if (wanted is None or c.name in wanted) and c.name not in skipped
    ]
    return replace(baseline, cases=cases)


def merge_cases(baseline: Report, cases: Sequence[CaseResult], *, removed: Sequence[str]) -> Report:
    """`baseline` with `cases` put in by name, less the cases named in `removed`."""
    by_name = {case.name: case for case in cases}
    gone = set(removed)
    merged = [by_name.pop(c.name, c) for c in baseline.cases if c.name not in gone]
    merged.extend(by_name.values())
    return replace(baseline, cases=merged)


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselinePlan:
    """What saving a run as the baseline would do, to confirm first: `merge` the `written`
    cases or replace it, dropping `dropped`; or the `problem` that stops it."""

    path: Path
    merge: bool
    written: list[str]
    dropped: list[str]
    problem: BaselineOutcome | None = None
    existing: Report | None = field(default=None, repr=False)
    """The baseline as the plan read it (what a merge goes into)."""

    @property
    def needs_confirmation(self) -> bool:
        """A merge, or a replace that would drop cases, is confirmed first."""
        return self.problem is None and (self.merge or bool(self.dropped))

    def question(self) -> str:
        """The confirmation to ask, naming the cases."""
        if self.merge:
            return (
                f"Merge {len(self.written)} case(s) into the baseline {self.path}? "
                f"{_names(self.written)} (the other cases of the baseline are kept)"
            )
        return (
            f"Replace the baseline {self.path}? It holds {len(self.dropped)} case(s) this run "
            f"lacks, which would be dropped: {_names(self.dropped)}"
        )


def _names(names: list[str], shown: int = 6) -> str:
    listed = ", ".join(repr(n) for n in names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")


@dataclass(frozen=True, slots=True)
class BaselineStore:
    """One suite's baseline file (`path`); `earlier` is an earlier version's file, read
    while `path` does not exist and removed by the first save or accept."""

    path: Path
    earlier: Path | None = None

    @classmethod
    def for_suite(cls, suite: Suite, given: str | Path | None = None) -> BaselineStore:
        """`suite`'s baseline, or the file `given` (`--baseline FILE`) instead."""
        if given:
            return cls(Path(given))
        return cls(suite.baseline_path, suite.earlier_baseline_path)

    @property
    def source(self) -> Path:
        """The file read: `path`, or `earlier` while there is no file at `path`."""
        if self.earlier is not None and not self.path.exists():
            return self.earlier
        return self.path

    def read(self) -> BaselineOutcome:
        """The baseline: `COMPARED`-ready (with `baseline`), `MISSING` or `CORRUPT`."""
        path = self.source
        if not path.exists():
            return BaselineOutcome(
                status=BaselineStatus.MISSING, path=path, message=f"no baseline yet at {path}"
            )
        try:
            baseline = Report.load(path)
        except ReportFileError as exc:
            return _corrupt(path, f"baseline {exc} — not replaced; fix or delete it")
        counts = collections.Counter(case.name for case in baseline.cases)
        duplicates = sorted(name for name, count in counts.items() if count > 1)
        if duplicates:
            return _corrupt(
                path,
                f"baseline {path}: duplicate case names {duplicates[:5]} — not replaced; "
                "fix or delete it",
            )
        return BaselineOutcome(
            status=BaselineStatus.COMPARED, path=path, message=f"read {path}", baseline=baseline
        )

    def compare(self, report: Report | None, coverage: Coverage = Coverage()) -> BaselineOutcome:
        """Compare a finished run's report with the baseline's cases the run covers."""
        if report is None:
            return _refused(self.path, "the run has not finished yet")
        read = self.read()
        if read.baseline is None:
            return read
        baseline = covered(read.baseline, only=coverage.only, not_run=coverage.not_run)
        try:
            diff = report.compare(baseline)
        except ValueError as exc:  # the run itself has duplicate case names
            return _corrupt(self.source, str(exc))
        return BaselineOutcome(
            status=BaselineStatus.COMPARED,
            path=self.source,
            message=f"compared with {self.source}",
            diff=diff,
            baseline=read.baseline,
        )

    def plan(self, report: Report | None, coverage: Coverage = Coverage()) -> BaselinePlan:
        """What `save` would do with `report` (nothing is written)."""
        merge = coverage.partial
        if report is None or report.cancelled:
            why = "the run was cancelled" if report is not None else "the run has not finished yet"
            problem = _refused(self.path, f"baseline not saved: {why}")
            return BaselinePlan(
                path=self.path, merge=merge, written=[], dropped=[], problem=problem
            )
        existing = self.read()
        written = [case.name for case in report.cases]
        if existing.status is BaselineStatus.CORRUPT:
            problem = _corrupt(self.source, f"baseline not saved: {existing.message}")
            return BaselinePlan(
                path=self.path, merge=merge, written=written, dropped=[], problem=problem
            )
        kept = [c.name for c in existing.baseline.cases] if existing.baseline is not None else []
        if existing.baseline is None:
            merge = False  # nothing to merge into: the run becomes the baseline
        dropped = [] if merge else [name for name in kept if name not in set(written)]
        return BaselinePlan(
            path=self.path,
            merge=merge,
            written=written,
            dropped=dropped,
            existing=existing.baseline,
        )

    def save(self, report: Report | None, coverage: Coverage = Coverage()) -> BaselineOutcome:
        """Write `report` as the baseline (merged, if partial) unless that would lose any."""
        plan = self.plan(report, coverage)
        if plan.problem is not None:
            return plan.problem
        assert report is not None
        if plan.merge:
            assert plan.existing is not None
            self._write(merge_cases(plan.existing, report.cases, removed=[]))
            message = f"{len(plan.written)} case(s) merged into the baseline {self.path}"
        else:
            self._write(report)
            message = f"baseline saved to {self.path}"
        return BaselineOutcome(status=BaselineStatus.SAVED, path=self.path, message=message)

    def accept(
        self, report: Report | None, accepted: Sequence[str], coverage: Coverage = Coverage()
    ) -> BaselineOutcome:
        """Write a review's `accepted` cases into the baseline (after a whole-suite run, one
        it neither ran nor reached is dropped), under the folder's lock so concurrent
        accepts keep each other's cases."""
        if report is None:
            return _refused(self.path, "not accepted: the run has not finished yet")
        ran = {case.name for case in report.cases}
        known = None if coverage.only is not None else ran | set(coverage.not_run)
        removed = [n for n in accepted if known is not None and n not in known]
        with folder_lock(self.path.parent, private=in_data_root(self.path)):
            existing = self.read()
            if existing.status is BaselineStatus.CORRUPT:
                return _corrupt(self.source, f"not accepted: {existing.message}")
            chosen = [case for case in report.cases if case.name in set(accepted)]
            base = existing.baseline or Report(report.name, [], metadata=dict(report.metadata))
            merged = merge_cases(base, chosen, removed=removed)
            self._write(merged)
        return BaselineOutcome(
            status=BaselineStatus.SAVED,
            path=self.path,
            message=f"accepted {len(chosen) + len(removed)} case(s) into {self.path}",
            baseline=merged,
        )

    def _write(self, report: Report) -> None:
        """Write `report` at `path` unless unchanged (so no watcher fires); drop `earlier`."""
        data = baseline_json(report)
        try:
            unchanged = self.path.read_bytes() == data
        except OSError:
            unchanged = False
        if not unchanged:
            atomic_write_bytes(self.path, data, private=in_data_root(self.path))
        if self.earlier is not None and self.earlier != self.path:
            self.earlier.unlink(missing_ok=True)


# -- review: the Diff's decisions (as in `cargo insta review`), written all at once --
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
    """The decisions of one review over `items`: made, undone, and written together."""

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
        """The comparison once the accepted decisions are written, over the cases in `scope`."""
        changed, removed = self.accepted()
        chosen = [c for c in current.cases if c.name in set(changed)]
        return current.compare(merge_cases(covered(baseline, only=scope), chosen, removed=removed))


def _refused(path: Path, message: str) -> BaselineOutcome:
    return BaselineOutcome(status=BaselineStatus.REFUSED, path=path, message=message)


def _corrupt(path: Path, message: str) -> BaselineOutcome:
    return BaselineOutcome(status=BaselineStatus.CORRUPT, path=path, message=message)


def baseline_json(report: Report) -> bytes:
    """`report` as a baseline file to commit and review in git: pretty, in a stable order,
    without what changes when the results do not (latencies, costs, timestamps, ids)."""
    document = json.loads(report.to_json())
    body = document["report"]
    for key in VOLATILE_REPORT_FIELDS:
        body.pop(key, None)
    body["priced"] = False  # its costs are left out
    for key in VOLATILE_METADATA:
        body.get("metadata", {}).pop(key, None)
    body["cases"].sort(key=lambda case: case["name"])
    for case in body["cases"]:
        case["samples"].sort(key=lambda sample: sample["index"])
        for sample in case["samples"]:
            for key in VOLATILE_SAMPLE_FIELDS:
                sample.pop(key, None)
            run = sample.get("run")
            if run is None:
                continue
            run.pop("latency_ms", None)
            _steady_tool_calls(run)
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def _steady_tool_calls(run: dict[str, Any]) -> None:
    """Tool call ids (random at most APIs) renumbered in call order; latencies left out."""
    messages = run.get("messages", [])
    calls = [c for m in messages for c in m.get("tool_calls", [])] + run.get("tool_calls", [])
    ids: dict[object, str] = {}
    for call in calls:
        call.pop("latency_ms", None)
        if call.get("id") is not None:
            call["id"] = ids.setdefault(call["id"], f"call_{len(ids) + 1}")
    for message in messages:
        if message.get("tool_call_id") in ids:
            message["tool_call_id"] = ids[message["tool_call_id"]]

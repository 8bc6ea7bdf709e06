"""Baselines: read, compare, plan, save, merge and accept — the one baseline policy.

A partial run (a filter, a rerun, a shard) never turns the cases it did not run into
"removed"; a corrupt baseline is never replaced; a cancelled run is never saved.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tui_eval.report.baseline_file import write_baseline_file
from tui_eval.report.diff import Diff
from tui_eval.report.report import CaseResult, Report, ReportFileError
from tui_eval.util.atomic import folder_lock
from tui_eval.util.home import in_data_root


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
    """The typed result of reading or saving a baseline, with a sentence for people.

    Attributes:
        status: what happened.
        path: the baseline file concerned (None when the run has none).
        message: the same, in words (for a notification or the CLI).
        diff: the comparison, when `status` is `COMPARED`.
        baseline: the baseline report that was read, when it was.
    """

    status: BaselineStatus
    path: Path | None
    message: str
    diff: Diff | None = None
    baseline: Report | None = None

    @property
    def is_error(self) -> bool:
        """Whether the baseline file itself is a problem (exit 2 in the CLI)."""
        return self.status is BaselineStatus.CORRUPT


def covered(
    baseline: Report, *, only: Sequence[str] | None = None, not_run: Sequence[str] = ()
) -> Report:
    """`baseline` restricted to the cases a run covered: those in `only` (a partial run: a
    filter, a rerun, a shard), when given, less those in `not_run` (an interrupted run never
    reached them). The others are not "removed" by that run, they live in other runs."""
    wanted = None if only is None else set(only)
    skipped = set(not_run)
    cases = [
        c for c in baseline.cases if (wanted is None or c.name in wanted) and c.name not in skipped
    ]
    return replace(baseline, cases=cases)


def compare_with_baseline(
    report: Report | None,
    path: Path,
    *,
    only: Sequence[str] | None = None,
    not_run: Sequence[str] = (),
) -> BaselineOutcome:
    """Compare a finished run's report with the baseline at `path` (restricted to the
    cases named in `only`, when given). The cases in `not_run` (an interrupted run never
    reached them) are left out: not run is not "removed"."""
    if report is None:
        return BaselineOutcome(
            status=BaselineStatus.REFUSED, path=path, message="the run has not finished yet"
        )
    read = read_baseline(path)
    if read.baseline is None:
        return read
    baseline = covered(read.baseline, only=only, not_run=not_run)
    try:
        diff = report.compare(baseline)
    except ValueError as exc:  # the run itself has duplicate case names
        return BaselineOutcome(status=BaselineStatus.CORRUPT, path=path, message=str(exc))
    return BaselineOutcome(
        status=BaselineStatus.COMPARED,
        path=path,
        message=f"compared with {path}",
        diff=diff,
        baseline=read.baseline,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselinePlan:
    """What saving a run as the baseline would do, for a front-end to confirm first.

    Attributes:
        merge: merge the run's cases into the baseline (a partial run) instead of replacing it.
        written: the run's cases that would be written.
        dropped: baseline cases a full replace would drop (the run lacks them).
        problem: why it cannot be saved at all (then nothing else applies).
    """

    path: Path
    merge: bool
    written: list[str]
    dropped: list[str]
    problem: BaselineOutcome | None = None

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


def plan_baseline(report: Report | None, path: Path, *, merge: bool) -> BaselinePlan:
    """What `save_baseline` would do with `report` at `path` (nothing is written)."""
    refused = _refusal(report, path)
    if refused is not None or report is None:
        return BaselinePlan(path=path, merge=merge, written=[], dropped=[], problem=refused)
    existing = read_baseline(path)
    written = [case.name for case in report.cases]
    if existing.status is BaselineStatus.CORRUPT:
        problem = BaselineOutcome(
            status=BaselineStatus.CORRUPT,
            path=path,
            message=f"baseline not saved: {existing.message}",
        )
        return BaselinePlan(path=path, merge=merge, written=written, dropped=[], problem=problem)
    kept = [c.name for c in existing.baseline.cases] if existing.baseline is not None else []
    if existing.baseline is None:
        merge = False  # nothing to merge into: the run becomes the baseline
    dropped = [] if merge else [name for name in kept if name not in set(written)]
    return BaselinePlan(path=path, merge=merge, written=written, dropped=dropped)


def _refusal(report: Report | None, path: Path) -> BaselineOutcome | None:
    if report is None:
        return BaselineOutcome(
            status=BaselineStatus.REFUSED,
            path=path,
            message="baseline not saved: the run has not finished yet",
        )
    if report.cancelled:
        return BaselineOutcome(
            status=BaselineStatus.REFUSED,
            path=path,
            message="baseline not saved: the run was cancelled",
        )
    return None


def accept_into_baseline(
    report: Report, path: Path, names: Sequence[str], *, removed: Sequence[str] = ()
) -> BaselineOutcome:
    """Write the current results of cases `names` into the baseline at `path`, and drop
    the cases `removed` (they are gone from the suite), keeping every other case.

    The review flow's `a`/`A` and the Diff's `w`: the file is read, merged and rewritten
    atomically under a lock on its folder, so concurrent accepts into one baseline (two
    sessions, two people) each keep the others' cases.
    """
    with folder_lock(path.parent, private=in_data_root(path)):
        existing = read_baseline(path)
        if existing.status is BaselineStatus.CORRUPT:
            return BaselineOutcome(
                status=BaselineStatus.CORRUPT,
                path=path,
                message=f"not accepted: {existing.message}",
            )
        wanted = set(names)
        chosen = [case for case in report.cases if case.name in wanted]
        base = existing.baseline or Report(report.name, [], metadata=dict(report.metadata))
        merged = merge_cases(base, chosen, removed=list(removed))
        write_baseline_file(merged, path)
    count = len(chosen) + len(removed)
    return BaselineOutcome(
        status=BaselineStatus.SAVED,
        path=path,
        message=f"accepted {count} case(s) into {path}",
        baseline=merged,
    )


def merge_cases(baseline: Report, cases: Sequence[CaseResult], *, removed: Sequence[str]) -> Report:
    """`baseline` with `cases` replacing (or added after) those of the same name, and the
    cases named in `removed` dropped. Case order follows the baseline."""
    by_name = {case.name: case for case in cases}
    gone = set(removed)
    merged = [by_name.pop(c.name, c) for c in baseline.cases if c.name not in gone]
    merged.extend(by_name.values())
    return replace(baseline, cases=merged)


def save_baseline(report: Report | None, path: Path, *, merge: bool = False) -> BaselineOutcome:
    """Write `report` as the baseline at `path`, unless that would lose something.

    A cancelled or unfinished run is never saved, and a corrupt baseline file is never
    replaced (the user fixes or deletes it first). With `merge` (a partial run), the run's
    cases replace those of the same name and every other baseline case is kept.
    """
    plan = plan_baseline(report, path, merge=merge)
    if plan.problem is not None:
        return plan.problem
    assert report is not None
    if plan.merge:
        existing = read_baseline(path).baseline
        assert existing is not None
        write_baseline_file(merge_cases(existing, report.cases, removed=[]), path)
        return BaselineOutcome(
            status=BaselineStatus.SAVED,
            path=path,
            message=f"{len(plan.written)} case(s) merged into the baseline {path}",
        )
    write_baseline_file(report, path)
    return BaselineOutcome(
        status=BaselineStatus.SAVED, path=path, message=f"baseline saved to {path}"
    )


def read_baseline(path: Path) -> BaselineOutcome:
    """Read the baseline at `path`: `COMPARED`-ready (with `baseline`), `MISSING` or `CORRUPT`."""
    if not path.exists():
        return BaselineOutcome(
            status=BaselineStatus.MISSING, path=path, message=f"no baseline yet at {path}"
        )
    try:
        baseline = Report.load(path)
    except ReportFileError as exc:
        return BaselineOutcome(
            status=BaselineStatus.CORRUPT,
            path=path,
            message=f"baseline {exc} — not replaced; fix or delete it",
        )
    names = [case.name for case in baseline.cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        return BaselineOutcome(
            status=BaselineStatus.CORRUPT,
            path=path,
            message=f"baseline {path}: duplicate case names {duplicates[:5]} — not replaced; "
            "fix or delete it",
        )
    return BaselineOutcome(
        status=BaselineStatus.COMPARED, path=path, message=f"read {path}", baseline=baseline
    )

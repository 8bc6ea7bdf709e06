"""`BaselineStore`: a suite's baseline file — read, compared, saved, accepted into, migrated.

The one baseline policy, for the CLI, the app and the service alike. A partial run (a
filter, a rerun, a shard, a saved report) never turns the cases it did not run into
"removed"; a corrupt baseline is never replaced; a cancelled run is never saved. A file an
earlier version named for the suite is read where it is; the first save or accept moves
it to its current name (reading renames nothing). Baseline files are made for git: pretty,
in a stable order, without what changes from run to run.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui_eval.report.diff import Diff
from tui_eval.report.report import CaseResult, Report, ReportFileError
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


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which of the baseline's cases a run speaks for.

    Attributes:
        only: the cases it was asked to run (a filter, a rerun, a shard; a saved report's
            own), when not the whole suite.
        not_run: cases it never reached (cut short, stopped by `fail_fast`).
    """

    only: tuple[str, ...] | None = None
    not_run: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """Whether the run covers only some cases: saving it merges into the baseline."""
        return self.only is not None or bool(self.not_run)


def covered(
    baseline: Report, *, only: Sequence[str] | None = None, not_run: Sequence[str] = ()
) -> Report:
    """`baseline` restricted to the cases a run covered: those in `only`, when given, less
    those in `not_run`. The others are not "removed" by that run, they live in other runs."""
    wanted = None if only is None else set(only)
    skipped = set(not_run)
    cases = [
        c for c in baseline.cases if (wanted is None or c.name in wanted) and c.name not in skipped
    ]
    return replace(baseline, cases=cases)


def merge_cases(baseline: Report, cases: Sequence[CaseResult], *, removed: Sequence[str]) -> Report:
    """`baseline` with `cases` replacing (or added after) those of the same name, and the
    cases named in `removed` dropped. Case order follows the baseline."""
    by_name = {case.name: case for case in cases}
    gone = set(removed)
    merged = [by_name.pop(c.name, c) for c in baseline.cases if c.name not in gone]
    merged.extend(by_name.values())
    return replace(baseline, cases=merged)


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


@dataclass(frozen=True, slots=True)
class BaselineStore:
    """One suite's baseline file and every rule about it.

    Attributes:
        path: where the baseline lives (`<suite dir>/__baselines__/<stem>.json`, or the
            file given with `--baseline`).
        earlier: the suite's baseline as an earlier version named it (`chat_en.json` for
            `chat/en`), read while `path` does not exist; the first save or accept
            writes `path` and removes it.
    """

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
        names = [case.name for case in baseline.cases]
        duplicates = sorted({name for name in names if names.count(name) > 1})
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
        """What `save` would do with `report` (nothing is written): a partial run is merged
        into the baseline, a full one replaces it."""
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
        return BaselinePlan(path=self.path, merge=merge, written=written, dropped=dropped)

    def save(self, report: Report | None, coverage: Coverage = Coverage()) -> BaselineOutcome:
        """Write `report` as the baseline, unless that would lose something: a cancelled or
        unfinished run is never saved, a corrupt file never replaced (the user fixes or
        deletes it first), and a partial run's cases are merged, keeping every other case."""
        plan = self.plan(report, coverage)
        if plan.problem is not None:
            return plan.problem
        assert report is not None
        if plan.merge:
            existing = self.read().baseline
            assert existing is not None
            self._write(merge_cases(existing, report.cases, removed=[]))
            message = f"{len(plan.written)} case(s) merged into the baseline {self.path}"
        else:
            self._write(report)
            message = f"baseline saved to {self.path}"
        return BaselineOutcome(status=BaselineStatus.SAVED, path=self.path, message=message)

    def accept(
        self, report: Report | None, accepted: Sequence[str], coverage: Coverage = Coverage()
    ) -> BaselineOutcome:
        """Write a review's decisions: the run's result of every `accepted` case it ran
        replaces the baseline's, and — after a run of the whole suite — an accepted case it
        neither ran nor reached is gone from the suite and dropped.

        Every other baseline case is kept. The file is read, merged and rewritten under a
        lock on its folder, so concurrent accepts (two sessions, two people) each keep the
        others' cases.
        """
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
        """Write `report` at `path` (atomically; an unchanged file is left alone, so neither
        git nor a file watcher sees a change), moving an earlier version's file there."""
        data = baseline_json(report)
        try:
            unchanged = self.path.read_bytes() == data
        except OSError:
            unchanged = False
        if not unchanged:
            atomic_write_bytes(self.path, data, private=in_data_root(self.path))
        if self.earlier is not None and self.earlier != self.path:
            self.earlier.unlink(missing_ok=True)


def _refused(path: Path, message: str) -> BaselineOutcome:
    return BaselineOutcome(status=BaselineStatus.REFUSED, path=path, message=message)


def _corrupt(path: Path, message: str) -> BaselineOutcome:
    return BaselineOutcome(status=BaselineStatus.CORRUPT, path=path, message=message)


def baseline_json(report: Report) -> bytes:
    """`report` as a baseline file people commit and review in git.

    Pretty-printed, one case per block, cases in name order and samples in index order,
    and without what changes from run to run when the results do not: latencies, costs,
    timestamps, run ids, tool call ids (numbered in order instead) and absolute paths.
    Saving an unchanged run again writes the same bytes. `Report.load()` reads it.
    """
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
    """Tool call ids (random at most APIs) renumbered in the order the calls were made,
    with the tool messages answering them; latencies left out."""
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

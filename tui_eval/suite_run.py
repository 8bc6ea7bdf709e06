"""`SuiteRun`: the one way a suite run is started, journaled, resumed and finished.

The headless CLI and the app are thin callers of this service, so both record the same
options and metadata, resume from either honours them, and the baseline policy (compare,
save, refuse to replace a corrupt file) is written once.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tui_eval.agents.providers.settings import ProviderOptions
from tui_eval.agents.sources import samples_independent
from tui_eval.baseline_file import write_baseline_file
from tui_eval.diff import Diff
from tui_eval.events import Event, SampleFinished
from tui_eval.options import RunOptions
from tui_eval.report import CaseResult, Report, ReportFileError, SampleResult
from tui_eval.runner import Evaluation, Executor
from tui_eval.store import (
    RunHistory,
    RunJournal,
    RunLockedError,
    RunRecord,
    read_journal_samples,
)
from tui_eval.suites import Suite, load_suites


class ResumeError(Exception):
    """A recorded run cannot be resumed; the message says why (and names the run)."""


class EmptySelection(ValueError):
    """The run's options select none of the suite's cases."""


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


class SuiteRun:
    """One run of one suite: the evaluation, its journal, and its baseline.

    Create it with `SuiteRun.start()` (a new run) or `SuiteRun.resume()` (finish an
    interrupted one), then `await run()`. `cancel()` stops it keeping finished samples.

    Attributes:
        suite: the suite as run (the options' filter and sample count applied).
        options: what the run was asked to do (journaled).
        journal: where samples are appended (None: nothing kept on disk).
        evaluation: the runner's handle.
    """

    def __init__(
        self,
        suite: Suite,
        options: RunOptions,
        *,
        journal: RunJournal | None,
        done: dict[str, list[SampleResult]] | None = None,
        on_event: Callable[[Event], None] | None = None,
        metadata: dict[str, object] | None = None,
    ) -> None:
        self.suite = suite
        self.options = options
        self.journal = journal
        self.on_event = on_event
        metadata = {"suite_path": str(suite.path or ""), **(metadata or {})}
        if journal is not None:
            metadata["run_id"] = journal.record.run_id
        if done is not None:
            metadata["resumed"] = True
        self.evaluation = Evaluation(
            suite.agent,
            suite.cases,
            concurrency=options.concurrency or suite.concurrency,
            fail_fast=options.fail_fast,
            price=suite.price,
            provider=(suite.provider or ProviderOptions()).over(options.provider),
            max_cost=options.max_cost or suite.max_cost,
            cache=options.cache or suite.cache,
            name=suite.name,
            on_event=self._dispatch,
            done=done,
            metadata=metadata,
            parallel_samples=options.parallel_samples
            and all(samples_independent(suite.agent, case.model) for case in suite.cases),
            executor=_executor(suite, options),
        )

    # -- starting ----------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        suite: Suite,
        options: RunOptions,
        *,
        history: RunHistory | None,
        invocation: str,
        on_event: Callable[[Event], None] | None = None,
    ) -> SuiteRun:
        """A new run of `suite` as `options` ask, journaled in `history` (if given).

        Raises:
            EmptySelection: the filter or case list selects no case.
        """
        selected = select(suite, options)
        journal = None
        if history is not None:
            journal = history.start(
                suite.name, str(suite.path or ""), invocation=invocation, options=options
            )
        return cls(
            selected,
            options,
            journal=journal,
            on_event=on_event,
            metadata=shard_metadata(suite, options),
        )

    @classmethod
    def resume(
        cls,
        record: RunRecord,
        *,
        history: RunHistory,
        on_event: Callable[[Event], None] | None = None,
    ) -> SuiteRun:
        """Finish the interrupted run `record` with the options it was started with.

        Only the samples missing from its journal run; new ones are appended to it.

        Raises:
            ResumeError: the run already ended, or its suite cannot be loaded any more.
        """
        if record.problem is not None:
            raise ResumeError(record.problem)
        if not record.resumable:
            raise ResumeError(f"run {record.run_id} has already finished")
        if not record.suite_path:
            raise ResumeError(f"cannot resume {record.run_id}: its suite file was not recorded")
        loaded = load_suites([record.suite_path])
        suite = next((s for s in loaded.suites if s.name == record.suite), None)
        if suite is None:
            errors = "; ".join(e.message for e in loaded.errors)
            raise ResumeError(
                f"cannot resume {record.run_id}: suite {record.suite!r} not found in "
                f"{record.suite_path}" + (f" ({errors})" if errors else "")
            )
        try:
            selected = select(suite, record.options)
        except EmptySelection as exc:
            raise ResumeError(f"cannot resume {record.run_id}: {exc}") from None
        try:
            journal = history.reopen(record)
        except RunLockedError as exc:
            raise ResumeError(str(exc)) from None
        done = read_journal_samples(record.journal_path)
        return cls(
            selected,
            record.options,
            journal=journal,
            done=done,
            on_event=on_event,
            metadata=shard_metadata(suite, record.options),
        )

    # -- running -----------------------------------------------------------------------
    @property
    def run_id(self) -> str | None:
        """The run's id in the history (None when it is not journaled)."""
        return self.journal.record.run_id if self.journal is not None else None

    @property
    def resumed_samples(self) -> int:
        """How many samples an earlier, interrupted run of this one had finished."""
        return sum(len(case.samples) for case in self.evaluation.report.cases)

    @property
    def journal_error(self) -> str | None:
        """Why the journal could not be written (the run then stopped), if it could not."""
        error = self.journal.error if self.journal is not None else None
        return str(error) if error is not None else None

    def _dispatch(self, event: Event) -> None:
        journal = self.journal
        if journal is not None and isinstance(event, SampleFinished):
            journal.append(event.sample)
            if journal.error is not None and not self.evaluation.cancel_requested:
                # Unjournaled samples could not be resumed: stop while the journal is whole.
                self.evaluation.cancel()
        if self.on_event is not None:
            self.on_event(event)

    def close(self) -> None:
        """Release a run that will not be run now; its journal stays resumable."""
        if self.journal is not None:
            self.journal.close()

    async def run(self) -> Report:
        """Run every missing sample; the journal is finished even when cancelled."""
        try:
            return await self.evaluation.run()
        finally:
            if self.journal is not None and self.evaluation.finished:
                self.journal.finish(self.evaluation.report)

    def cancel(self) -> None:
        """Stop the run; finished samples are kept and the report is marked cancelled."""
        self.evaluation.cancel()

    @property
    def report(self) -> Report | None:
        """The final report, once the run has ended."""
        return self.evaluation.report if self.evaluation.finished else None

    # -- the baseline --------------------------------------------------------------------
    @property
    def baseline_path(self) -> Path:
        """Where this run compares and saves: `--baseline FILE`, else the suite's."""
        return Path(self.options.baseline) if self.options.baseline else self.suite.baseline_path

    def compare(self) -> BaselineOutcome:
        """Compare the finished run with its baseline.

        A partial run (a filter, a rerun, a shard) is compared with the baseline's cases it
        ran: the others are not "removed", they live in other runs.
        """
        only = [case.label for case in self.suite.cases] if self.options.is_partial else None
        return compare_with_baseline(self.report, self.baseline_path, only=only)

    def plan_baseline(self) -> BaselinePlan:
        """What `save_baseline()` would do (merge a partial run, replace with a full one)."""
        return plan_baseline(self.report, self.baseline_path, merge=self.options.is_partial)

    def save_baseline(self) -> BaselineOutcome:
        """Write the finished run as the baseline, unless that would lose something.

        A partial run (a filter, a rerun of some cases) is merged into the baseline.
        """
        return save_baseline(self.report, self.baseline_path, merge=self.options.is_partial)

    def write_baseline(self, accepted: Collection[str]) -> BaselineOutcome:
        """Write a review's decisions: the run's result of every `accepted` case it ran
        replaces the baseline's, and an accepted case the suite no longer has is dropped.

        Every other baseline case is kept: rejected or skipped ones, and those this run did
        not cover (a partial run removes nothing).
        """
        if self.report is None:
            return BaselineOutcome(
                status=BaselineStatus.REFUSED,
                path=self.baseline_path,
                message="not accepted: the run has not finished yet",
            )
        ran = {case.name for case in self.report.cases}
        defined = None if self.options.is_partial else {case.label for case in self.suite.cases}
        return accept_into_baseline(
            self.report,
            self.baseline_path,
            [name for name in accepted if name in ran],
            removed=[n for n in accepted if defined is not None and n not in defined | ran],
        )


def compare_with_baseline(
    report: Report | None, path: Path, *, only: Sequence[str] | None = None
) -> BaselineOutcome:
    """Compare a finished run's report with the baseline at `path` (restricted to the
    cases named in `only`, when given)."""
    if report is None:
        return BaselineOutcome(
            status=BaselineStatus.REFUSED, path=path, message="the run has not finished yet"
        )
    read = read_baseline(path)
    if read.baseline is None:
        return read
    baseline = read.baseline
    if only is not None:
        wanted = set(only)
        baseline = replace(baseline, cases=[c for c in baseline.cases if c.name in wanted])
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

    The review flow's `a`/`A`: the file is rewritten atomically.
    """
    existing = read_baseline(path)
    if existing.status is BaselineStatus.CORRUPT:
        return BaselineOutcome(
            status=BaselineStatus.CORRUPT, path=path, message=f"not accepted: {existing.message}"
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


def shard_metadata(suite: Suite, options: RunOptions) -> dict[str, object]:
    """What a shard's report records so `tui-eval merge` can tell a missing shard or case."""
    if options.shard is None:
        return {}
    return {
        "shards": [list(options.shard)],
        "planned_cases": {suite.name: [case.label for case in suite.cases]},
    }


def select(suite: Suite, options: RunOptions) -> Suite:
    """The suite with only the cases `options` select, at their sample counts.

    Raises:
        EmptySelection: no case is selected.
    """
    selected = suite.select(filter=options.filter, samples=options.samples, names=options.cases)
    if not selected.cases:
        what = f"--filter {options.filter!r}" if options.filter else "the requested cases"
        raise EmptySelection(f"no case of {suite.name!r} matches {what}")
    return selected


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


def _executor(suite: Suite, options: RunOptions) -> Executor | None:
    """The executor `options` ask for (None: this process).

    Raises:
        ExecutorError: Ray is not installed, or the suite has no file for workers to load.
    """
    if options.executor != "ray":
        return None
    from tui_eval.ray_executor import ExecutorError, RayExecutor

    if suite.path is None:
        raise ExecutorError(
            f"suite {suite.name!r} was defined in code, not loaded from a file: Ray workers "
            "load suites from files"
        )
    return RayExecutor(
        suite.path,
        suite.name,
        address=options.ray_address,
        workers=options.ray_workers,
        env=suite.required_env,
    )

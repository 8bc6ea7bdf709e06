"""The headless commands: run, resume, recheck, compare and history, for terminals and CI."""

from __future__ import annotations

import argparse
import signal
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from tui_eval.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tui_eval.report import Diff, Report, ReportFileError
from tui_eval.runner import Evaluation, Event, RunFinished, RunStarted, SampleFinished
from tui_eval.store import (
    RunHistory,
    RunJournal,
    load_baseline,
    read_journal_samples,
    save_baseline,
)
from tui_eval.suites import LoadResult, Suite, load_suites


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def default_paths(paths: list[str]) -> list[str]:
    """The paths given, or `./suites` when none were."""
    return paths or ["suites"]


def report_load_errors(loaded: LoadResult, debug: bool) -> None:
    """Print each suite file that failed to load, with its file (and case/field)."""
    for error in loaded.errors:
        _err(f"error: {error.message}")
        if debug and error.detail:
            _err(error.detail)


# -- progress -----------------------------------------------------------------------------
class Progress:
    """A live progress bar on a terminal; plain periodic lines otherwise (CI logs)."""

    def __init__(self, live: bool | None = None) -> None:
        self.live = sys.stderr.isatty() if live is None else live
        self._bar: Any = None
        self._task: Any = None
        self.total = self.done = self.passed = self.failed = 0
        self._name = ""
        self._last_print = 0.0
        self._next_line = 0

    def on_event(self, event: Event) -> None:
        """Feed a runner event."""
        if isinstance(event, SampleFinished):
            self.done += 1
            if event.sample.passed:
                self.passed += 1
            else:
                self.failed += 1
            self._advance()
        elif isinstance(event, RunStarted):
            self.done = len(event.resumed)
            self.passed = sum(1 for s in event.resumed if s.passed)
            self.failed = self.done - self.passed
            self._start(event.name, event.total_samples)
        elif isinstance(event, RunFinished):
            self._stop()

    def _start(self, name: str, total: int) -> None:
        self._name, self.total = name, total
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[green]✓ {task.fields[passed]}[/] [red]✗ {task.fields[failed]}[/]"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(
                name.replace("[", "\\["),
                total=total,
                completed=self.done,
                passed=self.passed,
                failed=self.failed,
            )
        else:
            _err(f"[{name}] running {total:,} samples")
            self._last_print = time.monotonic()
            self._next_line = max(1, total // 10)

    def _advance(self) -> None:
        if self._bar is not None:
            self._bar.update(
                self._task, completed=self.done, passed=self.passed, failed=self.failed
            )
            return
        now = time.monotonic()
        if self.done >= self._next_line or now - self._last_print >= 5:
            _err(
                f"[{self._name}] {self.done:,}/{self.total:,} samples · {self.passed:,} passed · {self.failed:,} failed"
            )
            self._last_print = now
            self._next_line = self.done + max(1, self.total // 10)

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


# -- running a suite ------------------------------------------------------------------------
@dataclass
class RunOptions:
    """What `run` was asked to do; journaled so `resume` does the same."""

    concurrency: int | None = None
    samples: int | None = None
    filter: str | None = None
    fail_fast: bool = False
    baseline: str | None = None
    save_baseline: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class SuiteOutcome:
    """The result of running one suite from the CLI."""

    suite: Suite
    report: Report
    diff: Diff | None = None
    baseline_error: str | None = None
    notes: list[str] = field(default_factory=list)


async def _watch_interrupt(evaluation: Evaluation) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            _err(
                "\ninterrupted: stopping the run and keeping finished samples (Ctrl+C again to quit at once)"
            )
            evaluation.cancel()
            return


async def execute_suite(
    suite: Suite,
    journal: RunJournal,
    options: RunOptions,
    *,
    done: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> Report:
    """Run one suite, journaling every sample as it finishes; Ctrl+C keeps a partial report."""
    display = progress or Progress()

    def on_event(event: Event) -> None:
        if isinstance(event, SampleFinished):
            journal.append(event.sample)
        display.on_event(event)

    evaluation = Evaluation(
        suite.agent,
        suite.cases,
        concurrency=options.concurrency or suite.concurrency,
        fail_fast=options.fail_fast,
        price=suite.price,
        name=suite.name,
        on_event=on_event,
        done=done,
        metadata={
            "suite_path": str(suite.path) if suite.path else "",
            "run_id": journal.record.run_id,
        },
    )
    async with anyio.create_task_group() as group:
        if _can_watch_signals():
            group.start_soon(_watch_interrupt, evaluation)
        report = await evaluation.run()
        group.cancel_scope.cancel()
    journal.finish(report)
    return report


def _can_watch_signals() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _compare_with_baseline(outcome: SuiteOutcome, baseline_path: Path) -> None:
    try:
        baseline = load_baseline(baseline_path)
    except ReportFileError as exc:
        outcome.baseline_error = f"baseline {exc} — not replaced; fix or delete it"
        return
    if baseline is not None:
        outcome.diff = outcome.report.compare(baseline)


SUMMARY_PASSING_LIMIT = 20


def _print_outcome(outcome: SuiteOutcome) -> None:
    from tui_eval.report import render_summary

    where = f" ({outcome.suite.path})" if outcome.suite.path else ""
    print(f"── {outcome.suite.name}{where}")
    print(render_summary(outcome.report, max_passing=SUMMARY_PASSING_LIMIT))
    if outcome.diff is not None:
        print(str(outcome.diff))
    for note in outcome.notes:
        print(note)
    if outcome.report.cancelled:
        finished = sum(len(c.samples) for c in outcome.report.cases)
        print(f"run cancelled: kept {finished:,} finished samples")
    print()


def _finish_suite(suite: Suite, report: Report, options: RunOptions) -> SuiteOutcome:
    outcome = SuiteOutcome(suite, report)
    baseline_path = Path(options.baseline) if options.baseline else suite.baseline_path
    _compare_with_baseline(outcome, baseline_path)
    if outcome.baseline_error:
        _err(f"error: {outcome.baseline_error}")
    if options.save_baseline:
        if report.cancelled:
            outcome.notes.append("baseline not saved: the run was cancelled")
        elif outcome.baseline_error and not options.baseline:
            outcome.notes.append(f"baseline not saved: {baseline_path} is corrupt; delete it first")
        else:
            save_baseline(baseline_path, report)
            outcome.notes.append(f"baseline saved to {baseline_path}")
    return outcome


def exit_code(outcomes: list[SuiteOutcome], load_failed: bool) -> int:
    """2 on load errors; 1 on failures, regressions or a cancelled run; else 0."""
    if load_failed or any(o.baseline_error for o in outcomes):
        return EXIT_USAGE
    if any(not o.report.passed or (o.diff is not None and not o.diff.ok) for o in outcomes):
        return EXIT_FAILED
    return EXIT_OK


def run_command(args: argparse.Namespace) -> int:
    """`tui-eval run --headless`."""
    loaded = load_suites(default_paths(args.paths))
    report_load_errors(loaded, args.debug)
    if not loaded.suites and not loaded.errors:
        _err(f"error: no suites found in {' '.join(default_paths(args.paths))}")
        return EXIT_USAGE
    options = RunOptions(
        args.concurrency,
        args.samples,
        args.filter,
        args.fail_fast,
        args.baseline,
        args.save_baseline,
    )
    runnable = [s for s in loaded.suites if not s.skip]
    if args.baseline and len(runnable) > 1:
        _err(
            "error: --baseline FILE needs exactly one suite; the suites found were "
            + ", ".join(s.name for s in runnable)
        )
        return EXIT_USAGE
    outcomes = anyio.run(_run_suites, loaded.suites, options)
    _write_exports(args, outcomes)
    return exit_code(outcomes, bool(loaded.errors))


async def _run_suites(suites: list[Suite], options: RunOptions) -> list[SuiteOutcome]:
    history = RunHistory()
    invocation = uuid.uuid4().hex[:12]
    outcomes: list[SuiteOutcome] = []
    for full in suites:
        if full.skip:
            print(f"- {full.name}: {full.skip}\n")
            continue
        suite = full.select(filter=options.filter, samples=options.samples)
        if not suite.cases:
            print(f"- {suite.name}: no case matches --filter {options.filter!r}\n")
            continue
        journal = history.start(
            suite.name, str(suite.path or ""), invocation=invocation, options=options.as_dict()
        )
        report = await execute_suite(suite, journal, options)
        outcome = _finish_suite(suite, report, options)
        _print_outcome(outcome)
        outcomes.append(outcome)
        if report.cancelled:
            break
    return outcomes


def _write_exports(args: argparse.Namespace, outcomes: list[SuiteOutcome]) -> None:
    from tui_eval.exporters import junit_xml, markdown_summary, merge_reports, write_bytes

    reports = [o.report for o in outcomes]
    if not reports:
        return
    if args.json:
        merge_reports(reports).save(args.json)
        _err(f"report written to {args.json}")
    if args.junit:
        write_bytes(args.junit, junit_xml(reports))
        _err(f"JUnit XML written to {args.junit}")
    if args.markdown:
        write_bytes(args.markdown, markdown_summary(reports, [o.diff for o in outcomes]).encode())
        _err(f"Markdown summary written to {args.markdown}")


# -- resume, recheck, compare, history ------------------------------------------------------
def _find_suite(suites: list[Suite], name: str) -> Suite | None:
    return next((s for s in suites if s.name == name), None)


def resume_command() -> int:
    """`tui-eval resume`: finish the interrupted runs of the last invocation."""
    history = RunHistory()
    records = history.interrupted()
    if not records:
        print("nothing to resume: no interrupted run in this project's history")
        return EXIT_OK

    async def resume_all() -> tuple[list[SuiteOutcome], bool]:
        outcomes: list[SuiteOutcome] = []
        failed_load = False
        for record in records:
            loaded = load_suites([record.suite_path])
            report_load_errors(loaded, False)
            found = _find_suite(loaded.suites, record.suite)
            if found is None:
                _err(
                    f"error: cannot resume {record.run_id}: suite {record.suite!r} not found in {record.suite_path}"
                )
                failed_load = True
                continue
            options = RunOptions(
                **{k: v for k, v in record.options.items() if k in RunOptions.__dataclass_fields__}
            )
            suite = found.select(filter=options.filter, samples=options.samples)
            done = read_journal_samples(record.journal_path)
            count = sum(len(v) for v in done.values())
            print(
                f"resuming {record.run_id}: {count:,} of {suite.total_samples:,} samples already done"
            )
            report = await execute_suite(suite, history.reopen(record), options, done=done)
            outcome = _finish_suite(suite, report, options)
            _print_outcome(outcome)
            outcomes.append(outcome)
        return outcomes, failed_load

    outcomes, failed_load = anyio.run(resume_all)
    return exit_code(outcomes, failed_load)


def recheck_command(args: argparse.Namespace) -> int:
    """`tui-eval recheck REPORT PATH...`: the suites' current checks on saved outputs."""
    from tui_eval.runner import recheck

    try:
        report = Report.load(args.report)
    except ReportFileError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    loaded = load_suites(args.paths)
    report_load_errors(loaded, args.debug)
    suite = _find_suite(loaded.suites, report.name) or (
        loaded.suites[0] if len(loaded.suites) == 1 else None
    )
    if suite is None:
        names = ", ".join(s.name for s in loaded.suites) or "none"
        _err(f"error: no suite named {report.name!r} in {' '.join(args.paths)} (found: {names})")
        return EXIT_USAGE
    rechecked = anyio.run(
        lambda: recheck(report, suite.cases, concurrency=suite.concurrency, price=suite.price)
    )
    print(str(rechecked))
    diff = rechecked.compare(report)
    print(str(diff))
    if args.json:
        rechecked.save(args.json)
        _err(f"report written to {args.json}")
    if loaded.errors:
        return EXIT_USAGE
    return EXIT_OK if rechecked.passed and diff.ok else EXIT_FAILED


def compare_command(current_path: str, baseline_path: str) -> int:
    """`tui-eval compare CURRENT BASELINE`."""
    try:
        current = Report.load(current_path)
        baseline = Report.load(baseline_path)
        diff = current.compare(baseline)
    except (ReportFileError, ValueError) as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    print(f"{current_path} against {baseline_path}")
    print(str(diff))
    return EXIT_OK if diff.ok else EXIT_FAILED


def history_command(limit: int) -> int:
    """`tui-eval history`: the project's past runs, newest first."""
    history = RunHistory()
    records = history.runs()[:limit]
    if not records:
        print(f"no runs recorded yet for {history.project_root}")
        return EXIT_OK
    print(f"runs of {history.project_root} (newest first)")
    for record in records:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.started_at))
        try:
            summary = record.summary()
            counts = (
                f"{summary.cases_passed}/{summary.cases_total} cases · {summary.samples:,} samples · "
                f"{summary.tokens:,} tokens"
            )
        except (ReportFileError, OSError, ValueError) as exc:
            counts = f"unreadable: {exc}"
        print(f"  {when}  {record.status:<11}  {record.suite:<24}  {counts}  {record.run_id}")
    return EXIT_OK

"""The headless commands that run suites — run (`--decide` too), ab, recheck and resume —
for terminals and CI. Each builds `SuiteRun`s and runs them the same way: journaled,
resumable, with the same exports and exit codes."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from rich.cells import cell_len

from tui_eval.diff import Diff
from tui_eval.exit_codes import EXIT_FAILED, EXIT_NOTHING_TO_RESUME, EXIT_OK, EXIT_USAGE
from tui_eval.gate import (
    RUN_DEFAULT,
    FailOn,
    Shard,
    assign_shards,
    gate_failures,
    parse_fail_on,
)
from tui_eval.options import RunOptions
from tui_eval.progress import Progress
from tui_eval.ray_executor import ExecutorError, import_ray
from tui_eval.report import Report, ReportFileError, render_summary
from tui_eval.store import JournalFileError, RunHistory
from tui_eval.suite_run import (
    BaselineStatus,
    EmptySelection,
    PlanError,
    ResumeError,
    SuiteRun,
    last_failed,
    recheck_part,
    recheck_parts,
)
from tui_eval.suites import LoadResult, Suite, load_suites
from tui_eval.text import one_line, pad_cells, sanitize


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def default_paths(paths: list[str]) -> list[str]:
    """The paths given, or `./suites` when none were."""
    return paths or ["suites"]


def report_load_errors(loaded: LoadResult, debug: bool) -> None:
    """Print each suite file that failed to load, with its file (and case/field)."""
    for error in loaded.errors:
        _err(f"error: {sanitize(error.message)}")
        if debug and error.detail:
            _err(sanitize(error.detail))


# -- running a suite ------------------------------------------------------------------------
@dataclass(slots=True, kw_only=True)
class SuiteOutcome:
    """The result of running one suite from the CLI."""

    suite: Suite
    report: Report
    mode: str = "run"
    title: str = ""
    diff: Diff | None = None
    baseline_error: str | None = None
    baseline_missing: str | None = None
    """The baseline file the run had none of (a new suite), when it had none."""
    journal_error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def stopped(self) -> bool:
        """Whether the run ended before its last sample (interrupted, or its journal failed)."""
        return self.report.cancelled or self.journal_error is not None


async def _watch_interrupt(service: SuiteRun) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            what = "Ctrl+C" if signum == signal.SIGINT else "SIGTERM"
            _err(
                f"\ninterrupted ({what}): stopping the run and keeping finished samples; "
                "`tui-eval resume` finishes it (Ctrl+C again to quit at once)"
            )
            service.cancel()
            return


async def execute(service: SuiteRun, progress: Progress | None = None) -> SuiteOutcome:
    """Run one suite to its end with a progress display, then apply the baseline policy."""
    display = progress or Progress()
    service.on_event = display.on_event
    async with anyio.create_task_group() as group:
        if _can_watch_signals():
            group.start_soon(_watch_interrupt, service)
        report = await service.run()
        group.cancel_scope.cancel()
    return _finish_suite(service, report)


def _can_watch_signals() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


SUMMARY_PASSING_LIMIT = 20


def _print_outcome(outcome: SuiteOutcome) -> None:
    if outcome.mode in ("decide", "ab") and outcome.diff is not None:
        print_decisions(outcome.title or outcome.suite.name, outcome.diff)
    elif outcome.mode != "recheck":  # a recheck prints its merged summary at the end
        where = f" ({outcome.suite.path})" if outcome.suite.path else ""
        print(f"── {one_line(outcome.suite.name, 200)}{where}")
        print(render_summary(outcome.report, max_passing=SUMMARY_PASSING_LIMIT))
        if outcome.diff is not None:
            print(str(outcome.diff))
    for note in outcome.notes:
        print(note)
    if outcome.stopped:
        finished = sum(len(c.samples) for c in outcome.report.cases)
        why = f"stopped ({outcome.report.stopped})" if outcome.report.stopped else "cancelled"
        print(f"run {why}: kept {finished:,} finished samples; `tui-eval resume` finishes it")
    print()


def _finish_suite(service: SuiteRun, report: Report) -> SuiteOutcome:
    title = service.suite.name
    if service.options.ab is not None:
        title = f"{title}: A = {service.options.ab[0]}, B = {service.options.ab[1]}"
    outcome = SuiteOutcome(suite=service.suite, report=report, mode=service.mode, title=title)
    budget = service.options.max_cost or service.suite.max_cost
    if budget is not None and report.samples and not report.priced:
        outcome.notes.append(
            f"warning: max_cost ${budget:g} was not enforced: no sample had a price (give the "
            "suite a price= function, or use a model in the built-in price table)"
        )
    if service.journal_error is not None:
        outcome.journal_error = f"{service.journal_error}; the run stopped"
        _err(f"error: {outcome.journal_error} (what was journaled resumes with `tui-eval resume`)")
    compared = service.compare()
    if compared.status is BaselineStatus.COMPARED:
        outcome.diff = compared.diff
    elif compared.status is BaselineStatus.MISSING and not service.options.save_baseline:
        outcome.baseline_missing = str(compared.path)
    elif compared.is_error:
        outcome.baseline_error = compared.message
        _err(f"error: {compared.message}")
    if service.options.save_baseline:
        outcome.notes.append(service.save_baseline().message)
    return outcome


def exit_code(
    outcomes: list[SuiteOutcome],
    load_failed: bool,
    fail_on: frozenset[FailOn] = RUN_DEFAULT,
) -> int:
    """2 on load or file errors; 1 when a `--fail-on` condition is met (or a run was
    interrupted); else 0."""
    if load_failed or any(o.baseline_error or o.journal_error for o in outcomes):
        return EXIT_USAGE
    reasons = [r for o in outcomes for r in outcome_failures(o, fail_on)]
    if any(o.stopped for o in outcomes) or reasons:
        return EXIT_FAILED
    return EXIT_OK


def outcome_failures(outcome: SuiteOutcome, fail_on: frozenset[FailOn]) -> list[str]:
    """Why one suite's outcome fails the gate. A decide or A/B run fails on a case
    *decided* a regression (its whole point: a noisy drop is not one)."""
    if outcome.mode in ("decide", "ab"):
        decided = [
            c for c in (outcome.diff.changes if outcome.diff else []) if c.label == "regression"
        ]
        return [f"{len(decided)} case(s) decided a regression"] if decided else []
    return gate_failures(fail_on, outcome.report, outcome.diff)


def print_decisions(title: str, diff: Diff) -> None:
    """Print each compared case's verdict of a decide or A/B run."""
    print(f"── {one_line(title, 200)}")
    print(diff.suite_line())
    # Terminal cells, not characters: wide (CJK) names line up as in the run summary.
    width = min(max((cell_len(one_line(c.name, 60)) for c in diff.changes), default=0), 60)
    for change in diff.changes:
        mark = {"regression": "✗", "no regression": "✓"}.get(change.label, "?")
        hint = f"  ({change.hint})" if change.hint and not change.decided else ""
        print(
            f"  {mark} {pad_cells(one_line(change.name, 60), width)}  {change.label:<30}  "
            f"{change.baseline_passed}/{change.baseline_total} → "
            f"{change.current_passed}/{change.current_total}{hint}"
        )


def run_command(args: argparse.Namespace, *, mode: str = "run") -> int:
    """`tui-eval run --headless` (and `run --decide`, `ab`, `recheck`: `mode`)."""
    try:
        fail_on = (
            parse_fail_on(args.fail_on)
            if getattr(args, "fail_on", None) is not None
            else RUN_DEFAULT
        )
        shard = Shard.parse(args.shard) if getattr(args, "shard", None) else None
        options = RunOptions.from_args(args)
        if mode == "ab":
            options = options.model_copy(update={"ab": (args.a, args.b)})
        if options.executor == "ray":
            import_ray()
    except (ValueError, ExecutorError) as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    rechecked: Report | None = None
    if mode == "recheck":
        try:
            rechecked = Report.load(args.report)
        except ReportFileError as exc:
            _err(f"error: {exc}")
            return EXIT_USAGE
        options = options.model_copy(update={"recheck": str(Path(args.report).resolve())})
    paths = default_paths(args.paths)
    loaded = load_suites(paths)
    report_load_errors(loaded, args.debug)
    if not loaded.suites and not loaded.errors:
        _err(f"error: no suites found in {' '.join(paths)}")
        return EXIT_USAGE
    runnable = [s for s in loaded.suites if not s.skip]
    if getattr(args, "baseline", None) and len(runnable) > 1:
        _err(
            "error: --baseline FILE needs exactly one suite; the suites found were "
            + ", ".join(s.name for s in runnable)
        )
        return EXIT_USAGE
    plans: list[Plan] = [(suite, options, None) for suite in loaded.suites]
    if rechecked is not None:
        parts = _recheck_plans(loaded.suites, options, rechecked, paths)
        if parts is None:
            return EXIT_USAGE
        plans = parts
    if shard is not None:
        plans = [(s, o, None) for s, o in _shard_plans(loaded.suites, options, shard)]
    if getattr(args, "last_failed", False):
        plans = [(s, _last_failed_options(s, o), r) for s, o, r in plans]
    outcomes, failed = anyio.run(_run_suites, plans)
    if rechecked is not None and outcomes:
        _print_recheck(outcomes)
    exported = _write_exports(args, outcomes)
    explicit = getattr(args, "fail_on", None) is not None
    unchecked = _missing_baselines(outcomes, fail_on, explicit=explicit, shard=shard is not None)
    code = exit_code(outcomes, bool(loaded.errors) or failed or not exported, fail_on)
    reasons = [r for o in outcomes for r in outcome_failures(o, fail_on)] + unchecked
    if unchecked and code == EXIT_OK:
        code = EXIT_FAILED
    if code == EXIT_FAILED and reasons and mode == "run" and not options.decide:
        fails = ",".join(c.value for c in FailOn if c in fail_on)
        print(f"failing (--fail-on {fails}): {'; '.join(reasons)}")
    return code


BASELINE_CONDITIONS = frozenset({FailOn.REGRESSIONS, FailOn.REMOVED, FailOn.DEFINITION_CHANGED})


def _missing_baselines(
    outcomes: list[SuiteOutcome], fail_on: frozenset[FailOn], *, explicit: bool, shard: bool
) -> list[str]:
    """Say which suites had no baseline to gate on; the gate's reason when it fails closed.

    A suite without a baseline is new: its cases cannot regress, and the run says so
    rather than passing in silence. When `--fail-on` explicitly asks for a condition that
    needs a baseline and no suite of the run has one (a forgotten commit, a wrong
    `--baseline`), the gate fails closed. A shard never does: the merged report is gated.
    """
    needed = fail_on & BASELINE_CONDITIONS
    missing = [o for o in outcomes if o.baseline_missing and o.mode == "run"]
    if not needed or not missing:
        return []
    what = ", ".join(sorted(c.value for c in needed))
    for outcome in missing:
        _err(
            f"note: no baseline for suite {outcome.suite.name!r} at {outcome.baseline_missing}: "
            f"its cases are new, not checked for {what} (save one with --save-baseline)"
        )
    if explicit and not shard and len(missing) == len(outcomes):
        return [f"no baseline to check {what} against ({len(missing)} suite(s) without one)"]
    return []


Plan = tuple[Suite, RunOptions, "Report | None"]
"""A suite to run, its options, and (for a recheck) the saved report part it rechecks."""


def _last_failed_options(suite: Suite, options: RunOptions) -> RunOptions:
    """`--last-failed`: the options running only the cases of `suite` that failed in its
    last run (all of them when none did, or when it has never run), and say which."""
    if suite.skip:
        return options
    failed = last_failed(suite, RunHistory())
    name = one_line(suite.name, 200)
    if not failed:
        why = "no recorded run" if failed is None else "no failure in its last run"
        print(f"--last-failed: {name}: {why}; running every case")
        return options
    print(f"--last-failed: {name}: rerunning the {len(failed)} case(s) that failed last time")
    chosen = failed if options.cases is None else tuple(c for c in failed if c in options.cases)
    return options.model_copy(update={"cases": chosen})


def _recheck_plans(
    suites: list[Suite], options: RunOptions, report: Report, paths: list[str]
) -> list[Plan] | None:
    """Each suite with the part of `report` it rechecks (None: a usage error, printed)."""
    parts = recheck_parts(report)
    plans: list[Plan] = []
    for name in parts:
        suite = _find_suite(suites, name)
        if suite is None and len(suites) == 1 and len(parts) == 1:
            suite = suites[0]
        if suite is None:
            found = ", ".join(s.name for s in suites) or "none"
            _err(f"error: no suite named {name!r} in {' '.join(paths)} (found: {found})")
            return None
        plans.append((suite, options, recheck_part(report, suite.name, only_suite=True)))
    return plans


def _print_recheck(outcomes: list[SuiteOutcome]) -> None:
    """The rechecked report and how its verdicts moved, over every suite rechecked."""
    from tui_eval.exporters import merge_reports

    rechecked = merge_reports([o.report for o in outcomes])
    print(str(rechecked))
    diff = Diff()
    for outcome in outcomes:
        if outcome.diff is not None:
            diff.extend(outcome.diff)
    print(str(diff))


def _shard_plans(
    suites: list[Suite], options: RunOptions, shard: Shard
) -> list[tuple[Suite, RunOptions]]:
    """Each suite with the options of this shard: its share of the cases (a function of
    the suites and the filter alone, so every CI job computes the same split)."""
    keys = [
        (suite.name, case.label)
        for suite in suites
        if not suite.skip
        for case in suite.select(filter=options.filter).cases
    ]
    shard_of = assign_shards(keys, shard.total)
    plans: list[tuple[Suite, RunOptions]] = []
    for suite in suites:
        mine = tuple(
            name
            for (owner, name), n in shard_of.items()
            if owner == suite.name and n == shard.index
        )
        if suite.skip or mine:
            plans.append(
                (
                    suite,
                    options.model_copy(update={"cases": mine, "shard": (shard.index, shard.total)}),
                )
            )
        else:
            print(f"- {one_line(suite.name, 200)}: no case in shard {shard}\n")
    return plans


async def _run_suites(plans: list[Plan]) -> tuple[list[SuiteOutcome], bool]:
    """Run every plan's suite; also whether a plan could not start (a usage error)."""
    history = RunHistory()
    invocation = uuid.uuid4().hex[:12]
    runnable = []
    for suite, options, rechecked in plans:
        if suite.skip:
            print(f"- {one_line(suite.name, 200)}: {one_line(suite.skip, 200)}\n")
            continue
        try:  # nothing runs (or is journaled) unless every plan can start
            SuiteRun.start(suite, options, history=None, invocation=invocation, rechecked=rechecked)
        except EmptySelection as exc:
            print(f"- {one_line(suite.name, 200)}: {exc}\n")
            continue
        except (PlanError, ExecutorError) as exc:
            _err(f"error: {exc}")
            return [], True
        runnable.append((suite, options, rechecked))
    services: list[SuiteRun] = []
    # Every suite's journal is opened first, so a run killed in its first suite resumes
    # the ones it never reached too.
    for suite, options, rechecked in runnable:
        services.append(
            SuiteRun.start(
                suite, options, history=history, invocation=invocation, rechecked=rechecked
            )
        )
    return await _execute_all(services), False


async def _execute_all(services: list[SuiteRun], *, resuming: bool = False) -> list[SuiteOutcome]:
    """Run the services one after another; the rest stay resumable once one stops."""
    outcomes: list[SuiteOutcome] = []
    for position, service in enumerate(services):
        if resuming:
            print(
                f"resuming {service.run_id}: {service.resumed_samples:,} of "
                f"{service.suite.total_samples:,} samples already done"
            )
        outcome = await execute(service)
        _print_outcome(outcome)
        outcomes.append(outcome)
        if outcome.stopped:
            left = services[position + 1 :]
            for rest in left:
                rest.close()  # not started: its journal stays resumable
            if left:
                names = ", ".join(one_line(s.suite.name, 60) for s in left)
                print(f"not run: {names}; `tui-eval resume` runs them\n")
            break
    return outcomes


def _write_exports(args: argparse.Namespace, outcomes: list[SuiteOutcome]) -> bool:
    """Write the files asked for; each that cannot be written is named. True if all were.

    When `$GITHUB_STEP_SUMMARY` is set (a GitHub Actions job), the Markdown summary is
    appended to it as well.
    """
    from tui_eval.exporters import (
        junit_xml,
        markdown_summary,
        merge_reports,
        samples_csv,
        samples_jsonl,
        write_bytes,
    )

    reports = [o.report for o in outcomes]
    if not reports:
        return True

    def markdown() -> bytes:
        return markdown_summary(reports, [o.diff for o in outcomes]).encode()

    exports: list[tuple[str | None, str, Callable[[], bytes]]] = [
        (args.json, "report", lambda: merge_reports(reports).to_json()),
        (args.junit, "JUnit XML", lambda: junit_xml(reports, [o.diff for o in outcomes])),
        (args.markdown, "Markdown summary", markdown),
        (getattr(args, "csv", None), "per-sample CSV", lambda: samples_csv(reports)),
        (getattr(args, "samples_jsonl", None), "per-sample JSONL", lambda: samples_jsonl(reports)),
    ]
    written = True
    for path, what, render in exports:
        if not path:
            continue
        try:
            write_bytes(path, render())
        except OSError as exc:
            _err(f"error: {what} not written to {path}: {exc.strerror or exc}")
            written = False
        else:
            _err(f"{what} written to {path}")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "ab") as handle:
                handle.write(markdown() + b"\n")
        except OSError as exc:
            _err(f"error: job summary not written to {step_summary}: {exc.strerror or exc}")
    return written


# -- resume, recheck, compare, history ------------------------------------------------------
def _find_suite(suites: list[Suite], name: str) -> Suite | None:
    return next((s for s in suites if s.name == name), None)


def resume_command(args: argparse.Namespace | None = None) -> int:
    """`tui-eval resume`: finish the interrupted runs of the last invocation."""
    force = bool(getattr(args, "force", False))
    history = RunHistory()
    try:
        records = history.interrupted()
    except JournalFileError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    if not records:
        print("nothing to resume: no interrupted run in this project's history")
        return EXIT_NOTHING_TO_RESUME

    async def resume_all() -> tuple[list[SuiteOutcome], bool]:
        failed = False
        # Every run of the invocation is taken (locked) before any runs, so a second
        # resume started meanwhile finds them all taken instead of running the later ones.
        services: list[SuiteRun] = []
        for record in records:
            try:
                services.append(SuiteRun.resume(record, history=history, force=force))
            except (ResumeError, JournalFileError) as exc:
                _err(f"error: {exc}")
                failed = True
        outcomes = await _execute_all(services, resuming=True)
        if outcomes and all(o.mode == "recheck" for o in outcomes):
            _print_recheck(outcomes)
        return outcomes, failed

    outcomes, failed = anyio.run(resume_all)
    return exit_code(outcomes, failed)

"""The headless commands that run suites (run, ab, recheck, resume) for terminals and CI,
each through `SuiteRun`s: journaled, resumable, with the same exports and exit codes."""

from __future__ import annotations

import argparse
import signal
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import anyio

from tui_eval.agents.http.context import Runtime
from tui_eval.cli.exit_codes import (
    EXIT_FAILED,
    EXIT_NOTHING_RAN,
    EXIT_NOTHING_TO_RESUME,
    EXIT_OK,
    EXIT_USAGE,
    exit_code_for,
)
from tui_eval.cli.outcomes import (
    SuiteOutcome,
    exit_code,
    exports_from_args,
    missing_baselines,
    nothing_ran_report,
    outcome_failures,
    print_error,
    print_outcome,
    print_recheck,
    write_exports,
)
from tui_eval.cli.progress import Progress
from tui_eval.core.settings import ExecutorError
from tui_eval.report.baselines import BaselineStatus
from tui_eval.report.diff import Diff
from tui_eval.report.exporters import suite_parts
from tui_eval.report.gate import (
    RUN_DEFAULT,
    FailOn,
    Shard,
    assign_shards,
    parse_fail_on,
)
from tui_eval.report.report import Report, ReportFileError
from tui_eval.service.request import ABRun, Exports, PlainRun, RecheckRun, RunRequest
from tui_eval.service.run_plan import (
    EmptySelection,
    PlanError,
    RunPlan,
    last_failed,
    plan_run,
    recheck_part,
)
from tui_eval.service.store import JournalFileError, RunHistory, RunRecord
from tui_eval.service.suite_run import ResumeError, SuiteRun
from tui_eval.service.suite_set import SuiteSet, file_changes
from tui_eval.suites import LoadResult, Suite, load_suites
from tui_eval.util.text import one_line, sanitize


def default_paths(paths: list[str]) -> list[str]:
    """The paths given, or `./suites` when none were."""
    return paths or ["suites"]


def _load(paths: list[str], debug: bool) -> LoadResult | None:
    """The suites of `paths`, their load errors printed; None (printed) when there are none."""
    loaded = load_suites(paths)
    report_load_errors(loaded, debug)
    if not loaded.suites and not loaded.errors:
        print_error(f"error: no suites found in {' '.join(paths)}")
        return None
    return loaded


def report_load_errors(loaded: LoadResult, debug: bool) -> None:
    """Print each suite file that failed to load, with its file (and case/field)."""
    for error in loaded.errors:
        print_error(f"error: {sanitize(error.message)}")
        if debug and error.detail:
            print_error(sanitize(error.detail))


# -- running a suite ------------------------------------------------------------------------
async def _watch_interrupt(service: SuiteRun) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            what = "Ctrl+C" if signum == signal.SIGINT else "SIGTERM"
            print_error(
                f"\ninterrupted ({what}): stopping the run and keeping finished samples; "
                "`tui-eval resume` finishes it (Ctrl+C again to quit at once)"
            )
            service.cancel()
            return


async def execute(
    service: SuiteRun, progress: Progress | None = None, *, signals: bool = True
) -> SuiteOutcome:
    """Run one suite to its end with a progress display, then apply the baseline policy;
    with `signals`, Ctrl+C and SIGTERM stop the run keeping its samples."""
    display = progress or Progress()
    service.on_event = display.on_event
    async with anyio.create_task_group() as group:
        if signals and _can_watch_signals():
            group.start_soon(_watch_interrupt, service)
        report = await service.run()
        group.cancel_scope.cancel()
    return _finish_suite(service, report)


def _can_watch_signals() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _finish_suite(service: SuiteRun, report: Report) -> SuiteOutcome:
    title = service.plan.suite.name
    kind = service.kind
    if isinstance(kind, ABRun):
        title = f"{title}: A = {kind.a}, B = {kind.b}"
    outcome = SuiteOutcome(suite=service.plan.suite, report=report, kind=kind, title=title)
    budget = service.plan.settings.max_cost
    if budget is not None and report.samples and not report.priced:
        outcome.notes.append(
            f"warning: max_cost ${budget:g} was not enforced: no sample had a price (give the "
            "suite a price= function, or use a model in the built-in price table)"
        )
    if service.journal_error is not None:
        outcome.journal_error = f"{service.journal_error}; the run stopped"
        print_error(
            f"error: {outcome.journal_error} (what was journaled resumes with `tui-eval resume`)"
        )
    outcome.notes.extend(service.quarantine_notes)
    compared = service.compare()
    if compared.status is BaselineStatus.COMPARED:
        outcome.diff = compared.diff
        outcome.baseline = compared.baseline
    elif compared.status is BaselineStatus.MISSING and not service.plan.request.save_baseline:
        outcome.baseline_missing = str(compared.path)
    elif compared.is_error:
        outcome.baseline_error = compared.message
        print_error(f"error: {compared.message}")
    if service.plan.request.save_baseline:
        outcome.notes.append(service.baseline_store.save(report, service.coverage).message)
    return outcome


def run_command(args: argparse.Namespace, request: RunRequest) -> int:
    """`tui-eval run --headless` (and `run --decide`, `ab`, `recheck`)."""
    try:
        fail_on = (
            parse_fail_on(args.fail_on)
            if getattr(args, "fail_on", None) is not None
            else RUN_DEFAULT
        )
        shard = Shard.parse(args.shard) if getattr(args, "shard", None) else None
    except ValueError as exc:
        print_error(f"error: {exc}")
        return exit_code_for(exc)
    rechecked: Report | None = None
    if isinstance(request.kind, RecheckRun):
        try:
            rechecked = Report.load(args.report)
        except ReportFileError as exc:
            print_error(f"error: {exc}")
            return exit_code_for(exc)
    paths = default_paths(args.paths)
    loaded = _load(paths, args.debug)
    if loaded is None:
        return EXIT_USAGE
    runnable = [s for s in loaded.suites if not s.skip]
    if getattr(args, "baseline", None) and len(runnable) > 1:
        print_error(
            "error: --baseline FILE needs exactly one suite; the suites found were "
            + ", ".join(s.name for s in runnable)
        )
        return EXIT_USAGE
    plans: list[Plan] = [(suite, request, None) for suite in loaded.suites]
    if rechecked is not None:
        parts = _recheck_plans(loaded.suites, request, rechecked, paths)
        if parts is None:
            return EXIT_USAGE
        plans = parts
    selected = None
    if shard is not None:
        selected = _selection(loaded.suites, request)
        plans = [(s, o, None) for s, o in _shard_plans(loaded.suites, request, shard, selected)]
    if getattr(args, "last_failed", False):
        plans = [(s, _last_failed_request(s, o), r) for s, o, r in plans]
    exports = exports_from_args(args)
    outcomes, failed = anyio.run(_run_suites, plans, exports)
    if not outcomes and not failed:
        return _nothing_ran(exports, loaded, shard, selected)
    exported = write_exports(
        exports,
        [o.report for o in outcomes],
        [o.diff for o in outcomes],
        [o.baseline for o in outcomes],
    )
    explicit = getattr(args, "fail_on", None) is not None
    unchecked = missing_baselines(outcomes, fail_on, explicit=explicit, shard=shard is not None)
    code = exit_code(outcomes, bool(loaded.errors) or failed or not exported, fail_on)
    reasons = [
        f"{one_line(o.suite.name, 60)}: {r}" for o in outcomes for r in outcome_failures(o, fail_on)
    ] + unchecked
    if unchecked and code == EXIT_OK:
        code = EXIT_FAILED
    if code == EXIT_FAILED and reasons and isinstance(request.kind, PlainRun):
        fails = ",".join(c.value for c in FailOn if c in fail_on)
        print(f"failing (--fail-on {fails}): {'; '.join(reasons)}")
    return code


def _nothing_ran(
    exports: Exports,
    loaded: LoadResult,
    shard: Shard | None,
    selected: list[tuple[str, str]] | None,
) -> int:
    """End a run that ran no case: write the files asked for, empty, and exit 5 (a filter
    that matches nothing must not pass a CI gate); an empty shard exits 0."""
    if shard is not None and selected:
        why = f"shard {shard} holds none of the {len(selected):,} selected cases"
    else:
        why = "every suite was skipped or selected no case"
    facts = (shard.index, shard.total) if shard is not None else None
    nothing = nothing_ran_report(loaded.suites, why, facts)
    exported = write_exports(exports, [nothing], [None], [None])
    if loaded.errors or not exported:
        return EXIT_USAGE
    if shard is not None and selected:
        print(f"{why}: its report is empty")
        return EXIT_OK
    print(f"nothing ran: {why}")
    return EXIT_NOTHING_RAN


Plan = tuple[Suite, RunRequest, "Report | None"]
"""A suite to run, its request, and (for a recheck) the saved report part it rechecks."""


def _last_failed_request(suite: Suite, request: RunRequest) -> RunRequest:
    """`--last-failed`: the request running only the cases that failed last time (else
    all), and say which."""
    if suite.skip:
        return request
    failed = last_failed(suite, RunHistory())
    name = one_line(suite.name, 200)
    if not failed:
        why = "no recorded run" if failed is None else "no failure in its last run"
        print(f"--last-failed: {name}: {why}; running every case")
        return request
    print(f"--last-failed: {name}: rerunning the {len(failed)} case(s) that failed last time")
    chosen = failed if request.cases is None else tuple(c for c in failed if c in request.cases)
    return request.but(cases=chosen)


def _recheck_plans(
    suites: list[Suite], request: RunRequest, report: Report, paths: list[str]
) -> list[Plan] | None:
    """Each suite with the part of `report` it rechecks (None: a usage error, printed)."""
    parts = suite_parts(report)
    plans: list[Plan] = []
    for name in parts:
        suite = next((s for s in suites if s.name == name), None)
        if suite is None and len(suites) == 1 and len(parts) == 1:
            suite = suites[0]
        if suite is None:
            found = ", ".join(s.name for s in suites) or "none"
            print_error(f"error: no suite named {name!r} in {' '.join(paths)} (found: {found})")
            return None
        plans.append((suite, request, recheck_part(report, suite.name, only_suite=True)))
    return plans


def _selection(suites: list[Suite], request: RunRequest) -> list[tuple[str, str]]:
    """Every (suite, case) the request selects from the suites that run: what shards share."""
    return [
        (suite.name, case.label)
        for suite in suites
        if not suite.skip
        for case in suite.select(filter=request.filter).cases
    ]


def _shard_plans(
    suites: list[Suite], request: RunRequest, shard: Shard, selected: list[tuple[str, str]]
) -> list[tuple[Suite, RunRequest]]:
    """Each suite with the request of this shard: its share of the `selected` cases."""
    shard_of = assign_shards(selected, shard.total)
    plans: list[tuple[Suite, RunRequest]] = []
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
                    request.but(cases=mine, shard=(shard.index, shard.total)),
                )
            )
        else:
            print(f"- {one_line(suite.name, 200)}: no case in shard {shard}\n")
    return plans


async def _run_suites(
    plans: list[Plan], exports: Exports | None = None, *, signals: bool = True
) -> tuple[list[SuiteOutcome], bool]:
    """Run every plan's suite; also whether a plan could not start (a usage error)."""
    history = RunHistory()
    invocation = uuid.uuid4().hex[:12]
    runtime = Runtime()  # the suites' runs pace themselves as one against each API
    planned: list[RunPlan] = []
    for suite, request, rechecked in plans:
        if suite.skip:
            print(f"- {one_line(suite.name, 200)}: {one_line(suite.skip, 200)}\n")
            continue
        try:  # nothing runs (or is journaled) unless every plan can start
            planned.append(plan_run(suite, request, rechecked=rechecked))
        except EmptySelection as exc:
            print(f"- {one_line(suite.name, 200)}: {exc}\n")
        except (PlanError, ExecutorError) as exc:
            print_error(f"error: {exc}")
            return [], True
    # Every suite's journal is opened first, so a run killed in its first suite resumes
    # the ones it never reached too.
    services = [
        SuiteRun.start(
            plan, history=history, invocation=invocation, exports=exports, runtime=runtime
        )
        for plan in planned
    ]
    return await _execute_all(services, signals=signals), False


async def _execute_all(
    services: list[SuiteRun], *, resuming: bool = False, signals: bool = True
) -> list[SuiteOutcome]:
    """Run the services one after another; the rest stay resumable once one stops."""
    outcomes: list[SuiteOutcome] = []
    for position, service in enumerate(services):
        if resuming:
            print(
                f"resuming {service.run_id}: {service.resumed_samples:,} of "
                f"{service.plan.suite.total_samples:,} samples already done"
            )
        outcome = await execute(service, signals=signals)
        print_outcome(outcome)
        outcomes.append(outcome)
        if outcome.stopped:
            left = services[position + 1 :]
            for rest in left:
                rest.close()  # not started: its journal stays resumable
            if left:
                names = ", ".join(one_line(s.plan.suite.name, 60) for s in left)
                print(f"not run: {names}; `tui-eval resume` runs them\n")
            break
    if outcomes and all(isinstance(o.kind, RecheckRun) for o in outcomes):
        print_recheck(outcomes)  # their merged summary, at the end
    return outcomes


# -- watch ------------------------------------------------------------------------------------
def watch_command(args: argparse.Namespace, request: RunRequest) -> int:
    """`tui-eval run --headless --watch PATH`: run every suite, then rerun whichever suite a
    save touches, failing cases first, until Ctrl+C; exit as `run` would for the latest runs."""
    loaded = _load(default_paths(args.paths), args.debug)
    if loaded is None:
        return EXIT_USAGE
    latest: dict[str, SuiteOutcome] = {}
    try:
        failed = anyio.run(_watch, SuiteSet(loaded=loaded), request, latest)
    except KeyboardInterrupt:  # Ctrl+C between runs: the watch ends, the runs stand
        print("\nstopped watching", flush=True)
        failed = False
    return exit_code(list(latest.values()), bool(loaded.errors) or failed)


async def _watch(suites: SuiteSet, request: RunRequest, latest: dict[str, SuiteOutcome]) -> bool:
    """Run every suite, then each suite an edit reloads; whether a run could not start."""
    outcomes, failed = await _run_suites([(s, request, None) for s in suites.loaded.suites])
    latest.update((o.suite.name, o) for o in outcomes)
    folders = suites.watched_folders()
    if failed or not folders or any(o.stopped for o in outcomes):
        return failed
    shown = ", ".join(str(f) for f in folders)
    ready = anyio.Event()

    async def announce() -> None:  # once a save would be seen, not before
        await ready.wait()
        print(f"watching {shown}: saving a suite's files reruns it (Ctrl+C stops)", flush=True)

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        if _can_watch_signals():  # one listener for the whole watch, its reruns included
            group.start_soon(_stop_watching_on_signal, group.cancel_scope)
        async for changed in file_changes(folders, stop=anyio.Event(), ready=ready):
            if await _rerun_edited(suites, changed, request, latest):
                break
        group.cancel_scope.cancel()
    return False


async def _stop_watching_on_signal(scope: anyio.CancelScope) -> None:
    """Ctrl+C or SIGTERM ends the watch: a rerun under way stops (its journal resumable)."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for _ in received:
            print("\nstopped watching", flush=True)
            scope.cancel()
            return


async def _rerun_edited(
    suites: SuiteSet, changed: set[Path], request: RunRequest, latest: dict[str, SuiteOutcome]
) -> bool:
    """Rerun the suites `changed` touches, failing cases first; whether the watch should end."""
    result = suites.reload(changed)
    for name in sorted(result.removed):
        print(f"{one_line(name, 200)}: its file is gone; no longer watched", flush=True)
        latest.pop(name, None)
    for error in result.errors:
        kept = error.path in suites.edit_errors
        print_error(error.message + (" (the previous version stays in use)" if kept else ""))
    for name in sorted(result.names):
        suite = suites.suite(name)
        if suite is None:
            continue
        print(f"{one_line(name, 200)}: reloaded after an edit", flush=True)
        before = latest.get(name)
        failing = {c.name for c in before.report.cases if not c.passed} if before else set()
        ordered = replace(suite, cases=sorted(suite.cases, key=lambda c: c.label not in failing))
        rerun, _ = await _run_suites([(ordered, request, None)], signals=False)
        latest.update((o.suite.name, o) for o in rerun)
        suites.reloaded.discard(name)
        sys.stdout.flush()
        if any(o.stopped for o in rerun):  # Ctrl+C during a run ends the watch
            return True
    return False


# -- resume ---------------------------------------------------------------------------------
def resume_command(args: argparse.Namespace | None = None) -> int:
    """`tui-eval resume`: finish the interrupted runs of the last invocation."""
    force = bool(getattr(args, "force", False))
    history = RunHistory()
    try:
        records = history.interrupted()
    except JournalFileError as exc:
        print_error(f"error: {exc}")
        return exit_code_for(exc)
    if not records:
        print("nothing to resume: no interrupted run in this project's history")
        return EXIT_NOTHING_TO_RESUME

    async def resume_all() -> tuple[list[SuiteOutcome], bool]:
        failed = False
        # Every run of the invocation is taken (locked) before any runs, so a second
        # resume started meanwhile finds them all taken instead of running the later ones.
        services: list[SuiteRun] = []
        runtime = Runtime()
        for record in records:
            try:
                services.append(
                    SuiteRun.resume(record, history=history, force=force, runtime=runtime)
                )
            except (ResumeError, JournalFileError) as exc:
                print_error(f"error: {exc}")
                failed = True
        return await _execute_all(services, resuming=True), failed

    outcomes, failed = anyio.run(resume_all)
    exported = _write_invocation_exports(history, records, outcomes)
    return exit_code(outcomes, failed or not exported)


def _write_invocation_exports(
    history: RunHistory, resumed: list[RunRecord], outcomes: list[SuiteOutcome]
) -> bool:
    """Write the files the resumed invocation was started with, over every suite it ran
    (finished ones from their saved reports); False when one could not be written."""
    exports = resumed[0].exports
    if not exports.asked:
        return True
    by_run = {o.report.metadata.get("run_id"): o for o in outcomes}
    reports: list[Report] = []
    diffs: list[Diff | None] = []
    baselines: list[Report | None] = []
    for record in history.invocation(resumed[0].invocation):
        outcome = by_run.get(record.run_id)
        if outcome is not None:
            reports.append(outcome.report)
            diffs.append(outcome.diff)
            baselines.append(outcome.baseline)
            continue
        try:
            reports.append(record.load_report())
        except (ReportFileError, JournalFileError, OSError) as exc:
            print_error(f"error: the report of run {record.run_id} cannot be read: {exc}")
            return False
        diffs.append(None)
        baselines.append(None)
    return write_exports(exports, reports, diffs, baselines)

"""What a headless run says once its suites have run: each suite's outcome, the files
exported, and the exit code the `--fail-on` gate gives."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.cells import cell_len

from tui_eval.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tui_eval.report.diff import UNCOMPARED, Diff
from tui_eval.report.gate import RUN_DEFAULT, FailOn, gate_failures, not_gating
from tui_eval.report.left_out import left_out_note
from tui_eval.report.quarantine import quarantined
from tui_eval.report.report import Report, render_summary
from tui_eval.service.request import ABRun, DecideRun, Exports, PlainRun, RecheckRun, RunKind
from tui_eval.service.run_plan import shown_path
from tui_eval.suites import Suite
from tui_eval.util.text import counted, one_line, pad_cells


def print_error(message: str) -> None:
    """Print an error or a note for the user on stderr (stdout holds the results)."""
    print(message, file=sys.stderr, flush=True)


@dataclass(slots=True, kw_only=True)
class SuiteOutcome:
    """The result of running one suite from the CLI."""

    suite: Suite
    report: Report
    kind: RunKind = field(default_factory=PlainRun)
    title: str = ""
    diff: Diff | None = None
    baseline_error: str | None = None
    baseline_missing: str | None = None
    """The baseline file the run had none of (a new suite), when it had none."""
    journal_error: str | None = None
    notes: list[str] = field(default_factory=list)
    baseline: Report | None = None
    """The baseline report compared with (failure modes say what is new since it)."""

    @property
    def stopped(self) -> bool:
        """Whether the run ended before its last sample (interrupted, or its journal failed)."""
        return self.report.cancelled or self.journal_error is not None


SUMMARY_PASSING_LIMIT = 20


def print_outcome(outcome: SuiteOutcome) -> None:
    """Print one suite's outcome as it ends: its summary (or verdicts), the cases that do
    not gate, notes, and whether it stopped early."""
    if isinstance(outcome.kind, DecideRun | ABRun) and outcome.diff is not None:
        print_decisions(outcome.title or outcome.suite.name, outcome.diff)
        left_out = outcome.report.samples_left_out
        if left_out:  # the verdicts' counts say where; this says how many in all
            print(f"{left_out_note(left_out)} (not in the tests; --count-user-faults counts them)")
    elif not isinstance(outcome.kind, RecheckRun):  # a recheck prints its merged summary at the end
        where = f" ({outcome.suite.path})" if outcome.suite.path else ""
        print(f"── {one_line(outcome.suite.name, 200)}{where}")
        print(render_summary(outcome.report, max_passing=SUMMARY_PASSING_LIMIT))
        if outcome.diff is not None:
            print(str(outcome.diff))
    for name, reason in quarantined(outcome.report).items():
        case = next((c for c in outcome.report.cases if c.name == name), None)
        verdict = "passed" if case is not None and case.passed else "failed"
        print(
            f"quarantined (does not gate): {one_line(name, 120)} {verdict} — {one_line(reason, 160)}"
        )
    if not isinstance(outcome.kind, RecheckRun):
        for line in not_gating(outcome.report):
            print(line)
    for note in outcome.notes:
        print(note)
    if outcome.stopped:
        finished = sum(len(c.samples) for c in outcome.report.cases)
        why = f"stopped ({outcome.report.stopped})" if outcome.report.stopped else "cancelled"
        kept = counted(finished, "finished sample")
        print(f"run {why}: kept {kept}; `tui-eval resume` finishes it")
    print()


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
    """Why one suite's outcome fails the gate (a decide or A/B run: only on a case
    *decided* a regression)."""
    if isinstance(outcome.kind, DecideRun | ABRun):
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
    names = [c.name for c in diff.changes] + diff.undecided
    width = min(max((cell_len(one_line(n, 60)) for n in names), default=0), 60)
    for change in diff.changes:
        mark = {"regression": "✗", "no regression": "✓"}.get(change.label, "?")
        hint = f"  ({change.hint})" if change.hint and not change.decided else ""
        print(
            f"  {mark} {pad_cells(one_line(change.name, 60), width)}  {change.label:<30}  "
            f"{change.counts()}{hint}"
        )
    for name in diff.undecided:
        print(f"  ? {pad_cells(one_line(name, 60), width)}  {'undecided':<30}  {UNCOMPARED}")


BASELINE_CONDITIONS = frozenset({FailOn.REGRESSIONS, FailOn.REMOVED, FailOn.DEFINITION_CHANGED})


def missing_baselines(
    outcomes: list[SuiteOutcome], fail_on: frozenset[FailOn], *, explicit: bool, shard: bool
) -> list[str]:
    """Say which suites had no baseline to gate on; the gate's reason when it fails closed:
    `--fail-on` asked for a baseline condition and no suite (not a shard) has one."""
    needed = fail_on & BASELINE_CONDITIONS
    missing = [o for o in outcomes if o.baseline_missing and isinstance(o.kind, PlainRun)]
    if not needed or not missing:
        return []
    what = ", ".join(sorted(c.value for c in needed))
    for outcome in missing:
        print_error(
            f"note: no baseline for suite {outcome.suite.name!r} at {outcome.baseline_missing}: "
            f"its cases are new, not checked for {what} (save one with --save-baseline)"
        )
    if explicit and not shard and len(missing) == len(outcomes):
        return [f"no baseline to check {what} against ({len(missing)} suite(s) without one)"]
    return []


def print_recheck(outcomes: list[SuiteOutcome]) -> None:
    """The rechecked report and how its verdicts moved, over every suite rechecked."""
    from tui_eval.report.exporters import merge_reports

    rechecked = merge_reports([o.report for o in outcomes])
    print(str(rechecked))
    diff = Diff()
    for outcome in outcomes:
        if outcome.diff is not None:
            diff.extend(outcome.diff)
    print(str(diff))


def write_exports(
    exports: Exports,
    reports: list[Report],
    diffs: list[Diff | None],
    baselines: list[Report | None],
) -> bool:
    """Write the files asked for, of `reports` (with their diffs and baselines), and the
    Markdown summary to `$GITHUB_STEP_SUMMARY` when set; True if all were written."""
    from tui_eval.report.exporters import (
        junit_xml,
        markdown_summary,
        merge_reports,
        samples_csv,
        samples_jsonl,
        write_bytes,
    )

    if not reports:
        return True

    def markdown() -> bytes:
        return markdown_summary(reports, diffs, baselines).encode()

    files: list[tuple[str | None, str, Callable[[], bytes]]] = [
        (exports.json_report, "report", lambda: merge_reports(reports).to_json()),
        (exports.junit, "JUnit XML", lambda: junit_xml(reports, diffs)),
        (exports.markdown, "Markdown summary", markdown),
        (exports.csv, "per-sample CSV", lambda: samples_csv(reports)),
        (exports.samples_jsonl, "per-sample JSONL", lambda: samples_jsonl(reports)),
    ]
    written = True
    for path, what, render in files:
        if not path:
            continue
        shown = shown_path(path)
        try:
            write_bytes(path, render())
        except OSError as exc:
            print_error(f"error: {what} not written to {shown}: {exc.strerror or exc}")
            written = False
        else:
            print_error(f"{what} written to {shown}")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "ab") as handle:
                handle.write(markdown() + b"\n")
        except OSError as exc:
            print_error(f"error: job summary not written to {step_summary}: {exc.strerror or exc}")
    return written


def exports_from_args(args: argparse.Namespace) -> Exports:
    """The report files a command's flags ask for."""
    flags = {"json_report": "json"}  # the other files' flags are named as their fields
    return Exports(**{k: getattr(args, flags.get(k, k), None) for k in Exports.model_fields})


def nothing_ran_report(
    suites: list[Suite], why: str, shard: tuple[int, int] | None = None
) -> Report:
    """The empty report of a run that ran no case, recording its shard for `tui-eval merge`."""
    metadata: dict[str, object] = {"suites": [], "suite_paths": {}, "nothing_ran": why}
    if shard is not None:
        metadata.update(shards=[list(shard)], planned_cases={})
    return Report("+".join(s.name for s in suites) or "eval", [], metadata=metadata)

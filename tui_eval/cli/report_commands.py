"""The commands that work on saved reports: compare, merge, and the history list."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tui_eval.cli.exit_codes import (
    EXIT_FAILED,
    EXIT_NOTHING_RAN,
    EXIT_OK,
    EXIT_USAGE,
    exit_code_for,
)
from tui_eval.cli.outcomes import SUMMARY_PASSING_LIMIT
from tui_eval.cli.outcomes import print_error as _err
from tui_eval.report.diff import Diff
from tui_eval.report.gate import COMPARE_DEFAULT, FailOn, gate_failures, parse_fail_on
from tui_eval.report.report import Report, ReportFileError, render_summary
from tui_eval.service.store import RunHistory
from tui_eval.util.text import counted, one_line


def compare_command(args: argparse.Namespace) -> int:
    """`tui-eval compare CURRENT [BASELINE] [--baseline-dir DIR] [--fail-on ...]`."""
    try:
        fail_on = parse_fail_on(args.fail_on) if args.fail_on is not None else COMPARE_DEFAULT
        current = Report.load(args.current)
        if args.baseline:
            pairs = [(args.baseline, Report.load(args.baseline))]
        else:
            pairs = _suite_baselines(current, args.baseline_dir)
        diff = Diff()
        for _, baseline in pairs:
            diff.extend(current.compare(baseline, count_user_faults=args.count_user_faults))
    except (ReportFileError, ValueError) as exc:
        _err(f"error: {exc}")
        return exit_code_for(exc)
    print(f"{args.current} against {', '.join(path for path, _ in pairs) or 'no baseline'}")
    note = _user_faults_note(current, [baseline for _, baseline in pairs], args.count_user_faults)
    if note:
        print(note)
    print(str(diff))
    reasons = gate_failures(fail_on, current, diff)
    if reasons:
        print(
            f"failing (--fail-on {','.join(c.value for c in FailOn if c in fail_on)}): {'; '.join(reasons)}"
        )
    return EXIT_FAILED if reasons else EXIT_OK


def _user_faults_note(current: Report, baselines: list[Report], given: bool | None) -> str:
    """What the comparison did with the samples the user simulator failed ("" if none)."""
    from tui_eval.report.left_out import (
        counted_note,
        counts_user_faults,
        is_left_out,
        left_out_note,
    )

    faulted = sum(
        1
        for report in (current, *baselines)
        for case in report.cases
        for sample in case.samples
        if is_left_out(sample, count_user_faults=False)
    )
    if not faulted:
        return ""
    counting = counts_user_faults(current) if given is None else given
    where = "in CURRENT and its baseline" + ("s" if len(baselines) > 1 else "")
    if counting:
        return f"{counted_note(faulted)}, {where}"
    return f"{left_out_note(faulted)}, {where} (--count-user-faults counts them)"


def _suite_baselines(current: Report, folder: str | None) -> list[tuple[str, Report]]:
    """Each suite's baseline for a report: `folder/<suite>.json`, or the suites' own; a new
    suite without one is left out with a note.

    Raises:
        ValueError: no suite has a baseline to compare with (or a suite has no path).
        ReportFileError: a baseline cannot be read.
    """
    from tui_eval.report.diff import case_suite
    from tui_eval.suites.suite import holds_report_of, suite_file

    suites = list(dict.fromkeys(case_suite(current, case) for case in current.cases))
    paths = current.metadata.get("suite_paths") or {}
    if not paths and current.metadata.get("suite_path"):
        paths = {current.name: current.metadata["suite_path"]}
    pairs = []
    missing: list[tuple[str, Path]] = []
    for suite in suites:
        if folder:
            where = Path(folder)
        elif paths.get(suite):
            where = Path(paths[suite]).parent / "__baselines__"
        else:
            raise ValueError(
                f"no baseline for suite {suite!r}: give BASELINE or --baseline-dir DIR"
            )
        # A comparison only reads: a file an earlier version named is read where it is.
        path = suite_file(where, suite, ".json", owned=holds_report_of(suite))
        if not path.exists():
            missing.append((suite, path))
            continue
        pairs.append((str(path), Report.load(path)))
    if missing and not pairs:
        suite, path = missing[0]
        raise ValueError(f"no baseline for suite {suite!r} at {path}")
    for suite, path in missing:  # a new suite: nothing to regress from, said out loud
        count = sum(1 for case in current.cases if case_suite(current, case) == suite)
        _err(
            f"note: no baseline for suite {suite!r} at {path}: its {count} case(s) are new, not compared"
        )
    return pairs


def merge_command(args: argparse.Namespace) -> int:
    """`tui-eval merge REPORT... -o OUT`: one report from the shards of a run."""
    from tui_eval.report.exporters import (
        MergeError,
        merge_reports,
        missing_from,
        suite_parts,
        write_bytes,
    )

    try:
        reports = [Report.load(path) for path in args.reports]
        merged = merge_reports(reports)
    except (ReportFileError, MergeError) as exc:
        _err(f"error: {exc}")
        return exit_code_for(exc)
    missing_shards, missing_cases = missing_from(merged)
    if missing_shards or missing_cases:
        if missing_shards:
            _err(f"error: missing shard(s) {', '.join(missing_shards)}")
        if missing_cases:
            shown = ", ".join(missing_cases[:10]) + (" …" if len(missing_cases) > 10 else "")
            _err(f"error: {len(missing_cases)} planned case(s) are in no report: {shown}")
        return EXIT_USAGE
    write_bytes(args.output, merged.to_json())
    parts = suite_parts(merged)
    for suite, part in parts.items():
        print(f"── {one_line(suite, 200)}")
        print(render_summary(part, max_passing=SUMMARY_PASSING_LIMIT))
        print()
    suites = ", ".join(one_line(suite, 60) for suite in parts)
    _err(
        f"merged {len(reports)} report(s) of suite(s) {suites} into {args.output}"
        if parts
        else f"merged {len(reports)} report(s) into {args.output}"
    )
    if not parts:
        print("nothing ran: the reports hold no case")
        return EXIT_NOTHING_RAN
    return EXIT_OK


def history_command(args: argparse.Namespace) -> int:
    """`tui-eval history`: the project's past runs, newest first."""
    history = RunHistory()
    records = history.runs()[: args.limit]
    if not records:
        print(f"no runs recorded yet for {history.project_root}")
        return EXIT_OK
    print(f"runs of {history.project_root} (newest first)")
    for record in records:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.started_at))
        try:
            summary = record.summary()
            left_out = (
                f", {summary.samples_left_out:,} left out" if summary.samples_left_out else ""
            )
            counts = (
                f"{summary.cases_text()} cases · "
                f"{counted(summary.samples, 'sample')}{left_out} · "
                f"{counted(summary.tokens, 'token')}"
            )
        except (ReportFileError, OSError, ValueError) as exc:
            counts = f"unreadable: {exc}"
        print(
            f"  {when}  {record.status:<11}  {one_line(record.suite, 24):<24}  {counts}  "
            f"{record.run_id}"
        )
    return EXIT_OK

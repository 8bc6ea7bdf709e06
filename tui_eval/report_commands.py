"""The commands that work on saved reports: recheck, compare, merge, and the history list."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import anyio
from rich.cells import cell_len

from tui_eval.diff import Diff
from tui_eval.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tui_eval.gate import COMPARE_DEFAULT, FailOn, gate_failures, parse_fail_on
from tui_eval.headless import SUMMARY_PASSING_LIMIT, _err, _find_suite, report_load_errors
from tui_eval.report import CaseResult, Report, ReportFileError, render_summary
from tui_eval.store import RunHistory
from tui_eval.suites import Suite, load_suites
from tui_eval.text import one_line, pad_cells


def recheck_command(args: argparse.Namespace) -> int:
    """`tui-eval recheck REPORT PATH...`: the suites' current checks on saved outputs.

    A report of several suites (`run suites/ --json`) is rechecked suite by suite.
    """
    from tui_eval.diff import case_name, case_suite
    from tui_eval.exporters import merge_reports
    from tui_eval.runner import recheck

    try:
        report = Report.load(args.report)
    except ReportFileError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    loaded = load_suites(args.paths)
    report_load_errors(loaded, args.debug)
    parts: dict[str, list[CaseResult]] = {}
    for case in report.cases:
        parts.setdefault(case_suite(report, case), []).append(
            replace(case, name=case_name(report, case))
        )
    jobs: list[tuple[Suite, Report]] = []
    for suite_name, cases in parts.items():
        suite = _find_suite(loaded.suites, suite_name) or (
            loaded.suites[0] if len(loaded.suites) == 1 and len(parts) == 1 else None
        )
        if suite is None:
            names = ", ".join(s.name for s in loaded.suites) or "none"
            _err(f"error: no suite named {suite_name!r} in {' '.join(args.paths)} (found: {names})")
            return EXIT_USAGE
        saved = {case.name for case in cases}
        if not any(case.label in saved for case in suite.cases):
            _err(
                f"error: none of the {len(saved):,} cases of {args.report} is in suite "
                f"{suite.name!r} ({suite.path}); nothing to recheck"
            )
            return EXIT_USAGE
        jobs.append((suite, replace(report, name=suite.name, cases=cases)))

    async def recheck_all() -> list[Report]:
        return [
            await recheck(part, suite.cases, concurrency=suite.concurrency, price=suite.price)
            for suite, part in jobs
        ]

    rechecked_parts = anyio.run(recheck_all)
    rechecked = merge_reports(rechecked_parts)
    original = merge_reports([part for _, part in jobs])
    print(str(rechecked))
    diff = rechecked.compare(original)
    print(str(diff))
    if args.json:
        rechecked.save(args.json)
        _err(f"report written to {args.json}")
    if loaded.errors:
        return EXIT_USAGE
    return EXIT_OK if rechecked.passed and diff.ok else EXIT_FAILED


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
            part = current.compare(baseline)
            for name in (
                "regressions",
                "improvements",
                "added",
                "removed",
                "unchanged",
                "definition_changed",
            ):
                getattr(diff, name).extend(getattr(part, name))
    except (ReportFileError, ValueError) as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    print(f"{args.current} against {', '.join(path for path, _ in pairs) or 'no baseline'}")
    print(str(diff))
    reasons = gate_failures(fail_on, current, diff)
    if reasons:
        print(
            f"failing (--fail-on {','.join(c.value for c in FailOn if c in fail_on)}): {'; '.join(reasons)}"
        )
    return EXIT_FAILED if reasons else EXIT_OK


def _suite_baselines(current: Report, folder: str | None) -> list[tuple[str, Report]]:
    """Each suite's baseline for a (multi-suite) report: `folder/<suite>.json`, or the
    suites' own `__baselines__/` beside their files.

    Raises:
        ValueError: a suite has no baseline to compare with.
        ReportFileError: a baseline cannot be read.
    """
    from tui_eval.diff import case_suite
    from tui_eval.suites.suite import baseline_file_stem

    suites = list(dict.fromkeys(case_suite(current, case) for case in current.cases))
    paths = current.metadata.get("suite_paths") or {}
    if not paths and current.metadata.get("suite_path"):
        paths = {current.name: current.metadata["suite_path"]}
    pairs = []
    for suite in suites:
        file = f"{baseline_file_stem(suite)}.json"
        if folder:
            path = Path(folder) / file
        elif paths.get(suite):
            path = Path(paths[suite]).parent / "__baselines__" / file
        else:
            raise ValueError(
                f"no baseline for suite {suite!r}: give BASELINE or --baseline-dir DIR"
            )
        if not path.exists():
            raise ValueError(f"no baseline for suite {suite!r} at {path}")
        pairs.append((str(path), Report.load(path)))
    return pairs


def merge_command(args: argparse.Namespace) -> int:
    """`tui-eval merge REPORT... -o OUT`: one report from the shards of a run."""
    from tui_eval.exporters import MergeError, merge_reports, missing_from, write_bytes

    try:
        reports = [Report.load(path) for path in args.reports]
        merged = merge_reports(reports)
    except (ReportFileError, MergeError) as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    missing_shards, missing_cases = missing_from(merged)
    if missing_shards or missing_cases:
        if missing_shards:
            _err(f"error: missing shard(s) {', '.join(missing_shards)}")
        if missing_cases:
            shown = ", ".join(missing_cases[:10]) + (" …" if len(missing_cases) > 10 else "")
            _err(f"error: {len(missing_cases)} planned case(s) are in no report: {shown}")
        return EXIT_USAGE
    write_bytes(args.output, merged.to_json())
    print(render_summary(merged, max_passing=SUMMARY_PASSING_LIMIT))
    _err(f"merged {len(reports)} report(s) into {args.output}")
    return EXIT_OK


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
        print(
            f"  {when}  {record.status:<11}  {one_line(record.suite, 24):<24}  {counts}  "
            f"{record.run_id}"
        )
    return EXIT_OK


def _print_decisions(title: str, diff: Diff) -> bool:
    """Print each compared case's verdict; True if any case regressed."""
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
    print()
    return any(c.label == "regression" for c in diff.changes)


def decide_command(args: argparse.Namespace) -> int:
    """`tui-eval run PATH --decide`: sample each case until its comparison is decided."""
    from tui_eval.sequential import decide

    loaded = load_suites(args.paths or ["suites"])
    report_load_errors(loaded, args.debug)
    jobs: list[tuple[Suite, Report]] = []
    for suite in loaded.suites:
        if suite.skip:
            continue
        path = Path(args.baseline) if args.baseline else suite.baseline_path
        if not path.exists():
            _err(f"error: --decide compares with a baseline; {suite.name!r} has none at {path}")
            return EXIT_USAGE
        try:
            jobs.append((suite.select(filter=args.filter), Report.load(path)))
        except ReportFileError as exc:
            _err(f"error: {exc}")
            return EXIT_USAGE

    async def run_all() -> list[tuple[Suite, Diff]]:
        return [
            (
                suite,
                await decide(
                    suite.agent,
                    suite.cases,
                    baseline,
                    max_samples=args.max_samples,
                    concurrency=args.concurrency or suite.concurrency,
                    price=suite.price,
                    max_cost=args.max_cost,
                ),
            )
            for suite, baseline in jobs
        ]

    regressed = False
    for suite, diff in anyio.run(run_all):
        regressed |= _print_decisions(suite.name, diff)
    if loaded.errors:
        return EXIT_USAGE
    return EXIT_FAILED if regressed else EXIT_OK


def ab_command(args: argparse.Namespace) -> int:
    """`tui-eval ab PATH --a SPEC --b SPEC`: two agents on the same cases until decided."""
    from tui_eval.sequential import compare_agents

    loaded = load_suites(args.paths or ["suites"])
    report_load_errors(loaded, args.debug)
    jobs = []
    for suite in loaded.suites:
        if suite.skip:
            continue
        try:
            jobs.append((suite, _agent_for(suite, args.a), _agent_for(suite, args.b)))
        except (ValueError, ImportError) as exc:
            _err(f"error: {exc}")
            return EXIT_USAGE

    async def run_all() -> list[tuple[Suite, Diff]]:
        return [
            (
                suite,
                await compare_agents(
                    agent_a,
                    agent_b,
                    suite.cases,
                    max_samples=args.max_samples,
                    concurrency=suite.concurrency,
                    price=suite.price,
                    max_cost=args.max_cost,
                ),
            )
            for suite, agent_a, agent_b in jobs
        ]

    regressed = False
    for suite, diff in anyio.run(run_all):
        regressed |= _print_decisions(f"{suite.name}: A = {args.a}, B = {args.b}", diff)
    if loaded.errors:
        return EXIT_USAGE
    return EXIT_FAILED if regressed else EXIT_OK


def _agent_for(suite: Suite, spec: str) -> object:
    """The suite's agent with model `spec` (`openai:gpt-4o-mini`), or the agent that
    `module:attribute` names (importable from the suite's folder).

    Raises:
        ValueError: the spec names neither.
    """
    from tui_eval.agents.agent import Agent
    from tui_eval.agents.providers import known_prefixes
    from tui_eval.suites.declarative import SuiteFileError, import_reference

    prefix, sep, _ = spec.partition(":")
    if not sep:
        raise ValueError(f"{spec!r} is neither a model spec (openai:MODEL) nor module:attribute")
    if prefix in known_prefixes():
        if not isinstance(suite.agent, Agent):
            raise ValueError(
                f"suite {suite.name!r}: a model spec needs an Agent to clone; give "
                "module:attribute agents instead"
            )
        return suite.agent.clone(model=spec)
    try:
        return import_reference(spec, suite.path or Path("."))
    except SuiteFileError as exc:
        raise ValueError(str(exc)) from None

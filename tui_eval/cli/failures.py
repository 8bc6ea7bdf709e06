"""`tui-eval failures REPORT [--against BASELINE]`: a run's failures grouped into modes, and
`tui-eval quarantine CASE`: a flaky case that runs and shows but does not gate."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tui_eval.cli.exit_codes import EXIT_OK, EXIT_USAGE, exit_code_for


def add_parsers(sub: Any) -> None:
    """The `failures` and `quarantine` subcommands (nothing heavy imported: `--help` is fast)."""
    failures = sub.add_parser(
        "failures",
        help="a run's failed samples grouped into failure modes (new ones first)",
        description="Group the failed samples of REPORT into failure modes: one mode per "
        "failing check and reason (numbers, quoted output, ids and paths masked), error type "
        "or timeout, and where a sample leaves its case's passing samples. With --against, "
        "each mode is new, grown, shrunk, gone or same since BASELINE; new modes come first.",
    )
    failures.add_argument("report", metavar="REPORT", help="a report file (--json, or a run's)")
    failures.add_argument("--against", metavar="BASELINE", help="the report to compare with")
    shown = failures.add_mutually_exclusive_group()
    shown.add_argument("--json", metavar="FILE", help="write the modes as JSON")
    shown.add_argument("--markdown", action="store_true", help="print a Markdown table")

    quarantine = sub.add_parser(
        "quarantine",
        help="quarantine a flaky case: it runs and shows, but does not gate",
        description="Record a quarantine for CASE in the suite's __baselines__/quarantine.json "
        "(commit it). A quarantined case still runs and is shown, but does not fail the run: "
        "JUnit marks it skipped with the reason. It gates again after --until, or after N "
        "passing runs in a row (--release-after N); --release lifts it now.",
    )
    quarantine.add_argument("case", metavar="CASE")
    quarantine.add_argument("paths", nargs="*", metavar="PATH", help="suites (default ./suites)")
    quarantine.add_argument("--suite", metavar="NAME", help="the suite, when CASE is in several")
    quarantine.add_argument("--reason", help="why (shown in JUnit and the summaries)")
    quarantine.add_argument("--until", metavar="YYYY-MM-DD", help="the last day it is quarantined")
    quarantine.add_argument(
        "--release-after", type=int, metavar="N", help="lift it after N passing runs in a row"
    )
    quarantine.add_argument("--release", action="store_true", help="lift the quarantine now")


def failures_command(args: argparse.Namespace) -> int:
    """Print (or write) the failure modes of a report; exit 0, or 2 on an unreadable file."""
    from pathlib import Path

    from tui_eval.report.failure_modes import failure_modes, left_out, markdown
    from tui_eval.report.report import Report, ReportFileError
    from tui_eval.util.atomic import atomic_write_bytes

    try:
        report = Report.load(args.report)
        baseline = Report.load(args.against) if args.against else None
    except ReportFileError as exc:
        print(f"tui-eval: error: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    modes = failure_modes(report, baseline)
    if args.json:
        payload = {
            "report": args.report,
            "against": args.against,
            "samples": len(report.samples),
            "failed": sum(m.count for m in modes),
            "left_out": left_out(modes),
            "modes": [m.to_dict() for m in modes],
        }
        text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
        atomic_write_bytes(Path(args.json), text.encode())
        print(f"wrote {args.json}: {len(modes)} failure mode(s)")
        return EXIT_OK
    if args.markdown:
        print(markdown(modes), end="")
        return EXIT_OK
    print(render(modes, report_name=args.report, against=args.against))
    return EXIT_OK


def render(modes: list[Any], *, report_name: str, against: str | None) -> str:
    """The modes for a terminal: one line each, new first, with an example reason."""
    from tui_eval.report.failure_modes import left_out
    from tui_eval.report.left_out import left_out_note
    from tui_eval.util.text import one_line

    failed = sum(m.count for m in modes)
    head = f"{one_line(report_name, 200)}: {failed:,} failed sample(s) in {len(modes)} mode(s)"
    apart = left_out(modes)
    if apart:
        head += f"; {left_out_note(apart)} (modes marked 'left out', not in the pass rates)"
    if against:
        head += f", against {one_line(against, 200)}"
    lines = [head]
    for mode in modes:
        cases = mode.cases or mode.baseline_cases
        change = f"{mode.change:<6} " if against else ""
        was = f" (was {mode.baseline_samples})" if against else ""
        lines.append(
            f"  {change}{mode.count:>5}{was} sample(s), {len(cases)} case(s): "
            f"{one_line(str(mode.signature), 160)}"
        )
        shown = ", ".join(one_line(c, 40) for c in cases[:5]) + (" …" if len(cases) > 5 else "")
        lines.append(f"      cases: {shown}")
        lines.append(f"      e.g. {one_line(mode.example, 160)}")
    return "\n".join(lines)


def quarantine_command(args: argparse.Namespace) -> int:
    """Quarantine (or `--release`) a case of a suite; exit 0, or 2 on a usage error."""
    import datetime as dt

    from tui_eval.cli.headless import default_paths
    from tui_eval.report import quarantine
    from tui_eval.suites import load_suites
    from tui_eval.util.text import one_line

    def usage(message: str) -> int:
        print(f"tui-eval quarantine: error: {message}", file=sys.stderr)
        return EXIT_USAGE

    paths = default_paths(args.paths)
    loaded = load_suites(paths)
    suites = [s for s in loaded.suites if args.suite is None or s.name == args.suite]
    owners = [s for s in suites if any(c.label == args.case for c in s.cases)]
    if not owners:
        where = f"suite {args.suite!r}" if args.suite else " ".join(paths)
        return usage(f"no case named {one_line(args.case, 120)!r} in {where}")
    if len(owners) > 1:
        names = ", ".join(repr(s.name) for s in owners)
        return usage(f"{args.case!r} is a case of several suites ({names}): give --suite NAME")
    suite = owners[0]
    path = quarantine.quarantine_path(suite.baseline_path)
    try:
        if args.release:
            if not quarantine.release(path, suite.name, args.case):
                return usage(f"{args.case!r} of {suite.name!r} is not quarantined ({path})")
            print(f"released {args.case!r} of {suite.name!r}: it gates again ({path})")
            return EXIT_OK
        if not args.reason or not args.reason.strip():
            return usage("--reason TEXT is required: it is shown in JUnit and the summaries")
        today = dt.date.today()
        until = None
        if args.until is not None:
            try:
                until = dt.date.fromisoformat(args.until)
            except ValueError:
                return usage(f"--until {args.until!r} is not a date (YYYY-MM-DD)")
            if until < today:
                return usage(f"--until {until} is in the past")
        if args.release_after is not None and args.release_after < 1:
            return usage(f"--release-after must be at least 1, got {args.release_after}")
        quarantine.put(
            path,
            suite.name,
            args.case,
            quarantine.Quarantine(
                args.reason.strip(), today, until=until, release_after=args.release_after
            ),
        )
    except (quarantine.QuarantineFileError, OSError) as exc:
        return usage(str(exc))
    ends = [f"until {until}" if until else "", ""]
    if args.release_after:
        ends[1] = f"after {args.release_after} passing run(s) in a row"
    lasting = " or ".join(e for e in ends if e) or "until released (--release)"
    print(
        f"quarantined {args.case!r} of {suite.name!r} {lasting}: it runs and shows, and does "
        f"not gate; recorded in {path} (commit it)"
    )
    return EXIT_OK

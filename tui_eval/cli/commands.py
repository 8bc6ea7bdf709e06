"""`tui-eval` entry point. Imports stay inside the commands so `--help` is fast."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import cast

from tui_eval.cli.exit_codes import EXIT_FAILED, EXIT_USAGE, exit_code_for
from tui_eval.cli.requests import PLAIN_RUN_ONLY, add_settings_flags

COMMANDS = (
    "run",
    "compare",
    "merge",
    "ab",
    "show",
    "history",
    "recheck",
    "resume",
    "calibrate",
    "import",
    "failures",
    "quarantine",
)

DESCRIPTION = """\
Evaluate LLM agents: run suites of cases and checks, watch results live, compare with baselines.

  tui-eval [PATH...]                 open the app on these suites (default: ./suites)
  tui-eval --watch PATH...           rerun a suite whenever its files change (the app; headless
                                     without a terminal, or `run --headless --watch`)
  tui-eval run PATH... [--headless]  run; headless prints a progress bar and the summary
  tui-eval compare CURRENT [BASELINE] print a Diff; exit 1 on regressions (see --fail-on)
  tui-eval merge SHARD... -o OUT     one report from the shards of a run (--shard i/n)
  tui-eval ab PATH --a SPEC --b SPEC two agents on the same cases, sampled until decided
  tui-eval show REPORT               open a saved report in the app (read-only)
  tui-eval history                   list past runs
  tui-eval recheck REPORT PATH...    re-run the suites' current checks on saved outputs
  tui-eval resume                    finish the last interrupted run
  tui-eval failures REPORT           failed samples grouped into modes (--against BASELINE)
  tui-eval quarantine CASE --reason  a flaky case runs and shows, but does not gate
  tui-eval calibrate PATH            judge–human agreement on labelled outputs (--min-kappa X)
  tui-eval import KIND FILE -o SUITE.yaml  a suite from otel traces, pydantic-evals, inspect

exit codes: 0 all passed and no regression · 1 a --fail-on condition (default: failures or
regressions) or an interrupted run · 2 usage, load or file errors · 3 nothing to resume ·
5 nothing ran (the filter selected no case, or every suite was skipped)
"""


class _CommandParser(argparse.ArgumentParser):
    """A command's parser: an argument it does not know is an error under the command's own
    usage (`tui-eval run --bogus` shows `run`'s), not under the top level's."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tui-eval",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    # Typed as plain parsers' action: the commands' modules add theirs through it.
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser),
    )

    run = sub.add_parser("run", help="run suites (in the app, or --headless for terminals and CI)")
    run.add_argument(
        "paths", nargs="*", metavar="PATH", help="suite files or folders (default: ./suites)"
    )
    run.add_argument(
        "--headless", action="store_true", help="no app: a progress bar, then the summary"
    )
    run.add_argument(
        "--baseline", metavar="FILE", help="compare with this baseline instead of the suite's"
    )
    run.add_argument("--save-baseline", action="store_true", help="save this run as the baseline")
    run.add_argument("--junit", metavar="FILE", help="write JUnit XML (one testcase per case)")
    run.add_argument("--json", metavar="FILE", help="write the report as JSON")
    run.add_argument(
        "--markdown", metavar="FILE", help="write a Markdown summary (for a CI job page)"
    )
    run.add_argument("--filter", metavar="TEXT", help="only cases whose name contains TEXT")
    run.add_argument(
        "--last-failed",
        "--lf",
        action="store_true",
        help="only the cases that failed in each suite's last run (all if none did)",
    )
    run.add_argument(
        "--fail-on",
        metavar="WHAT",
        help="what fails the run, comma-separated: failures (a case below its threshold), "
        "regressions (vs the baseline), removed (a baseline case is gone), "
        "definition-changed (default: failures,regressions)",
    )
    run.add_argument(
        "--shard",
        metavar="I/N",
        help="run shard I of N (1-based) of the cases (the same split on every machine); "
        "merge the shards' --json reports with tui-eval merge",
    )
    run.add_argument(
        "--decide",
        action="store_true",
        help="sample each case until its comparison with the baseline is decided "
        "(needs a baseline)",
    )
    add_settings_flags(run)
    run.add_argument("--csv", metavar="FILE", help="write one row per sample as CSV")
    run.add_argument("--samples-jsonl", metavar="FILE", help="write one JSON line per sample")
    run.add_argument(
        "--watch",
        action="store_true",
        help="rerun a suite (failing cases first) whenever its files change: in the app, or "
        "with --headless (or no terminal) printing each rerun's summary until Ctrl+C",
    )
    run.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    compare = sub.add_parser(
        "compare",
        help="compare two saved reports; exit 1 on regressions",
        description="Print the Diff of CURRENT against BASELINE: regressions (a case that "
        "passed in the baseline fails now), improvements, added and removed cases, each "
        "with both pass rates and whether the change is larger than sampling noise. "
        "Exit 1 on a regression, 2 when a file cannot be read.",
    )
    compare.add_argument(
        "current",
        metavar="CURRENT",
        help="the report to judge (tui-eval run --json FILE, or a run's report.json)",
    )
    compare.add_argument(
        "baseline",
        metavar="BASELINE",
        nargs="?",
        help="the report to compare it with (usually suites/__baselines__/NAME.json); "
        "without it, each suite of CURRENT is compared with its own baseline",
    )
    compare.add_argument(
        "--baseline-dir",
        metavar="DIR",
        help="the folder holding each suite's baseline (NAME.json); default: the suites' "
        "own __baselines__/ folders",
    )
    compare.add_argument(
        "--fail-on",
        metavar="WHAT",
        help="what fails the comparison, comma-separated: regressions, removed, "
        "definition-changed, failures (default: regressions)",
    )
    compare.add_argument(
        "--count-user-faults",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compare counting the conversations a user simulator failed, or (--no-...) "
        "leaving them out of both reports (default: as CURRENT's run did)",
    )
    compare.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    merge = sub.add_parser(
        "merge",
        help="merge the shards' reports of one run into one report",
        description="Merge the --json reports of `tui-eval run --shard i/n` jobs into one "
        "report. A case in two reports, a missing shard or a planned case in no report is "
        "an error (exit 2).",
    )
    merge.add_argument("reports", nargs="+", metavar="REPORT")
    merge.add_argument("-o", "--output", required=True, metavar="OUT")
    merge.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    ab = sub.add_parser(
        "ab",
        help="A/B two agents or models on the same cases, sampled until decided",
        description="Run every case with agent A (the baseline) and agent B (the current), "
        "adding samples to each undecided case until an anytime-valid test calls it a "
        "regression (B worse) or no regression. SPEC is a model spec such as "
        "openai:gpt-4o-mini (the suite's Agent with that model) or module:attribute (an "
        "agent). Exit 1 if B regressed on any case.",
    )
    ab.add_argument("paths", nargs="*", metavar="PATH")
    ab.add_argument("--a", required=True, metavar="SPEC", help="the baseline agent or model")
    ab.add_argument("--b", required=True, metavar="SPEC", help="the agent or model to judge")
    add_settings_flags(ab, exclude=PLAIN_RUN_ONLY)
    _add_export_args(ab)
    ab.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    show = sub.add_parser("show", help="open a saved report in the app (read-only)")
    show.add_argument("report", metavar="REPORT")
    show.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    history = sub.add_parser("history", help="list past runs of this project")
    history.add_argument("--limit", type=_positive, default=30, metavar="N")
    history.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    recheck = sub.add_parser(
        "recheck", help="re-run current checks on a saved report's outputs (no agent calls)"
    )
    recheck.add_argument("report", metavar="REPORT")
    recheck.add_argument("paths", nargs="+", metavar="PATH")
    recheck.add_argument("--json", metavar="FILE", help="write the rechecked report as JSON")
    recheck.add_argument("--junit", metavar="FILE", help="write JUnit XML (one testcase per case)")
    recheck.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")
    add_settings_flags(recheck, exclude=(*PLAIN_RUN_ONLY, "max_samples", "max_cost"))
    recheck.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    resume = sub.add_parser(
        "resume",
        help="finish the last interrupted run from its journal",
        description="Finish the interrupted (killed, cancelled) runs of the last invocation, "
        "running only the samples their journals lack. Exit 3 when there is nothing to resume.",
    )
    resume.add_argument(
        "--force",
        action="store_true",
        help="resume even though the suite's cases or checks changed since the run started",
    )
    resume.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    from tui_eval.cli.calibrate import add_parser

    add_parser(sub)
    from tui_eval.cli import failures, imports

    imports.add_parser(sub)
    failures.add_parsers(sub)
    return parser


def _add_export_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML (one testcase per case)")
    parser.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used as the process exit code)."""
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:  # argparse's own output (`tui-eval --help | head -1`)
        return _reader_left()


def _main(args_list: list[str]) -> int:
    parser = _parser()
    debug = "--debug" in args_list
    rest = [a for a in args_list if a != "--debug"]
    watch = rest[:1] == ["--watch"]
    if watch:
        rest = rest[1:]
    if not rest or (rest[0] not in COMMANDS and not rest[0].startswith("-")):
        # `tui-eval [--watch] PATH...` opens the app; without a terminal, --watch reruns
        # headless. A word that is no path is a mistyped command: an error, never an app
        # that would hang a script.
        stray = next((word for word in rest if not os.path.lexists(word)), None)
        if stray is not None:
            return _not_a_command_or_path(parser, stray)
        if watch and not sys.stdout.isatty():
            return _guard(lambda: _watch_headless(rest, debug), debug)
        return _guard(lambda: _open_app(rest, autorun=watch, watch=watch), debug)
    try:
        args = parser.parse_args(args_list)
    except SystemExit:  # --help, --version or a usage error: argparse has printed it
        sys.stdout.flush()  # argparse ignores a closed pipe; this raises it to main
        raise
    return _guard(lambda: _dispatch(args), args.debug)


def _not_a_command_or_path(parser: argparse.ArgumentParser, word: str) -> int:
    """Say that `word` is neither a command nor a file or folder, naming the closest command."""
    import difflib

    from tui_eval.util.text import one_line

    parser.print_usage(sys.stderr)
    closest = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    hint = (
        f"; did you mean `tui-eval {closest[0]}`?"
        if closest
        else f"; commands: {', '.join(COMMANDS)}"
    )
    print(
        f"tui-eval: error: {one_line(word, 80)!r} is neither a command nor a file or folder" + hint,
        file=sys.stderr,
    )
    return EXIT_USAGE


def _dispatch(args: argparse.Namespace) -> int:
    from tui_eval.cli import headless, report_commands

    if args.command == "ab" or (args.command == "run" and args.decide):
        return headless.run_command(args)
    if args.command == "run":
        # Files for CI and baseline work are headless jobs, as is any run without a terminal.
        batch = (
            args.junit
            or args.json
            or args.markdown
            or args.save_baseline
            or args.baseline
            or args.csv
            or args.samples_jsonl
            or args.shard
            or args.fail_on is not None
            or args.last_failed
        )
        if args.watch and batch:
            print(
                "tui-eval: --watch reruns suites as they are saved; it does not write files "
                "or gate CI (--junit, --json, --fail-on, --shard, baselines...)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        if args.watch and (args.headless or not sys.stdout.isatty()):
            return headless.watch_command(args)
        if args.headless or batch or not sys.stdout.isatty():
            return headless.run_command(args)
        return _open_app(args.paths, autorun=True, args=args, watch=args.watch)
    if args.command == "compare":
        return report_commands.compare_command(args)
    if args.command == "merge":
        return report_commands.merge_command(args)
    if args.command == "show":
        return _open_report(args.report)
    if args.command == "history":
        return report_commands.history_command(args.limit)
    if args.command == "recheck":
        return headless.run_command(args)
    if args.command == "resume":
        return headless.resume_command(args)
    if args.command == "failures":
        from tui_eval.cli.failures import failures_command

        return failures_command(args)
    if args.command == "quarantine":
        from tui_eval.cli.failures import quarantine_command

        return quarantine_command(args)
    if args.command == "calibrate":
        from tui_eval.cli.calibrate import calibrate_command

        return calibrate_command(args)
    if args.command == "import":
        from tui_eval.cli.imports import import_command

        return import_command(args)
    raise AssertionError(args.command)


def _watch_headless(paths: Sequence[str], debug: bool) -> int:
    from tui_eval.cli import headless

    return headless.watch_command(_parser().parse_args(["run", "--watch", *paths]))


def _open_app(
    paths: Sequence[str],
    *,
    autorun: bool = False,
    args: argparse.Namespace | None = None,
    watch: bool = False,
) -> int:
    from tui_eval.cli.requests import request_from_args
    from tui_eval.core.settings import ExecutorError, RaySpec
    from tui_eval.run.ray_executor import import_ray

    try:
        request = request_from_args(args or argparse.Namespace())
        if isinstance(request.settings.executor, RaySpec):
            import_ray()
    except (ValueError, ExecutorError) as exc:
        print(f"tui-eval: error: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    try:
        from tui_eval.tui.app import run_app
    except ImportError as exc:  # pragma: no cover - the app ships with the package
        print(
            f"tui-eval: the app is not available ({exc}); use `tui-eval run --headless`",
            file=sys.stderr,
        )
        return exit_code_for(exc)
    return run_app(list(paths), request=request, autorun=autorun, watch=watch)


def _open_report(path: str) -> int:
    from tui_eval.report.report import Report, ReportFileError

    try:
        report = Report.load(path)
    except ReportFileError as exc:
        print(f"tui-eval: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    from tui_eval.tui.app import show_report

    return show_report(report)


def _guard(action: Callable[[], int], debug: bool) -> int:
    """Turn unexpected exceptions into a one-line message and exit code 2 (unless --debug)."""
    try:
        return action()
    except BrokenPipeError:
        return _reader_left()
    except KeyboardInterrupt as exc:
        print("tui-eval: interrupted", file=sys.stderr)
        return exit_code_for(exc)
    except Exception as exc:
        if debug:
            raise
        from tui_eval.util.secrets import redact
        from tui_eval.util.text import sanitize

        print(
            sanitize(redact(f"tui-eval: {type(exc).__name__}: {exc}"))
            + " (run with --debug for the traceback)",
            file=sys.stderr,
        )
        return exit_code_for(exc)


def _reader_left() -> int:
    """Whoever read stdout has gone (`tui-eval run … | head -1`): stop quietly, as Unix tools
    do when the reader of a pipe leaves. What is still buffered goes to the null device, so
    the interpreter's last flush raises nothing either; a run stopped here is journaled as
    interrupted, so the exit code is the interrupted run's."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return EXIT_FAILED


def entry() -> None:
    """Console-script entry: exit with `main()`'s code."""
    sys.exit(main())


if __name__ == "__main__":
    entry()

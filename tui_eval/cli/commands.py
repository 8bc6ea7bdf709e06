"""`tui-eval` entry point: the parser, the command line as a `RunRequest`, and which command
runs where. Imports stay inside the commands so `--help` is fast.

A run-settings flag, its help and its `RunSettings` field are written once, in one table
(`add_settings_flags` writes the flags, `request_from_args` reads them back)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tui_eval.cli.exit_codes import EXIT_FAILED, EXIT_USAGE, exit_code_for

if TYPE_CHECKING:
    from tui_eval.agents.http.options import ProviderOptions
    from tui_eval.service.request import RunKind, RunRequest

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


def setting(name: str, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse `type=` for the run setting `name`, validated by `RunSettings`."""

    def convert(text: str) -> Any:
        from tui_eval.core.settings import RunSettings, settings_problem

        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        try:
            RunSettings(**{name: value})
        except ValueError as exc:
            raise argparse.ArgumentTypeError(settings_problem(exc)) from None
        return value

    convert.__name__ = name  # argparse names the type in its messages
    return convert


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _positive_float(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return number


SETTINGS_FLAGS: dict[str, dict[str, Any]] = {
    "concurrency": dict(
        type=setting("concurrency", int), metavar="N", help="cases at once (default: the suite's)"
    ),
    "samples": dict(
        type=setting("samples", int), metavar="N", help="override every case's sample count"
    ),
    "fail_fast": dict(action="store_true", help="run cases one by one, stop at the first failure"),
    "max_samples": dict(
        type=setting("max_samples", int),
        metavar="N",
        help="with --decide and ab: at most N samples per case (and agent) (default 100)",
    ),
    "max_cost": dict(
        type=setting("max_cost", float),
        metavar="USD",
        help="no new sample starts once this many dollars are spent (or in flight); the report "
        "says the run stopped on budget (--decide and ab: the whole decision, both agents "
        "together)",
    ),
    "cache": dict(
        nargs="?",
        const="on",
        choices=["on", "read-only", "off"],
        help="replay stored model responses, keyed by request and sample index "
        "(read-only: never store new ones)",
    ),
    "count_user_faults": dict(
        action=argparse.BooleanOptionalAction,
        default=None,
        help="count the conversations a user simulator failed in pass rates, verdicts and "
        "the exit code, or (--no-...) leave them out (default: the suite's, else left out; "
        "every summary says how many)",
    ),
    "executor": dict(
        choices=["in-process", "ray"],
        help="where samples run: this process (default) or a Ray cluster "
        "(pip install 'tui-eval[ray]'; joins RAY_ADDRESS or --ray-address, else starts one)",
    ),
    "ray_address": dict(metavar="ADDRESS", help="the Ray cluster to join"),
    "ray_workers": dict(type=_positive, metavar="N", help="Ray worker actors (default: its CPUs)"),
}
"""Each run setting's flag (`--max-cost` for `max_cost`), as `add_argument` takes it; the
`RunSettings` field of the same name is where it goes (`executor` and the `ray_` flags
make one `RaySpec`)."""

PROVIDER_FLAGS: dict[str, tuple[str, dict[str, Any]]] = {
    "rpm": (
        "rpm",
        dict(type=_positive_float, metavar="N", help="requests per minute never to exceed"),
    ),
    "tpm": (
        "tpm",
        dict(type=_positive_float, metavar="N", help="tokens per minute never to exceed"),
    ),
    "request_timeout": (
        "timeout",
        dict(type=_positive_float, metavar="S", help="seconds for one request"),
    ),
    "retry_budget": (
        "retry_budget",
        dict(
            type=_positive_float,
            metavar="S",
            help="seconds a request keeps waiting out rate limits with no progress (default 600)",
        ),
    ),
    "max_retries": (
        "max_retries",
        dict(
            type=int,
            metavar="N",
            help="retries after server errors, timeouts and connection errors (default 2)",
        ),
    ),
    "base_url": ("base_url", dict(metavar="URL", help="send every request here (a proxy)")),
}
"""The `provider` setting's flags: flag → (`ProviderOptions` field, `add_argument`'s
keywords); `--header` joins them."""

PLAIN_RUN_ONLY = ("samples", "fail_fast", "executor", "ray_address", "ray_workers")
"""Settings only a plain run takes (`ab` and `recheck` do without)."""


def add_settings_flags(parser: argparse.ArgumentParser, exclude: Iterable[str] = ()) -> None:
    """Add the run settings' flags (all but `exclude`) and the API settings to `parser`."""
    left_out = set(exclude)
    for name, keywords in SETTINGS_FLAGS.items():
        if name not in left_out:
            parser.add_argument("--" + name.replace("_", "-"), **keywords)
    api = parser.add_argument_group(
        "API settings", "for every HTTP provider of the run, judges included; over the suite's"
    )
    for name, (_, keywords) in PROVIDER_FLAGS.items():
        api.add_argument("--" + name.replace("_", "-"), **keywords)
    api.add_argument(
        "--header", action="append", metavar="'NAME: VALUE'", help="an extra request header"
    )


def request_from_args(args: argparse.Namespace) -> RunRequest:
    """The request the command line makes (flags not given are not set).

    Raises:
        ValueError: a flag's value is not valid (a header without a colon).
    """
    from tui_eval.core.settings import RaySpec, RunSettings
    from tui_eval.service.request import RunRequest

    given = {
        name: value
        for name, keywords in SETTINGS_FLAGS.items()
        if (value := getattr(args, name, None)) is not None
        and (value is not False or keywords.get("action") is argparse.BooleanOptionalAction)
    }
    given.pop("ray_address", None), given.pop("ray_workers", None)
    if given.pop("executor", None) == "ray":
        given["executor"] = RaySpec(address=args.ray_address, workers=args.ray_workers)
    provider = provider_options_from_args(args)
    if provider is not None:
        given["provider"] = provider
    return RunRequest(
        kind=_kind(args),
        settings=RunSettings(**given),
        filter=getattr(args, "filter", None),
        baseline=getattr(args, "baseline", None),
        save_baseline=bool(getattr(args, "save_baseline", False)),
    )


def _kind(args: argparse.Namespace) -> RunKind:
    """The kind of run a command asks for."""
    from tui_eval.service.request import ABRun, DecideRun, PlainRun, RecheckRun

    command = getattr(args, "command", None)
    if command == "ab":
        return ABRun(a=args.a, b=args.b)
    if command == "recheck":
        return RecheckRun(report=str(Path(args.report).resolve()))
    return DecideRun() if getattr(args, "decide", False) else PlainRun()


def provider_options_from_args(args: argparse.Namespace) -> ProviderOptions | None:
    """The API flags (`PROVIDER_FLAGS`, `--header`) as provider options (None if none given).

    Raises:
        ValueError: a malformed header (the message never shows the value).
    """
    from tui_eval.agents.http.options import ProviderOptions, header_problem

    fields: dict[str, Any] = {
        field: value
        for flag, (field, _) in PROVIDER_FLAGS.items()
        if (value := getattr(args, flag, None)) is not None
    }
    headers: dict[str, str] = {}
    for raw in getattr(args, "header", None) or []:
        name, sep, value = raw.partition(":")
        if not sep or not name.strip():
            raise ValueError("--header should be 'Name: value' (one was given without a colon)")
        problem = header_problem(name.strip(), value.strip())
        if problem is not None:
            raise ValueError(f"--header: {problem}")
        headers[name.strip()] = value.strip()
    if headers:
        fields["headers"] = headers
    return ProviderOptions(**fields) if fields else None


class _CommandParser(argparse.ArgumentParser):
    """A command's parser: takes `--debug` (unlisted), and reports an unknown argument under
    the command's own usage, not the top level's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

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

    merge = sub.add_parser(
        "merge",
        help="merge the shards' reports of one run into one report",
        description="Merge the --json reports of `tui-eval run --shard i/n` jobs into one "
        "report. A case in two reports, a missing shard or a planned case in no report is "
        "an error (exit 2).",
    )
    merge.add_argument("reports", nargs="+", metavar="REPORT")
    merge.add_argument("-o", "--output", required=True, metavar="OUT")

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

    show = sub.add_parser("show", help="open a saved report in the app (read-only)")
    show.add_argument("report", metavar="REPORT")

    history = sub.add_parser("history", help="list past runs of this project")
    history.add_argument("--limit", type=_positive, default=30, metavar="N")

    recheck = sub.add_parser(
        "recheck", help="re-run current checks on a saved report's outputs (no agent calls)"
    )
    recheck.add_argument("report", metavar="REPORT")
    recheck.add_argument("paths", nargs="+", metavar="PATH")
    _add_export_args(recheck)
    add_settings_flags(recheck, exclude=(*PLAIN_RUN_ONLY, "max_samples", "max_cost"))

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
            return _guard(lambda: _watch_headless(rest), debug)
        request = request_from_args(argparse.Namespace())
        return _guard(lambda: _open_app(rest, request=request, autorun=watch, watch=watch), debug)
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


BATCH_FLAGS = (
    "junit", "json", "markdown", "save_baseline", "baseline", "csv", "samples_jsonl", "shard",
    "last_failed",
)  # fmt: skip
"""`run`'s flags that make it a headless job (files for CI, baseline work), as `--fail-on` does."""


HANDLERS = {
    "compare": "report_commands:compare_command",
    "merge": "report_commands:merge_command",
    "history": "report_commands:history_command",
    "resume": "headless:resume_command",
    "failures": "failures:failures_command",
    "quarantine": "failures:quarantine_command",
    "calibrate": "calibrate:calibrate_command",
    "import": "imports:import_command",
}
"""The module of `tui_eval.cli` and the function that runs each other command (imported
when it runs: `--help` stays fast)."""


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in ("run", "ab", "recheck"):
        return _run(args)
    if args.command == "show":
        return _open_report(args.report)
    module, _, function = HANDLERS[args.command].partition(":")
    handler = getattr(importlib.import_module(f"tui_eval.cli.{module}"), function)
    return cast(int, handler(args))


def _run(args: argparse.Namespace) -> int:
    """`run`, `ab` and `recheck`: a plain `run` opens the app in a terminal unless it writes
    files, gates CI or is told `--headless`; the rest always run headless."""
    from tui_eval.cli import headless
    from tui_eval.core.settings import ExecutorError, RaySpec
    from tui_eval.run.ray_executor import import_ray

    plain = args.command == "run" and not args.decide
    batch = plain and (args.fail_on is not None or any(getattr(args, f) for f in BATCH_FLAGS))
    if plain and args.watch and batch:
        print(
            "tui-eval: --watch reruns suites as they are saved; it does not write files "
            "or gate CI (--junit, --json, --fail-on, --shard, baselines...)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    in_app = plain and not (args.headless or batch or not sys.stdout.isatty())
    try:
        request = request_from_args(args)
        if isinstance(request.settings.executor, RaySpec):
            import_ray()
    except (ValueError, ExecutorError) as exc:
        print(f"{'tui-eval: ' if in_app else ''}error: {exc}", file=sys.stderr, flush=True)
        return exit_code_for(exc)
    if in_app:
        return _open_app(args.paths, request=request, autorun=True, watch=args.watch)
    if plain and args.watch:
        return headless.watch_command(args, request)
    return headless.run_command(args, request)


def _watch_headless(paths: Sequence[str]) -> int:
    from tui_eval.cli import headless

    args = _parser().parse_args(["run", "--watch", *paths])
    return headless.watch_command(args, request_from_args(args))


def _open_app(
    paths: Sequence[str], *, request: RunRequest, autorun: bool = False, watch: bool = False
) -> int:
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
    """Whoever read stdout has gone (`… | head -1`): stop quietly, as Unix tools do; what is
    still buffered goes to the null device, so the last flush raises nothing either."""
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

"""`tui-eval import KIND FILE -o SUITE.yaml`: the command over `tui_eval.importers`."""

from __future__ import annotations

import argparse
from typing import Any

from tui_eval.importers import KINDS


def add_parser(sub: Any) -> None:
    """The `import` subcommand's arguments (imports nothing heavy: `--help` stays fast)."""
    parser = sub.add_parser(
        "import",
        help="write a suite from OTLP traces, a pydantic-evals dataset or Inspect data",
        description="Write a YAML suite from another tool's data: `otel` (OTLP JSON traces, "
        "evaluated with no agent call), `pydantic-evals` (dataset YAML/JSON; evaluators become "
        "checks) or `inspect` (a dataset in JSON lines, JSON or CSV, or an eval log, `.eval` or "
        "`.json`; multiple choice stays multiple choice). Anything with no tui-eval form is "
        "listed on stderr and in the suite's header.",
    )
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("-o", "--output", metavar="SUITE.yaml", required=True)
    parser.add_argument("--agent", metavar="MODULE:ATTR", help="the suite's agent")
    parser.add_argument("--model", metavar="SPEC", help="the suite's model, instead of --agent")
    parser.add_argument("--name", help="the suite's name (default: from the file)")
    parser.add_argument("--force", action="store_true", help="overwrite SUITE.yaml if it exists")


def import_command(args: argparse.Namespace) -> int:
    """Run `tui-eval import`: exit 0 when written; 2, with one line saying why, when the
    source cannot be imported."""
    import sys

    from tui_eval.cli.exit_codes import exit_code_for
    from tui_eval.importers.writing import ImportSourceError

    try:
        return _import(args)
    except ImportSourceError as exc:
        if args.debug:
            raise
        print(f"tui-eval import: {_line(str(exc))}", file=sys.stderr)
        return exit_code_for(exc)


def _import(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from tui_eval.cli.exit_codes import EXIT_OK
    from tui_eval.importers.writing import ImportSourceError, write_suite

    source, target = Path(args.file), Path(args.output)
    if target.exists() and not args.force:
        raise ImportSourceError(f"{target} exists; pass --force to overwrite it")
    if args.agent and args.model:
        raise ImportSourceError("give --agent or --model, not both")
    if args.kind == "otel":
        from tui_eval.importers.otel import suite_from_traces

        imported = suite_from_traces(source, target)
    elif args.kind == "pydantic-evals":
        from tui_eval.importers.pydantic_evals import suite_from_dataset

        imported = suite_from_dataset(source)
    else:
        from tui_eval.importers.inspect_ai import suite_from_inspect

        imported = suite_from_inspect(source)
    imported.settings.setdefault("name", args.name or source.stem)
    if args.name:
        imported.settings["name"] = args.name
    if args.agent:
        imported.settings["agent"] = args.agent
    if args.model:
        imported.settings["model"] = args.model
    write_suite(imported, target)
    for note in imported.unmapped:
        print(f"tui-eval import: not imported: {_line(note)}", file=sys.stderr)
    for need in imported.needs:
        print(f"tui-eval import: {_line(need)}", file=sys.stderr)
    print(f"wrote {target}: {len(imported.cases)} case(s)")
    return EXIT_OK


def _line(text: str) -> str:
    """One line of plain text: the source's own words may hold newlines or escape codes."""
    from tui_eval.util.text import sanitize

    return sanitize(" ".join(text.split()))

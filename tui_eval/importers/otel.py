"""`tui-eval import otel`: a suite over recorded traces (`tui_eval.suites.recorded`), one
case per distinct first user message (or `tui_eval.case` name), with no checks yet."""

from __future__ import annotations

import os
from pathlib import Path

from tui_eval.agents.adapters.otlp import TraceFileError, load_traces
from tui_eval.importers.writing import ImportedSuite, ImportSourceError
from tui_eval.suites.recorded import trace_runs


def suite_from_traces(source: Path, target: Path) -> ImportedSuite:
    """The suite: `recorded:` the file (relative to the suite's folder) and its cases."""
    try:
        found = trace_runs(load_traces(source))
    except TraceFileError as exc:
        raise ImportSourceError(str(exc)) from None
    imported = ImportedSuite()
    relative = os.path.relpath(source.resolve(), target.resolve().parent)
    imported.settings["recorded"] = Path(relative).as_posix()
    for trace_id, count in found.split.items():
        imported.unmapped.append(
            f"trace {trace_id}: {count} agent runs under one root span, split into {count} "
            "samples (the spans outside them are not part of any)"
        )
    for trace_id, why in found.strays.items():
        imported.unmapped.append(
            f"trace {trace_id}: {why}; the suite will not load while the file holds it"
        )
    seen: dict[str, int] = {}
    for run in found.runs:
        named, first = run.case_name, run.first_input
        key = f"name:{named}" if named is not None else f"input:{first}"
        if key in seen:
            imported.cases[seen[key]]["samples"] = imported.cases[seen[key]].get("samples", 1) + 1
            continue
        seen[key] = len(imported.cases)
        case: dict[str, object] = {"input": first if first is not None else ""}
        if named is not None:
            case["name"] = named
        imported.cases.append(case)
    if not imported.cases:
        raise ImportSourceError(f"{source}: no traces with a user message or a tui_eval.case name")
    return imported

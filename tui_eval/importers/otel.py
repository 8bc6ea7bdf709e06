"""`tui-eval import otel FILE -o SUITE.yaml`: a suite over recorded traces, one case per
distinct first user message (or `tui_eval.case` name), with no checks yet."""

from __future__ import annotations

import os
from pathlib import Path

from tui_eval.agents.adapters.otlp import TraceFileError, load_traces
from tui_eval.agents.adapters.spans import case_name_of, first_user_message
from tui_eval.importers.writing import ImportedSuite, ImportError_


def suite_from_traces(source: Path, target: Path) -> ImportedSuite:
    """The suite: `recorded:` the file (relative to the suite's folder) and its cases."""
    try:
        traces = load_traces(source)
    except TraceFileError as exc:
        raise ImportError_(str(exc)) from None
    imported = ImportedSuite()
    relative = os.path.relpath(source.resolve(), target.resolve().parent)
    imported.settings["recorded"] = Path(relative).as_posix()
    seen: dict[str, int] = {}
    for trace_id, spans in traces.items():
        named, first = case_name_of(spans), first_user_message(spans)
        if first is None and named is None:
            imported.unmapped.append(f"trace {trace_id}: no user message and no tui_eval.case")
            continue
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
        raise ImportError_(f"{source}: no traces with a user message or a tui_eval.case name")
    return imported

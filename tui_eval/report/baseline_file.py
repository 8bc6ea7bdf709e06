"""Baseline files made for git: pretty, in a stable order, without what changes per run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tui_eval.report.report import Report
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.home import in_data_root

VOLATILE_SAMPLE_FIELDS = ("latency_ms", "cost")
VOLATILE_REPORT_FIELDS = ("started_at", "duration_s")
VOLATILE_METADATA = ("run_id", "resumed", "suite_path")
"""What differs between two runs with the same results: a baseline file leaves it out."""


def baseline_json(report: Report) -> bytes:
    """`report` as a baseline file people commit and review in git.

    Pretty-printed, one case per block, cases in name order and samples in index order,
    and without what changes from run to run when the results do not: latencies, costs,
    timestamps, run ids, tool call ids (numbered in order instead) and absolute paths. Saving an unchanged run again writes the same
    bytes. `Report.load()` reads it (and the single-line files of earlier versions).
    """
    document = json.loads(report.to_json())
    body = document["report"]
    for key in VOLATILE_REPORT_FIELDS:
        body.pop(key, None)
    body["priced"] = False  # its costs are left out
    for key in VOLATILE_METADATA:
        body.get("metadata", {}).pop(key, None)
    body["cases"].sort(key=lambda case: case["name"])
    for case in body["cases"]:
        case["samples"].sort(key=lambda sample: sample["index"])
        for sample in case["samples"]:
            for key in VOLATILE_SAMPLE_FIELDS:
                sample.pop(key, None)
            run = sample.get("run")
            if run is None:
                continue
            run.pop("latency_ms", None)
            _steady_tool_calls(run)
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def write_baseline_file(report: Report, path: Path) -> None:
    """Write `report` as the baseline at `path` (atomically); an unchanged file is left
    alone, so neither git nor a file watcher sees a change."""
    data = baseline_json(report)
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    atomic_write_bytes(path, data, private=in_data_root(path))


def _steady_tool_calls(run: dict[str, Any]) -> None:
    """Tool call ids (random at most APIs) renumbered in the order the calls were made,
    with the tool messages answering them; latencies left out."""
    messages = run.get("messages", [])
    calls = [c for m in messages for c in m.get("tool_calls", [])] + run.get("tool_calls", [])
    ids: dict[object, str] = {}
    for call in calls:
        call.pop("latency_ms", None)
        if call.get("id") is not None:
            call["id"] = ids.setdefault(call["id"], f"call_{len(ids) + 1}")
    for message in messages:
        if message.get("tool_call_id") in ids:
            message["tool_call_id"] = ids[message["tool_call_id"]]

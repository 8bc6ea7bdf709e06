"""Report exports for CI: JUnit XML, Markdown job summaries, merged JSON."""

from __future__ import annotations

import csv
import io
import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.diff import SUITE_SEPARATOR, UNCOMPARED, Diff, case_name, case_suite
from tui_eval.report.failure_modes import failure_modes
from tui_eval.report.failure_modes import markdown as failure_markdown
from tui_eval.report.gate import RUN_DEFAULT, gate_failures
from tui_eval.report.left_out import (
    COUNT_USER_FAULTS,
    WHY,
    case_count,
    counted_failure,
    counted_note,
    counted_user_faults,
    counts_user_faults,
    first_fault,
    left_out_note,
    undecided_note,
)
from tui_eval.report.quarantine import quarantined
from tui_eval.report.report import Report
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import XML_INVALID, counted, one_line, sanitize
from tui_eval.util.text import markdown_cell as _md_cell


def _xml_text(text: str) -> str:
    return XML_INVALID.sub("\ufffd", text)


def _sample_line(sample: SampleResult) -> str:
    if sample.passed:
        return f"sample {sample.index + 1}: passed"
    left_out = f" [left out: {WHY}]" if sample.excluded else ""
    return f"sample {sample.index + 1}: {sample.status}{left_out}: {sample.first_failure}"


def junit_xml(reports: Sequence[Report], diffs: Sequence[Diff | None] = ()) -> bytes:
    """JUnit XML: one `<testsuite>` per suite, one `<testcase>` per case.

    Case statistics are suite properties (`CASE:pass_rate`: the common schema has none on
    testcases); a failing case is a `<failure>`, or an `<error>` when every failing sample
    errored or timed out; a quarantined or undecided case is `<skipped>`.
    """
    root = ET.Element("testsuites", name="tui-eval")
    groups: dict[str, list[CaseResult]] = {}
    started: dict[str, float] = {}
    labels = {
        (report.name, change.name): change.noise_label
        for report, diff in zip(reports, diffs, strict=False)
        if diff is not None
        for change in diff.changes
    }
    exempt = {
        (case_suite(report, case), case_name(report, case)): reason
        for report in reports
        for case in report.cases
        if (reason := quarantined(report).get(case.name)) is not None
    }
    suite_lines = {
        report.name: diff.suite_line()
        for report, diff in zip(reports, diffs, strict=False)
        if diff is not None and diff.changes
    }
    for report in reports:
        for case in report.cases:
            owner = case_suite(report, case)
            groups.setdefault(owner, []).append(replace(case, name=case_name(report, case)))
            started.setdefault(owner, report.started_at)
    for suite_name, cases in groups.items():
        held = {c.name: exempt[suite_name, c.name] for c in cases if (suite_name, c.name) in exempt}
        undecided = {c.name for c in cases if c.undecided and c.name not in held}
        gating = [c for c in cases if c.name not in held and c.name not in undecided]
        failures = sum(1 for c in gating if not c.passed and not _all_errors(c))
        errors = sum(1 for c in gating if not c.passed and _all_errors(c))
        seconds = sum(s.latency_ms for c in cases for s in c.samples) / 1000
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_xml_text(suite_name),
            tests=str(len(cases)),
            failures=str(failures),
            errors=str(errors),
            skipped=str(len(held) + len(undecided)),
            time=f"{seconds:.3f}",
            timestamp=time.strftime(
                "%Y-%m-%dT%H:%M:%S", time.gmtime(started[suite_name] or time.time())
            ),
        )
        left_out = sum(c.left_out for c in cases)
        facts = [
            ("against the baseline", suite_lines.get(suite_name, "")),
            ("samples left out", left_out_note(left_out) if left_out else ""),
        ]
        for case in cases:
            flaky = 0 < case.samples_passed < case.counted
            facts += [
                (f"{case.name}:pass_rate", "" if case.undecided else f"{case.pass_rate:.4f}"),
                (f"{case.name}:label", labels.get((suite_name, case.name), "")),
                (f"{case.name}:samples", str(len(case.samples))),
                (f"{case.name}:samples_passed", str(case.samples_passed)),
                (f"{case.name}:samples_left_out", str(case.left_out) if case.left_out else ""),
                (f"{case.name}:flaky", "true" if flaky else "false"),
            ]
        properties = ET.SubElement(suite, "properties")
        for name, shown in facts:
            if shown:
                ET.SubElement(properties, "property", name=_xml_text(name), value=shown)
        for case in cases:
            _junit_case(suite, suite_name, case, held.get(case.name))
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(suite.get(key, 0)) for suite in root)))
    root.set("time", f"{sum(float(suite.get('time', 0)) for suite in root):.3f}")
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + body + b"\n"


def _junit_case(
    suite: ET.Element, suite_name: str, case: CaseResult, quarantine: str | None = None
) -> None:
    seconds = sum(s.latency_ms for s in case.samples) / 1000
    testcase = ET.SubElement(
        suite,
        "testcase",
        classname=_xml_text(suite_name),
        name=_xml_text(case.name),
        time=f"{seconds:.3f}",
    )
    if quarantine is not None:  # it ran and is shown, but does not gate
        skipped = ET.SubElement(
            testcase, "skipped", message=_xml_text(one_line(f"quarantined: {quarantine}", 1000))
        )
        if not case.passed:
            skipped.text = _xml_text(one_line(case.first_failure or "no samples finished", 1000))
    elif case.undecided:  # the agent was not tested: no verdict, nothing to gate
        skipped = ET.SubElement(testcase, "skipped", message=_xml_text(undecided_note(case)))
        lines = [first_fault(case), *(_sample_line(s) for s in case.samples)]
        skipped.text = _xml_text("\n".join(lines))
    elif not case.passed:
        tag = "error" if _all_errors(case) else "failure"
        detail = "\n".join(_sample_line(s) for s in case.samples)
        element = ET.SubElement(
            testcase,
            tag,
            message=_xml_text(one_line(case.first_failure or "no samples finished", 1000)),
            type="sample-error" if tag == "error" else "check-failed",
        )
        element.text = _xml_text(detail)
    out = ET.SubElement(testcase, "system-out")
    left_out = f"; {left_out_note(case.left_out)}" if case.left_out else ""
    rate = (
        undecided_note(case)
        if case.undecided
        else f"pass rate {case.pass_rate:.0%} ({case.samples_passed}/{case.counted}{left_out})"
    )
    out.text = _xml_text(
        f"{rate}, threshold {case.pass_threshold:.0%}, {counted(case.usage.total_tokens, 'token')}"
    )


def _all_errors(case: CaseResult) -> bool:
    failing = [s for s in case.samples if not s.passed and not s.excluded]
    return bool(failing) and all(s.status in ("error", "timeout") for s in failing)


def markdown_summary(
    reports: Sequence[Report],
    diffs: Sequence[Diff | None] = (),
    baselines: Sequence[Report | None] = (),
) -> str:
    """A Markdown summary for a CI job page, suite by suite (against each's `baselines`)."""
    parts = []
    for position, report in enumerate(reports):
        diff = diffs[position] if position < len(diffs) else None
        baseline = baselines[position] if position < len(baselines) else None
        if not report.cases:  # a run that ran nothing is no pass
            why = report.metadata.get("nothing_ran") or (
                "cancelled before any sample finished" if report.cancelled else "no case ran"
            )
            parts.append(f"## ⚠️ {_md_cell(report.name)}: nothing ran\n\n{_md_cell(why)}\n")
            continue
        mark = "❌" if gate_failures(RUN_DEFAULT, report, diff) else "✅"
        parts.append(f"## {mark} {_md_cell(report.name)}\n\n{_md_cell(report.header(), 300)}\n")
        parts.append(
            "| | case | samples | pass rate | tokens | first failure |\n|---|---|---|---|---|---|"
        )
        for case in report.cases:
            mark = "✓" if case.passed else "?" if case.undecided else "✗"
            rate = "—" if case.undecided else f"{case.pass_rate:.0%}"
            reason = undecided_note(case) if case.undecided else counted_failure(case)
            parts.append(
                f"| {mark} | {_md_cell(case.name, 60)} | {case_count(case)} "
                f"| {rate} | {case.usage.total_tokens:,} | {_md_cell(reason)} |"
            )
        parts += _markdown_left_out(report)
        if diff is not None:
            parts.append(f"\n**{_md_cell(diff.suite_line(), 200)}**")
            parts.append(
                f"\n**Against the baseline:** {len(diff.regressions)} regression(s), "
                f"{len(diff.improvements)} improvement(s), {len(diff.added)} added, {len(diff.removed)} removed\n"
            )
            moved = [("❌ regressed", c) for c in diff.regressions]
            moved += [("✅ improved", c) for c in diff.improvements]
            parts += [
                f"- {mark}: {_md_cell(c.name, 80)} — {_md_cell(c.describe())}" for mark, c in moved
            ]
            parts += [f"- ➖ removed: {_md_cell(name, 80)}" for name in diff.removed]
            parts += [
                f"- ⚠️ definition changed: {_md_cell(name, 80)} (its verdicts compare "
                "different checks or inputs)"
                for name in diff.definition_changed
            ]
            parts += [
                f"- ❔ not compared: {_md_cell(n, 80)} ({UNCOMPARED})" for n in diff.undecided
            ]
        held = quarantined(report)
        if held:
            parts.append(f"\n**Quarantined** (they ran, and do not gate): {len(held)}\n")
            for name, reason in held.items():
                parts.append(f"- 🔒 {_md_cell(name, 80)} — {_md_cell(reason)}")
        modes = [m for m in failure_modes(report, baseline) if m.count]
        if modes:
            parts.append(f"\n**Failure modes** ({len(modes)}, new first):\n")
            parts.append(failure_markdown(modes, limit=10))
        parts.append("")
    return "\n".join(parts)


def _markdown_left_out(report: Report) -> list[str]:
    """The Markdown lines saying which samples were left out (or that they were counted)."""
    cases = [case for case in report.cases if case.left_out]
    if not cases:
        kept = counted_user_faults(report.samples)
        return [f"\n**{_md_cell(counted_note(kept), 200)}**"] if kept else []
    lines = [
        f"\n**{left_out_note(report.samples_left_out)}** (in {counted(len(cases), 'case')}; "
        "`--count-user-faults` counts them)\n"
    ]
    for case in cases:
        undecided = " — undecided, it does not gate" if case.undecided else ""
        lines.append(f"- {_md_cell(case.name, 80)}: {left_out_note(case.left_out)}{undecided}")
    return lines


class MergeError(TuiEvalError, ValueError):
    """Reports cannot be merged (a case in two of them); the message names the cases."""


def merge_reports(reports: Sequence[Report]) -> Report:
    """One report of several (suites, or one run's shards), carrying shard facts so missing
    shards and cases can be reported.

    Raises:
        MergeError: the same (suite, case) is in two reports.
    """
    if len(reports) == 1:
        return reports[0]
    cases: dict[tuple[str, str], CaseResult] = {}
    overlaps: dict[str, None] = {}  # each duplicated case once, in order
    planned: dict[str, list[str]] = {}
    shards: list[Any] = []
    paths: dict[str, str] = {}
    for report in reports:
        for case in report.cases:
            suite, name = case_suite(report, case), case_name(report, case)
            if (suite, name) in cases:
                overlaps[f"{suite}{SUITE_SEPARATOR}{name}"] = None
            else:
                cases[suite, name] = replace(case, name=name, suite=suite)
        for suite, names in (report.metadata.get("planned_cases") or {}).items():
            planned.setdefault(suite, [])
            planned[suite] += [n for n in names if n not in planned[suite]]
        shards += report.metadata.get("shards") or []
        paths.update(report.metadata.get("suite_paths") or {})
        if report.metadata.get("suite_path"):
            paths.setdefault(report.name, report.metadata["suite_path"])
    if overlaps:
        raise MergeError(
            f"{len(overlaps)} case(s) are in more than one report: {', '.join(list(overlaps)[:5])}"
            + (" …" if len(overlaps) > 5 else "")
        )
    suites = list(dict.fromkeys(suite for suite, _ in cases))
    metadata: dict[str, Any] = {"suites": suites, "suite_paths": paths}
    if any(counts_user_faults(report) for report in reports):
        metadata[COUNT_USER_FAULTS] = True
    if planned:
        metadata["planned_cases"] = planned
    if shards:
        metadata["shards"] = shards
    return Report(
        "+".join(suites),
        list(cases.values()),
        started_at=min((r.started_at for r in reports), default=0.0),
        duration_s=sum(r.duration_s for r in reports),
        cancelled=any(r.cancelled for r in reports),
        priced=any(r.priced for r in reports),
        metadata=metadata,
    )


def suite_parts(report: Report) -> dict[str, Report]:
    """A report split by suite (the inverse of `merge_reports`), in report order."""
    parts: dict[str, list[CaseResult]] = {}
    for case in report.cases:
        parts.setdefault(case_suite(report, case), []).append(
            replace(case, name=case_name(report, case))
        )
    return {suite: replace(report, name=suite, cases=cases) for suite, cases in parts.items()}


def missing_from(report: Report) -> tuple[list[str], list[str]]:
    """What a merged shard report lacks: shards (`2/3`) and planned cases (`suite / case`)."""
    shards = {tuple(s) for s in report.metadata.get("shards") or []}
    missing_shards = []
    for total in sorted({n for _, n in shards}):
        present = {i for i, n in shards if n == total}
        missing_shards += [f"{i}/{total}" for i in range(1, total + 1) if i not in present]
    have = {(case_suite(report, c), case_name(report, c)) for c in report.cases}
    missing_cases = [
        f"{suite}{SUITE_SEPARATOR}{name}"
        for suite, names in (report.metadata.get("planned_cases") or {}).items()
        for name in names
        if (suite, name) not in have
    ]
    return missing_shards, missing_cases


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write an export atomically."""
    target = Path(path)
    atomic_write_bytes(target, data)
    return target


SAMPLE_COLUMNS = (
    "suite", "case", "index", "status", "latency_ms", "input_tokens", "output_tokens",
    "total_tokens", "cost", "first_failing_check", "reason", "fault", "left_out",
)  # fmt: skip
"""The columns of the per-sample CSV and JSONL exports."""


def sample_rows(reports: Sequence[Report]) -> list[dict[str, Any]]:
    """One row per sample (for pandas or a spreadsheet), as `SAMPLE_COLUMNS` name them."""
    rows = []
    for report in reports:
        for case in report.cases:
            suite, name = case_suite(report, case), case_name(report, case)
            for sample in case.samples:
                failing = next((c for c in sample.checks if not c.passed), None)
                reason = failing.reason if failing is not None else (sample.error or "")
                rows.append(
                    {
                        "suite": suite,
                        "case": name,
                        "index": sample.index,
                        "status": sample.status,
                        "latency_ms": round(sample.latency_ms, 3),
                        "input_tokens": sample.usage.input_tokens,
                        "output_tokens": sample.usage.output_tokens,
                        "total_tokens": sample.usage.total_tokens,
                        "cost": sample.cost,
                        "first_failing_check": failing.name if failing is not None else "",
                        "reason": one_line(reason, 2000) if not sample.passed else "",
                        "fault": sample.fault.party if sample.fault is not None else "",
                        "left_out": sample.excluded,
                    }
                )
    return rows


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a cell as a formula (OWASP's CSV injection rule)."""


def csv_cell(value: Any) -> Any:
    """A value for a CSV cell: a would-be formula gets a leading `'`, and control characters
    (but line breaks and tabs) become visible stand-ins."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if value.startswith(FORMULA_STARTS):
            value = "'" + value
        return "\r".join(sanitize(line) for line in value.split("\r"))
    return value


def samples_csv(reports: Sequence[Report]) -> bytes:
    """The per-sample rows as CSV (UTF-8, a header row); no cell runs as a formula."""
    buffer = io.StringIO()
    # CRLF rows (RFC 4180): a cell holding a bare CR or LF is then quoted, never a new row.
    writer = csv.DictWriter(buffer, fieldnames=SAMPLE_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    for row in sample_rows(reports):
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return buffer.getvalue().encode()


def samples_jsonl(reports: Sequence[Report]) -> bytes:
    """The per-sample rows as JSON Lines."""
    return "".join(
        json.dumps(row, ensure_ascii=False) + "\n" for row in sample_rows(reports)
    ).encode()

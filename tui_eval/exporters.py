"""Report exports for CI: JUnit XML, Markdown job summaries, merged JSON."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from tui_eval.atomic import atomic_write_bytes
from tui_eval.report import CaseResult, Diff, Report, SampleResult

# XML 1.0 cannot carry most control characters, whatever the escaping.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _XML_INVALID.sub("\ufffd", text)


def _sample_line(sample: SampleResult) -> str:
    return (
        f"sample {sample.index + 1}: {sample.status}: {sample.first_failure}"
        if not sample.passed
        else (f"sample {sample.index + 1}: passed")
    )


def junit_xml(reports: Sequence[Report]) -> bytes:
    """JUnit XML: one `<testsuite>` per report, one `<testcase>` per case; failures carry reasons."""
    root = ET.Element("testsuites", name="tui-eval")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    for report in reports:
        failures = sum(1 for c in report.cases if not c.passed and not _all_errors(c))
        errors = sum(1 for c in report.cases if not c.passed and _all_errors(c))
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_xml_text(report.name),
            tests=str(len(report.cases)),
            failures=str(failures),
            errors=str(errors),
            skipped="0",
            time=f"{report.duration_s:.3f}",
            timestamp=time.strftime(
                "%Y-%m-%dT%H:%M:%S", time.gmtime(report.started_at or time.time())
            ),
        )
        for case in report.cases:
            seconds = sum(s.latency_ms for s in case.samples) / 1000
            testcase = ET.SubElement(
                suite,
                "testcase",
                classname=_xml_text(report.name),
                name=_xml_text(case.name),
                time=f"{seconds:.3f}",
            )
            if not case.passed:
                tag = "error" if _all_errors(case) else "failure"
                detail = "\n".join(_sample_line(s) for s in case.samples)
                element = ET.SubElement(
                    testcase,
                    tag,
                    message=_xml_text(
                        f"{case.samples_passed}/{len(case.samples)} samples passed: {case.first_failure}"[
                            :1000
                        ]
                    ),
                    type="sample-error" if tag == "error" else "check-failed",
                )
                element.text = _xml_text(detail)
            out = ET.SubElement(testcase, "system-out")
            out.text = _xml_text(
                f"pass rate {case.pass_rate:.0%} ({case.samples_passed}/{len(case.samples)}), "
                f"threshold {case.pass_threshold:.0%}, {case.usage.total_tokens:,} tokens"
            )
        totals["tests"] += len(report.cases)
        totals["failures"] += failures
        totals["errors"] += errors
        total_time += report.duration_s
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + body + b"\n"


def _all_errors(case: CaseResult) -> bool:
    failing = [s for s in case.samples if not s.passed]
    return bool(failing) and all(s.status in ("error", "timeout") for s in failing)


def _md_cell(text: str, limit: int = 120) -> str:
    flat = " ".join(_XML_INVALID.sub("", text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    for ch in "\\`*_[]<>|":
        flat = flat.replace(ch, "\\" + ch)
    return flat


def markdown_summary(reports: Sequence[Report], diffs: Sequence[Diff | None] = ()) -> str:
    """A Markdown summary for a CI job page: a table per suite, then its regressions."""
    parts = []
    for position, report in enumerate(reports):
        diff = diffs[position] if position < len(diffs) else None
        mark = "✅" if report.passed and (diff is None or diff.ok) else "❌"
        parts.append(f"## {mark} {_md_cell(report.name)}\n\n{_md_cell(report.header(), 300)}\n")
        parts.append(
            "| | case | samples | pass rate | tokens | first failure |\n|---|---|---|---|---|---|"
        )
        for case in report.cases:
            parts.append(
                f"| {'✓' if case.passed else '✗'} | {_md_cell(case.name, 60)} | {case.samples_passed}/{len(case.samples)} "
                f"| {case.pass_rate:.0%} | {case.usage.total_tokens:,} | {_md_cell(case.first_failure)} |"
            )
        if diff is not None:
            parts.append(
                f"\n**Against the baseline:** {len(diff.regressions)} regression(s), "
                f"{len(diff.improvements)} improvement(s), {len(diff.added)} added, {len(diff.removed)} removed\n"
            )
            for change in diff.regressions:
                parts.append(
                    f"- ❌ regressed: {_md_cell(change.name, 80)} — {_md_cell(change.describe())}"
                )
            for change in diff.improvements:
                parts.append(
                    f"- ✅ improved: {_md_cell(change.name, 80)} — {_md_cell(change.describe())}"
                )
        parts.append("")
    return "\n".join(parts)


def merge_reports(reports: Sequence[Report]) -> Report:
    """One report of several suites' runs; case names become `suite / case`."""
    if len(reports) == 1:
        return reports[0]
    cases = []
    for report in reports:
        for case in report.cases:
            cases.append(
                CaseResult(
                    f"{report.name} / {case.name}",
                    case.samples,
                    pass_threshold=case.pass_threshold,
                    planned=case.planned,
                    input=case.input,
                    expected=case.expected,
                    expected_tools=case.expected_tools,
                    metadata=case.metadata,
                )
            )
    return Report(
        "+".join(r.name for r in reports),
        cases,
        started_at=min((r.started_at for r in reports), default=0.0),
        duration_s=sum(r.duration_s for r in reports),
        cancelled=any(r.cancelled for r in reports),
        priced=any(r.priced for r in reports),
        metadata={"suites": [r.name for r in reports]},
    )


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write an export atomically."""
    target = Path(path)
    atomic_write_bytes(target, data)
    return target

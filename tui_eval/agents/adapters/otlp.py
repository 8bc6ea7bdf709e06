"""Recorded OpenTelemetry traces: OTLP JSON as the Collector's file exporter writes it.

A file holds one `{"resourceSpans": [...]}` object, or one such object per line (JSON
lines, as the file exporter appends them). Each trace becomes the spans of one run (see
`tui_eval.agents.adapters.spans`). Reading needs no OpenTelemetry package.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tui_eval.agents.adapters.spans import SpanRecord

ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")


class TraceFileError(ValueError):
    """A recorded trace file cannot be read; the message names the file and the place."""


def load_traces(path: Path) -> dict[str, list[SpanRecord]]:
    """Every trace in an OTLP JSON (or JSON lines) file, by trace id, in file order.

    Raises:
        TraceFileError: the file is missing, not JSON, or not OTLP spans.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceFileError(
            f"{path}: cannot read recorded traces: {exc.strerror or exc}"
        ) from None
    documents: list[tuple[str, Any]] = []
    try:
        documents.append(("", json.loads(text)))
    except ValueError:
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                documents.append((f":{lineno}", json.loads(line)))
            except ValueError as exc:
                raise TraceFileError(f"{path}:{lineno}: not valid JSON: {exc}") from None
    traces: dict[str, list[SpanRecord]] = {}
    for where, document in documents:
        if not isinstance(document, Mapping) or not isinstance(document.get("resourceSpans"), list):
            raise TraceFileError(
                f"{path}{where}: not OTLP JSON: expected an object with a `resourceSpans` list"
            )
        for resource_index, resource in enumerate(document["resourceSpans"]):
            scopes = resource.get("scopeSpans") if isinstance(resource, Mapping) else None
            for scope in scopes or []:
                for span_index, raw in enumerate(scope.get("spans") or []):
                    place = f"{path}{where}: resourceSpans[{resource_index}] span {span_index + 1}"
                    span = span_record(raw, place)
                    traces.setdefault(span.trace_id, []).append(span)
    return traces


def span_record(raw: Any, place: str = "span") -> SpanRecord:
    """One OTLP JSON span as a `SpanRecord`."""
    if not isinstance(raw, Mapping):
        raise TraceFileError(f"{place}: a span must be an object")
    trace_id = raw.get("traceId")
    span_id = raw.get("spanId")
    if not trace_id or not span_id:
        raise TraceFileError(f"{place}: a span needs `traceId` and `spanId`")
    attributes = attributes_of(raw.get("attributes"))
    status = raw.get("status") or {}
    error = None
    if isinstance(status, Mapping) and status.get("code") in ERROR_CODES:
        error = str(status.get("message") or attributes.get("error.type") or "")
        for event in raw.get("events") or []:
            if isinstance(event, Mapping) and event.get("name") == "exception" and not error:
                found = attributes_of(event.get("attributes"))
                kind, message = found.get("exception.type"), found.get("exception.message")
                error = f"{kind}: {message}" if kind else str(message or "")
        error = error or "error"
    return SpanRecord(
        trace_id=str(trace_id),
        span_id=str(span_id),
        parent_id=str(raw.get("parentSpanId") or "") or None,
        name=str(raw.get("name") or ""),
        start_ns=_nanos(raw.get("startTimeUnixNano")),
        end_ns=_nanos(raw.get("endTimeUnixNano")),
        attributes=attributes,
        error=error,
    )


def attributes_of(raw: Any) -> dict[str, Any]:
    """OTLP `[{"key": ..., "value": {"stringValue": ...}}]` as a plain mapping."""
    if not isinstance(raw, list):
        return {}
    return {
        str(item["key"]): any_value(item.get("value"))
        for item in raw
        if isinstance(item, Mapping) and "key" in item
    }


def any_value(value: Any) -> Any:
    """An OTLP `AnyValue` as a Python value."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return attributes_of((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _nanos(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0

"""Recorded OpenTelemetry traces: OTLP JSON as the Collector's file exporter writes it (one
`{"resourceSpans": [...]}` object, or one a line), read without OpenTelemetry."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tui_eval.agents.adapters.spans import SpanRecord
from tui_eval.util.errors import TuiEvalError

ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")


class TraceFileError(TuiEvalError, ValueError):
    """A recorded trace file cannot be read; the message names the file and the place."""


def load_traces(path: Path) -> dict[str, list[SpanRecord]]:
    """Every trace in an OTLP JSON (or JSON lines) file, by trace id, in file order.

    Raises:
        TraceFileError: the file is missing, not JSON or not OTLP spans (naming a known
            other format), or a value has the wrong shape.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFileError(
            f"{path}: cannot read recorded traces: {exc.strerror or exc}"
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TraceFileError(
            f"{path}: not text (OTLP protobuf, or another binary format?); {EXPECTED}"
        ) from None
    traces: dict[str, list[SpanRecord]] = {}
    for where, document in _documents(path, text):
        if not isinstance(document, Mapping) or "resourceSpans" not in document:
            what = describe(document)
            if what is not None:
                raise TraceFileError(f"{path}{where}: {what}, not OTLP JSON; {EXPECTED}")
            raise TraceFileError(
                f"{path}{where}: not OTLP JSON: expected an object with a `resourceSpans` list"
            )
        head = f"{path}{where}"
        for r, resource in enumerate(_listed(document["resourceSpans"], head, "resourceSpans")):
            at = f"{head}: resourceSpans[{r}]"
            if not isinstance(resource, Mapping):
                raise TraceFileError(f"{at}: expected an object, got {_kind(resource)}")
            for s, scope in enumerate(_listed(resource.get("scopeSpans"), at, "scopeSpans")):
                scope_at = f"{at} scopeSpans[{s}]"
                if not isinstance(scope, Mapping):
                    raise TraceFileError(f"{scope_at}: expected an object, got {_kind(scope)}")
                for n, raw in enumerate(_listed(scope.get("spans"), scope_at, "spans"), 1):
                    span = span_record(raw, f"{scope_at} span {n}")
                    traces.setdefault(span.trace_id, []).append(span)
    return traces


EXPECTED = (
    "expected OTLP JSON as the OTLP file exporter writes it (the Collector's `file` exporter): "
    'an object {"resourceSpans": [...]}, or one such object per line'
)


def _documents(path: Path, text: str) -> list[tuple[str, Any]]:
    """The file's JSON documents, with where each is (`""` for a whole-file one, `:N`)."""
    try:
        return [("", json.loads(text, parse_float=_number))]
    except ValueError:
        pass
    documents: list[tuple[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            documents.append((f":{lineno}", json.loads(line, parse_float=_number)))
        except ValueError as exc:
            what = describe(_first_of_stream(text))
            if what is not None:
                raise TraceFileError(f"{path}: {what}, not OTLP JSON; {EXPECTED}") from None
            raise TraceFileError(f"{path}:{lineno}: not valid JSON: {exc}") from None
    return documents


def _number(literal: str) -> Any:
    """A JSON number as a float; one too large keeps its digits for messages (`1e400`)."""
    value = float(literal)
    return value if math.isfinite(value) else literal


def _first_of_stream(text: str) -> Any:
    """The first of JSON values written one after another (the console exporter's)."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except ValueError:
        return None
    return value


def describe(document: Any) -> str | None:
    """What a JSON document that is not OTLP is, when it is a known trace format."""
    first = document[0] if isinstance(document, list) and document else document
    if isinstance(first, Mapping):
        context = first.get("context")
        if isinstance(context, Mapping) and "trace_id" in context:
            return (
                "OpenTelemetry's console exporter output (ConsoleSpanExporter: one span per "
                "JSON object)"
            )
        if "resourceLogs" in first:
            return "OTLP logs"
        if "resourceMetrics" in first:
            return "OTLP metrics"
        data = first.get("data")
        if (
            isinstance(data, list)
            and data
            and isinstance(data[0], Mapping)
            and "traceID" in data[0]
        ):
            return "a Jaeger JSON export"
        if "traceId" in first and "id" in first and "spanId" not in first:
            return "a Zipkin JSON export"
    return None


def _listed(value: Any, place: str, key: str) -> list[Any]:
    """`value` as the list OTLP has there (none when absent); anything else is an error."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TraceFileError(f"{place}: {key}: expected a list, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else "a list"


def span_record(raw: Any, place: str = "span") -> SpanRecord:
    """One OTLP JSON span as a `SpanRecord` (`TraceFileError` if it has the wrong shape)."""
    if not isinstance(raw, Mapping):
        raise TraceFileError(f"{place}: a span must be an object")
    trace_id = raw.get("traceId")
    span_id = raw.get("spanId")
    if not trace_id or not span_id:
        raise TraceFileError(f"{place}: a span needs `traceId` and `spanId`")
    attributes = attributes_of(raw.get("attributes"), place)
    status = raw.get("status") or {}
    error = None
    if isinstance(status, Mapping) and status.get("code") in ERROR_CODES:
        error = str(status.get("message") or attributes.get("error.type") or "")
        for index, event in enumerate(_listed(raw.get("events"), place, "events")):
            if isinstance(event, Mapping) and event.get("name") == "exception" and not error:
                found = attributes_of(event.get("attributes"), f"{place} events[{index}]")
                kind, message = found.get("exception.type"), found.get("exception.message")
                error = f"{kind}: {message}" if kind else str(message or "")
        error = error or "error"
    return SpanRecord(
        trace_id=str(trace_id),
        span_id=str(span_id),
        parent_id=str(raw.get("parentSpanId") or "") or None,
        name=str(raw.get("name") or ""),
        start_ns=_nanos(raw.get("startTimeUnixNano"), place, "startTimeUnixNano"),
        end_ns=_nanos(raw.get("endTimeUnixNano"), place, "endTimeUnixNano"),
        attributes=attributes,
        error=error,
    )


def attributes_of(raw: Any, place: str = "attributes") -> dict[str, Any]:
    """OTLP `[{"key": ..., "value": {"stringValue": ...}}]` as a plain mapping."""
    return {
        str(item["key"]): any_value(item.get("value"), f"{place}: attribute {str(item['key'])!r}")
        for item in _listed(raw, place, "attributes")
        if isinstance(item, Mapping) and "key" in item
    }


def any_value(value: Any, place: str = "value") -> Any:
    """An OTLP `AnyValue` as a Python value (`TraceFileError` if not of its declared kind)."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        raw = value["intValue"]
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
            return int(raw)
        raise TraceFileError(f"{place}: intValue {raw!r} is not a whole number")
    if "doubleValue" in value:
        raw = value["doubleValue"]
        try:
            if isinstance(raw, bool):
                raise ValueError
            return float(raw)
        except (TypeError, ValueError):
            raise TraceFileError(f"{place}: doubleValue {raw!r} is not a number") from None
    if "boolValue" in value:
        raw = value["boolValue"]
        if isinstance(raw, bool):
            return raw
        if raw in ("true", "false"):
            return raw == "true"
        raise TraceFileError(f"{place}: boolValue {raw!r} is not true or false")
    if "arrayValue" in value:
        values = _listed(_values(value["arrayValue"], place, "arrayValue"), place, "arrayValue")
        return [any_value(v, f"{place}[{i}]") for i, v in enumerate(values)]
    if "kvlistValue" in value:
        return attributes_of(_values(value["kvlistValue"], place, "kvlistValue"), place)
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _values(container: Any, place: str, key: str) -> Any:
    if container is None:
        return None
    if not isinstance(container, Mapping):
        raise TraceFileError(f"{place}: {key}: expected an object, got {_kind(container)}")
    return container.get("values")


def _nanos(value: Any, place: str, key: str) -> int:
    """A time in nanoseconds since the epoch (OTLP writes it as a string or a number)."""
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value >= 0:
        return int(value)
    raise TraceFileError(f"{place}: {key} {value} is not a time in nanoseconds")

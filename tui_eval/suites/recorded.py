"""Suites over recorded traces: YAML `recorded: FILE` in place of `agent:` (README: "Recorded
traces"). Each agent run of the OTLP JSON file (a trace, or each run under one root span; a
handoff stays one run) is a sample of the case whose `input` is its first user message, or
whose `name` its `tui_eval.case` attribute. No agent is ever called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tui_eval.agents.adapters.otlp import TraceFileError, load_traces
from tui_eval.agents.adapters.spans import (
    SpanRecord,
    case_name_of,
    first_user_message,
    input_messages_of,
    run_from_spans,
)
from tui_eval.agents.http.context import current_sample
from tui_eval.agents.messages import RunResult, input_text
from tui_eval.agents.run_spec import AgentCall, RunSpec
from tui_eval.core.cases import Case
from tui_eval.util.text import one_line


@dataclass(frozen=True, slots=True)
class RecordedCase:
    """The run context of a recorded case: which case's traces its samples replay."""

    name: str


class RecordedRuns:
    """The agent source of a recorded suite: each sample returns its trace's run."""

    def __init__(self, path: Path, runs: dict[str, list[RunResult]]) -> None:
        self.path = path
        self.runs = runs
        self.name = f"recorded:{path.name}"

    def __repr__(self) -> str:
        return f"RecordedRuns({str(self.path)!r}, {sum(map(len, self.runs.values()))} traces)"

    def sample_runner(self) -> AgentCall:
        """The per-sample call: the case's trace for this sample index, never an agent."""

        async def run(spec: RunSpec) -> RunResult:
            key = spec.deps.name if isinstance(spec.deps, RecordedCase) else None
            runs = self.runs.get(key or "")
            if not runs:
                raise LookupError(
                    f"{self.path}: no recorded trace for case {key!r}: none has its input as "
                    "the first user message or it as the `tui_eval.case` attribute"
                )
            sample = current_sample()
            index = sample.index if sample is not None else 0
            return _copy(runs[index % len(runs)])

        return run


def _copy(run: RunResult) -> RunResult:
    # Checks may annotate a run; every sample gets its own copy of the stored one.
    return replace(run, messages=list(run.messages), tool_calls=list(run.tool_calls))


def recorded_cases(cases: Sequence[Case], file: Path) -> tuple[list[Case], RecordedRuns]:
    """`cases` as recorded cases (one sample per matching run) and their agent source.

    Raises:
        TraceFileError: the file cannot be read, or a run matches no case (it would be
            lost otherwise); the message names the file and the trace.
    """
    found = trace_runs(load_traces(file))
    by_input = {input_text(case.input): case.label for case in cases}
    names = {case.label for case in cases}
    runs: dict[str, list[RunResult]] = {case.label: [] for case in cases}
    unmatched: list[str] = []
    for trace_id, why in found.strays.items():
        unmatched.append(f"{trace_id} ({why})")
    for run in found.runs:
        label = match(run, names, by_input)
        if label is None:
            unmatched.append(f"{run.trace_id} ({one_line(run.first_input or '', 60)!r})")
            continue
        runs[label].append(run_from_spans(run.spans))
    if unmatched:
        shown = ", ".join(unmatched[:3]) + (
            f" and {len(unmatched) - 3} more" if len(unmatched) > 3 else ""
        )
        raise TraceFileError(
            f"{file}: {len(unmatched)} trace(s) match no case: {shown}; add a case with that "
            "input (tui-eval import otel FILE -o SUITE.yaml writes them) or a `tui_eval.case` "
            "attribute naming one"
        )
    recorded = [
        replace(
            case,
            context=RecordedCase(case.label),
            samples=max(1, len(runs[case.label])),
            model=None,
        )
        for case in cases
    ]
    return recorded, RecordedRuns(file, runs)


def match(run: RunSpans, names: set[str], by_input: dict[str, str]) -> str | None:
    """The case a run belongs to: named by `tui_eval.case`, else by its first user message."""
    if run.case_name is not None and run.case_name in names:
        return run.case_name
    if run.first_input is not None:
        return by_input.get(run.first_input)
    return None


@dataclass(slots=True)
class RunSpans:
    """The spans of one agent run in a trace file.

    Attributes:
        trace_id: the trace it is (or is part of).
        case_name: its `tui_eval.case` attribute (or that of the root span it was split from).
    """

    trace_id: str
    spans: list[SpanRecord]
    case_name: str | None
    first_input: str | None


@dataclass(slots=True)
class TraceRuns:
    """A trace file's agent runs, and what was not one.

    Attributes:
        split: per trace holding several runs under one root span, how many.
        strays: per trace that is no run (no user message, no case name), why it is there.
    """

    runs: list[RunSpans] = field(default_factory=list)
    split: dict[str, int] = field(default_factory=dict)
    strays: dict[str, str] = field(default_factory=dict)


def trace_runs(traces: Mapping[str, list[SpanRecord]]) -> TraceRuns:
    """The agent runs of the traces `load_traces` read."""
    found = TraceRuns()
    for trace_id, spans in traces.items():
        pieces = _split(spans)
        named = case_name_of(spans)
        if len(pieces) > 1:
            found.split[trace_id] = len(pieces)
        for piece in pieces:
            first = first_user_message(piece)
            name = case_name_of(piece) or named
            if first is None and name is None:
                found.strays[trace_id] = _stray(trace_id, spans, traces)
                continue
            found.runs.append(RunSpans(trace_id, piece, name, first))
    return found


def _split(spans: list[SpanRecord]) -> list[list[SpanRecord]]:
    """A trace's spans, one list per agent run (the whole trace when it holds one)."""
    by_id = {span.span_id: span for span in spans}
    children: dict[str, list[SpanRecord]] = {}
    for span in spans:
        if span.parent_id is not None and span.parent_id in by_id:
            children.setdefault(span.parent_id, []).append(span)

    def inside_agent(span: SpanRecord) -> bool:
        seen: set[str] = set()
        parent = by_id.get(span.parent_id or "")
        while parent is not None and parent.span_id not in seen:
            if parent.kind == "agent":
                return True
            seen.add(parent.span_id)
            parent = by_id.get(parent.parent_id or "")
        return False

    tops = sorted(
        (span for span in spans if span.kind == "agent" and not inside_agent(span)),
        key=lambda s: (s.start_ns, s.end_ns),
    )
    if len(tops) < 2:
        return [spans]
    runs: list[tuple[list[tuple[str, str | None]], str | None, list[SpanRecord]]] = []
    for top in tops:
        asked: list[tuple[str, str | None]] = [(m.role, m.content) for m in input_messages_of(top)]
        first = next((text for role, text in asked if role == "user"), None)
        if runs and (
            not asked  # an agent span that records no input: part of the run before it
            or (first == runs[-1][1] and asked != runs[-1][0])  # a handoff: a longer history
        ):
            runs[-1][2].append(top)
            continue
        runs.append((asked, first, [top]))
    if len(runs) < 2:
        return [spans]
    pieces = []
    for _, _, agents in runs:
        piece: list[SpanRecord] = []
        stack = list(agents)
        while stack:
            span = stack.pop()
            piece.append(span)
            stack.extend(children.get(span.span_id, []))
        pieces.append(sorted(piece, key=lambda s: (s.start_ns, s.end_ns)))
    return pieces


def _stray(trace_id: str, spans: list[SpanRecord], traces: Mapping[str, list[SpanRecord]]) -> str:
    """Why a trace with no user message and no case name is there, as far as one can tell."""
    ids = {span.span_id for span in spans}
    roots = [span.name for span in spans if span.parent_id is None or span.parent_id not in ids]
    start = min(span.start_ns for span in spans)
    during = next(
        (
            other
            for other, others in traces.items()
            if other != trace_id
            and min(s.start_ns for s in others) <= start <= max(s.end_ns for s in others)
        ),
        None,
    )
    if during is None:
        return "no user message and no tui_eval.case"
    shown = ", ".join(roots[:3]) + (f" and {len(roots) - 3} more" if len(roots) > 3 else "")
    return (
        f"{shown} {'has' if len(roots) == 1 else 'have'} no parent and ran during trace "
        f"{during}: spans made in a thread pool (or another task) without context "
        "propagation start a trace of their own; pass the run's OpenTelemetry context to the "
        "thread (contextvars.copy_context().run, or opentelemetry-instrumentation-threading) "
        "and record again"
    )


__all__ = ["RecordedCase", "RecordedRuns", "RunSpans", "TraceRuns", "recorded_cases", "trace_runs"]

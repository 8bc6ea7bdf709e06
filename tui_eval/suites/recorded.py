"""Suites over recorded traces: YAML `recorded: FILE` in place of `agent:`.

Every trace of the OTLP JSON file is one sample of the case whose `input` equals the
trace's first user message, or whose `name` is the trace's `tui_eval.case` attribute. The
samples' runs are built from the spans; checks and judges run on them and no agent is
ever called.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tui_eval.agents.adapters.otlp import TraceFileError, load_traces
from tui_eval.agents.adapters.spans import (
    SpanRecord,
    case_name_of,
    first_user_message,
    run_from_spans,
)
from tui_eval.agents.messages import RunResult, input_text
from tui_eval.agents.providers.context import current_sample
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
    """`cases` as recorded cases (one sample per matching trace) and their agent source.

    Raises:
        TraceFileError: the file cannot be read, or a trace matches no case (it would be
            lost otherwise); the message names the file and the trace.
    """
    traces = load_traces(file)
    by_input = {input_text(case.input): case.label for case in cases}
    names = {case.label for case in cases}
    runs: dict[str, list[RunResult]] = {case.label: [] for case in cases}
    unmatched: list[str] = []
    for trace_id, spans in traces.items():
        label = match(spans, names, by_input)
        if label is None:
            unmatched.append(f"{trace_id} ({one_line(first_user_message(spans) or '', 60)!r})")
            continue
        runs[label].append(run_from_spans(spans))
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


def match(spans: Sequence[SpanRecord], names: set[str], by_input: dict[str, str]) -> str | None:
    """The case a trace belongs to: named by `tui_eval.case`, else by its first user message."""
    named = case_name_of(spans)
    if named is not None and named in names:
        return named
    first = first_user_message(spans)
    if first is not None:
        return by_input.get(first)
    return None


__all__ = ["RecordedCase", "RecordedRuns", "TraceFileError", "recorded_cases"]

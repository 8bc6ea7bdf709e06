"""Trajectories from OpenTelemetry spans, collected in process (`pip install 'tui-eval[otel]'`;
README: "Agents from other frameworks").

`capture(fn)` runs `fn(input)` in a fresh trace and collects its spans with a processor added
to the global `TracerProvider`: samples never see each other's spans, the application's
exporters keep working. Spans starting a trace of their own meanwhile (a thread pool without
the context) are reported, not collected.
"""

from __future__ import annotations

import inspect
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from tui_eval.agents.adapters import to_run_result
from tui_eval.agents.adapters.install import charge_unmetered, requests_so_far, require
from tui_eval.agents.adapters.spans import SpanRecord, run_from_spans, span_usages
from tui_eval.agents.http.context import current_sample
from tui_eval.agents.messages import RunResult
from tui_eval.agents.run_spec import AgentCall, Input, RunSpec, is_async_callable

SAMPLE_SPAN = "tui_eval.sample"
"""The root span `capture` opens around each call (not part of the trajectory)."""


def capture(fn: Callable[[Any], Any], *, tracer_provider: Any = None) -> CapturedAgent:
    """An agent source running `fn(input)` while collecting its OpenTelemetry spans.

    Args:
        fn: a sync or async function of the case's input.
        tracer_provider: an SDK `TracerProvider` to collect from (default: the global one).
    """
    return CapturedAgent(fn, tracer_provider)


class CapturedAgent:
    """What `capture` returns."""

    def __init__(self, fn: Callable[[Any], Any], tracer_provider: Any = None) -> None:
        self.fn = fn
        self._provider = tracer_provider
        self.name = getattr(fn, "__name__", "otel-agent")

    def __repr__(self) -> str:
        return f"otel.capture({self.name!r})"

    async def run(self, input: Input) -> RunResult:
        """Call the function once in a trace of its own and build its run from the spans."""
        require("opentelemetry.sdk.trace", "otel")
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        provider, collector = _collector(self._provider)
        tracer = provider.get_tracer("tui_eval")
        since = requests_so_far()
        start = time.perf_counter()
        # An empty parent context: a new trace id, whatever trace the caller is in.
        with tracer.start_as_current_span(SAMPLE_SPAN, context=otel_context.Context()) as root:
            trace_id = root.get_span_context().trace_id
            spans = collector.open(trace_id)
            try:
                if is_async_callable(self.fn):
                    value = await self.fn(input)
                else:
                    parent = trace.set_span_in_context(root)
                    value = await anyio.to_thread.run_sync(
                        _in_context, self.fn, input, parent, abandon_on_cancel=True
                    )
                if inspect.isawaitable(value):
                    value = await value
            finally:
                strays = collector.close(trace_id)
        if strays:
            _warn_lost(strays)
        latency_ms = (time.perf_counter() - start) * 1000
        charge_unmetered(span_usages(spans), since=since)
        return merge(to_run_result(value, input, latency_ms), spans)

    def sample_runner(self) -> AgentCall:
        """The per-sample call."""

        async def run(spec: RunSpec) -> RunResult:
            return await self.run(spec.input)

        return run


def merge(run: RunResult, spans: list[SpanRecord]) -> RunResult:
    """`run` (from the function's return value) completed with what its spans recorded."""
    if not spans:
        return run
    traced = run_from_spans(spans, output=run.output)
    if not run.tool_calls and traced.tool_calls:
        run.tool_calls = traced.tool_calls
        users = [m for m in run.messages if m.role in ("system", "user")]
        run.messages = [*users, *[m for m in traced.messages if m.role not in ("system", "user")]]
    if traced.turns and (
        not run.usage.known or (run.usage.total_tokens == 0 and traced.usage.total_tokens)
    ):
        run.usage = traced.usage
    if traced.turns:
        run.turns = max(run.turns, traced.turns)
    if run.stop_reason is None:
        run.stop_reason = traced.stop_reason
    return run


def _warn_lost(count: int) -> None:
    sample = current_sample()
    where = f"case {sample.case_name!r} sample {sample.index}" if sample else "the captured call"
    warnings.warn(
        f"otel.capture: {count} model or tool span(s) started a trace of their own while "
        f"{where} ran, so they are not in its trajectory: spans made in another thread (a "
        "thread pool) lose the OpenTelemetry context. Propagate it: submit "
        "contextvars.copy_context().run(fn, ...) to the pool, or install "
        "opentelemetry-instrumentation-threading",
        UserWarning,
        stacklevel=3,
    )


def _in_context(fn: Callable[[Any], Any], input: Any, parent: Any) -> Any:
    from opentelemetry import context as otel_context

    token = otel_context.attach(parent)
    try:
        return fn(input)
    finally:
        otel_context.detach(token)


class _Collector:
    """A span processor keeping the finished spans of the traces being captured."""

    def __init__(self) -> None:
        self._open: dict[int, list[SpanRecord]] = {}
        self._strays: dict[int, int] = {}
        """Per open trace: GenAI/OpenInference root spans of other traces seen meanwhile."""
        self._lock = threading.Lock()

    def open(self, trace_id: int) -> list[SpanRecord]:
        spans: list[SpanRecord] = []
        with self._lock:
            self._open[trace_id] = spans
            self._strays[trace_id] = 0
        return spans

    def close(self, trace_id: int) -> int:
        """Stop collecting a trace; how many stray spans ended while it was open."""
        with self._lock:
            self._open.pop(trace_id, None)
            return self._strays.pop(trace_id, 0)

    # -- the SDK's SpanProcessor protocol --------------------------------------------
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        return None

    def _on_ending(self, span: Any) -> None:
        return None

    def on_end(self, span: Any) -> None:
        context = span.get_span_context()
        with self._lock:
            bucket = self._open.get(context.trace_id)
            if bucket is None and span.parent is None and _is_model_or_tool(span):
                # A new trace's root while samples run: most likely one of theirs whose
                # context was lost (a thread pool). Which one cannot be known: each is told.
                for trace_id in self._strays:
                    self._strays[trace_id] += 1
        if bucket is None or (span.name == SAMPLE_SPAN and span.parent is None):
            return
        bucket.append(record(span))

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _is_model_or_tool(span: Any) -> bool:
    attributes = span.attributes or {}
    return "gen_ai.operation.name" in attributes or "openinference.span.kind" in attributes


def record(span: Any) -> SpanRecord:
    """An SDK `ReadableSpan` as a `SpanRecord`."""
    from opentelemetry.trace import StatusCode

    context = span.get_span_context()
    attributes = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in (span.attributes or {}).items()
    }
    error = None
    if span.status is not None and span.status.status_code == StatusCode.ERROR:
        error = span.status.description or str(attributes.get("error.type") or "")
        for event in span.events or ():
            if event.name == "exception":
                message = (event.attributes or {}).get("exception.message")
                kind = (event.attributes or {}).get("exception.type")
                if not error and (message or kind):
                    error = f"{kind}: {message}" if kind else str(message)
        error = error or "error"
    parent = span.parent
    return SpanRecord(
        trace_id=f"{context.trace_id:032x}",
        span_id=f"{context.span_id:016x}",
        parent_id=f"{parent.span_id:016x}" if parent is not None else None,
        name=str(span.name),
        start_ns=int(span.start_time or 0),
        end_ns=int(span.end_time or 0),
        attributes=attributes,
        error=error,
    )


COLLECTOR_ATTRIBUTE = "tui_eval_collector"
"""Where a tracer provider keeps tui-eval's processor (OpenTelemetry cannot list them)."""


def _collector(provider: Any = None) -> tuple[Any, _Collector]:
    """The tracer provider spans are collected from, with our processor added once."""
    from opentelemetry import trace

    if provider is None:
        provider = trace.get_tracer_provider()
        if not hasattr(provider, "add_span_processor"):
            from opentelemetry.sdk.trace import TracerProvider

            trace.set_tracer_provider(TracerProvider())
            provider = trace.get_tracer_provider()
    collector = getattr(provider, COLLECTOR_ATTRIBUTE, None)
    if not isinstance(collector, _Collector):
        collector = _Collector()
        provider.add_span_processor(collector)
        setattr(provider, COLLECTOR_ATTRIBUTE, collector)
    return provider, collector

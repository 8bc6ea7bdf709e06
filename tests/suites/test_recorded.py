"""Recorded OTLP JSON traces as suites: `recorded: FILE` and `tui-eval import otel`."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.cli_in_process import cli
from tui_eval import Report, evaluate
from tui_eval.suites.declarative import SuiteFileError, load_yaml_suite
from tui_eval.suites.recorded import RecordedRuns

CITIES = ["Tokyo", "Paris", "Lima", "Oslo", "Cairo", "Quito", "Hanoi", "Perth", "Rome", "Kyiv"]


def attr(key: str, value: object) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, list):
        return {
            "key": key,
            "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}},
        }
    return {"key": key, "value": {"stringValue": str(value)}}


def span(
    trace: str,
    n: int,
    name: str,
    start: int,
    attrs: dict,
    parent: str | None = None,
    error: str | None = None,
) -> dict:
    raw = {
        "traceId": trace,
        "spanId": f"{n:016x}",
        "name": name,
        "startTimeUnixNano": str(start * 1_000_000),
        "endTimeUnixNano": str((start + 5) * 1_000_000),
        "attributes": [attr(k, v) for k, v in attrs.items()],
        "status": {"code": 2, "message": error} if error else {},
    }
    if parent:
        raw["parentSpanId"] = parent
    return raw


def trace_spans(i: int, city: str, *, named: bool) -> list[dict]:
    """One agent run: invoke_agent > chat, execute_tool get_weather, chat (GenAI);
    odd traces also call an OpenInference `search` tool that fails."""
    trace = f"{i + 1:032x}"
    root = f"{i * 10 + 1:016x}"
    question = f"Weather in {city}?"
    agent_attrs: dict = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        ),
    }
    if named:
        agent_attrs["tui_eval.case"] = f"case-{city}"
    spans = [
        span(trace, i * 10 + 1, "invoke_agent weather", 0, agent_attrs),
        span(
            trace,
            i * 10 + 2,
            "chat m",
            1,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.usage.input_tokens": 30 + i,
                "gen_ai.usage.output_tokens": 5,
            },
            root,
        ),
        span(
            trace,
            i * 10 + 3,
            "execute_tool get_weather",
            10,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": f"call-{i}",
                "gen_ai.tool.call.arguments": json.dumps({"city": city}),
                "gen_ai.tool.call.result": json.dumps({"temp_c": i}),
            },
            root,
        ),
    ]
    if i % 2:
        spans.append(
            span(
                trace,
                i * 10 + 4,
                "search",
                20,
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": "search",
                    "tool.parameters": json.dumps({"q": city}),
                },
                root,
                error="index offline",
            )
        )
    spans.append(
        span(
            trace,
            i * 10 + 5,
            "chat m",
            30,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": 10,
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": f"It is {i} °C in {city}."}],
                        }
                    ]
                ),
            },
            root,
        )
    )
    return spans


def twenty_traces() -> list[list[dict]]:
    # 10 cities × 2 traces; the first two cities' traces name their case instead.
    return [trace_spans(i, CITIES[i % 10], named=(i % 10) < 2) for i in range(20)]


def otlp(traces: list[list[dict]]) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "weather-agent")]},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
            }
            for spans in traces
        ]
    }


SUITE = """\
name: recorded-weather
recorded: {file}
checks:
  - tool_called: get_weather
cases:
{cases}
"""


def write_suite(folder: Path, file: str) -> Path:
    cases = []
    for index, city in enumerate(CITIES):
        if index < 2:
            cases.append(
                f"  - name: case-{city}\n    input: ask about {city}\n    checks: [{{contains: {city}}}]"
            )
        else:
            cases.append(
                f"  - input: 'Weather in {city}?'\n    checks: [{{contains: {city}}}, {{no_error: true}}]"
            )
    path = folder / "suite.yaml"
    path.write_text(SUITE.format(file=file, cases="\n".join(cases)), encoding="utf-8")
    return path


def test_twenty_recorded_traces_evaluate_with_no_agent_call(tmp_path: Path):
    (tmp_path / "traces.json").write_text(json.dumps(otlp(twenty_traces())), encoding="utf-8")
    suite = load_yaml_suite(write_suite(tmp_path, "traces.json"))
    assert isinstance(suite.agent, RecordedRuns)  # the only "agent": it returns the traces
    assert suite.total_samples == 20
    report = anyio.run(evaluate, suite.agent, suite.cases)
    samples = [s for case in report.cases for s in case.samples]
    assert len(samples) == 20
    by_case = {case.name: case for case in report.cases}
    # The trajectories are the spans': arguments, results, failures, usage, output.
    tokyo = by_case["case-Tokyo"]
    assert [s.run.tool_calls[0].result for s in tokyo.samples] == [{"temp_c": 0}, {"temp_c": 10}]
    for case in report.cases:
        for sample in case.samples:
            run = sample.run
            i = run.tool_calls[0].result["temp_c"]
            city = CITIES[i % 10]
            assert run.tool_calls[0].arguments == {"city": city}
            assert run.tool_calls[0].id == f"call-{i}"
            assert run.tool_names == (["get_weather", "search"] if i % 2 else ["get_weather"])
            assert run.output == f"It is {i} °C in {city}."
            assert (run.usage.input_tokens, run.usage.output_tokens) == (80 + i, 15)
            assert run.turns == 2 and run.stop_reason == "stop"
            if i % 2:
                assert run.tool_calls[1].error == "index offline"
    # Odd traces' failed search fails no_error; the named cases have no no_error check.
    failing = sorted(c.name for c in report.cases if not c.passed)
    assert failing == sorted(f"Weather in {CITIES[k]}?" for k in (3, 5, 7, 9))
    assert by_case["case-Paris"].passed and by_case["case-Tokyo"].passed


def test_json_lines_traces_and_unmatched_traces(tmp_path: Path):
    traces = twenty_traces()
    lines = "\n".join(json.dumps(otlp([t])) for t in traces)
    (tmp_path / "traces.jsonl").write_text(lines + "\n", encoding="utf-8")
    suite = load_yaml_suite(write_suite(tmp_path, "traces.jsonl"))
    assert suite.total_samples == 20
    extra = trace_spans(40, "Atlantis", named=False)
    (tmp_path / "more.jsonl").write_text(lines + "\n" + json.dumps(otlp([extra])), encoding="utf-8")
    with pytest.raises(SuiteFileError, match=r"1 trace\(s\) match no case: .*Weather in Atlantis"):
        load_yaml_suite(write_suite(tmp_path, "more.jsonl"))
    (tmp_path / "bad.json").write_text('{"spans": []}', encoding="utf-8")
    with pytest.raises(SuiteFileError, match=r"bad.json: not OTLP JSON"):
        load_yaml_suite(write_suite(tmp_path, "bad.json"))


def test_import_otel_writes_a_suite_that_runs_headless(tmp_path: Path):
    (tmp_path / "traces.json").write_text(json.dumps(otlp(twenty_traces())), encoding="utf-8")
    written = cli("import", "otel", "traces.json", "-o", "suites/weather.yaml", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    suite = load_yaml_suite(tmp_path / "suites" / "weather.yaml")
    assert len(suite.cases) == 10 and suite.total_samples == 20
    assert {c.label for c in suite.cases} >= {"case-Tokyo", "case-Paris", "Weather in Lima?"}
    ran = cli("run", "suites", "--headless", "--json", "out.json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = Report.load(tmp_path / "out.json")
    assert sum(len(c.samples) for c in report.cases) == 20
    assert all(s.run is not None and s.run.tool_calls for c in report.cases for s in c.samples)
    again = cli("import", "otel", "traces.json", "-o", "suites/weather.yaml", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def _user(question: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])


def _agent_run(
    trace: str, first: int, start: int, question: str, parent: str | None, *, history=False
) -> list:
    """An invoke_agent span holding a tool call, as one agent run writes it (`history`: an
    agent handed the conversation so far, as in a handoff)."""
    agent = f"{first:016x}"
    messages = json.loads(_user(question))
    if history:
        messages.append(
            {"role": "assistant", "parts": [{"type": "text", "content": "Over to you."}]}
        )
    return [
        span(
            trace,
            first,
            "invoke_agent weather",
            start,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.input.messages": json.dumps(messages),
            },
            parent,
        ),
        span(
            trace,
            first + 1,
            "execute_tool get_weather",
            start + 1,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": json.dumps({"city": question.split()[-1][:-1]}),
            },
            agent,
        ),
    ]


def test_several_runs_under_one_root_span_are_split_into_samples(tmp_path: Path):
    trace = "f" * 32
    root = span(trace, 1, "nightly batch", 0, {})
    spans = [
        root,
        *_agent_run(trace, 10, 10, "Weather in Tokyo?", root["spanId"]),
        *_agent_run(trace, 20, 20, "Weather in Paris?", root["spanId"]),
        *_agent_run(trace, 30, 30, "Weather in Tokyo?", root["spanId"]),  # asked again
    ]
    # A handoff: two agents of one run read the same first user message; one sample.
    handoff = "e" * 32
    spans += _agent_run(handoff, 40, 100, "Weather in Lima?", None)
    spans += _agent_run(handoff, 50, 110, "Weather in Lima?", None, history=True)
    (tmp_path / "traces.json").write_text(json.dumps(otlp([spans])), encoding="utf-8")
    done = cli("import", "otel", "traces.json", "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    split = f"trace {trace}: 3 agent runs under one root span, split into 3 samples"
    assert split in done.stderr
    suite = load_yaml_suite(tmp_path / "suite.yaml")
    assert [(c.label, c.samples) for c in suite.cases] == [
        ("Weather in Tokyo?", 2),
        ("Weather in Paris?", 1),
        ("Weather in Lima?", 1),
    ]
    report = anyio.run(evaluate, suite.agent, suite.cases)
    calls = {
        c.name: [[t.arguments for t in s.run.tool_calls] for s in c.samples] for c in report.cases
    }
    assert calls == {
        "Weather in Tokyo?": [[{"city": "Tokyo"}], [{"city": "Tokyo"}]],
        "Weather in Paris?": [[{"city": "Paris"}]],
        "Weather in Lima?": [[{"city": "Lima"}, {"city": "Lima"}]],
    }


def test_spans_without_their_run_s_context_are_named_as_such(tmp_path: Path):
    run = _agent_run("1" * 32, 10, 10, "Weather in Tokyo?", None)
    # A tool run in a thread pool without the context: a trace of its own, no parent.
    orphan = span(
        "2" * 32,
        50,
        "execute_tool get_weather",
        12,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"},
    )
    (tmp_path / "traces.json").write_text(json.dumps(otlp([run, [orphan]])), encoding="utf-8")
    done = cli("import", "otel", "traces.json", "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    note = (
        f"trace {'2' * 32}: execute_tool get_weather has no parent and ran during trace {'1' * 32}"
    )
    assert note in done.stderr and "context propagation" in done.stderr
    with pytest.raises(SuiteFileError, match="ran during trace 1{32}.*context propagation"):
        load_yaml_suite(tmp_path / "suite.yaml")


CONSOLE_SPAN = {
    "name": "chat gpt-4o",
    "context": {"trace_id": "0x" + "5" * 32, "span_id": "0x" + "6" * 16, "trace_state": "[]"},
    "kind": "SpanKind.CLIENT",
    "parent_id": None,
    "start_time": "2025-01-01T00:00:00.000000Z",
    "end_time": "2025-01-01T00:00:01.000000Z",
    "status": {"status_code": "UNSET"},
    "attributes": {"gen_ai.operation.name": "chat"},
    "events": [],
    "links": [],
    "resource": {"attributes": {"service.name": "agent"}, "schema_url": ""},
}


def test_files_that_are_not_otlp_say_what_they_are(tmp_path: Path):
    # ConsoleSpanExporter: one indented JSON object per span, one after another.
    console = "\n".join(json.dumps(CONSOLE_SPAN, indent=4) for _ in range(2)) + "\n"
    (tmp_path / "console.txt").write_text(console, encoding="utf-8")
    done = cli("import", "otel", "console.txt", "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "console.txt: OpenTelemetry's console exporter output" in done.stderr
    assert "resourceSpans" in done.stderr and "not valid JSON" not in done.stderr
    (tmp_path / "traces.pb").write_bytes(b"\n\x8f\x01\n\x1a\n\x18\xff\xfe\x00binary")
    done = cli("import", "otel", "traces.pb", "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "traces.pb: not text" in done.stderr and "OTLP JSON" in done.stderr

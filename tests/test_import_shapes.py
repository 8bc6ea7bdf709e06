"""Hostile and malformed import sources: an alias bomb is refused, and a value of the wrong
shape is an error naming the file and the place, never a bare TypeError or ValueError."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_in_process import cli
from tui_eval.suites.declarative import SuiteFileError, load_yaml_suite

# Six levels of ten aliases: a few hundred bytes that expand to a million values.
BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]\n"
        for previous, name in zip("abcde", "bcdef", strict=True)
    )
    + "cases:\n- name: boom\n  inputs: {v: *f}\n  evaluators: [{Contains: *f}, {Python: *f}]\n"
)

BARE = ("TypeError", "ValueError", "OverflowError", "AttributeError", "KeyError")


def _fails(tmp_path: Path, kind: str, name: str, content: str) -> str:
    (tmp_path / name).write_text(content, encoding="utf-8")
    done = cli("import", kind, name, "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert not (tmp_path / "suite.yaml").exists()
    assert not any(bare in done.stderr for bare in BARE), done.stderr
    return done.stderr


def test_a_yaml_alias_bomb_is_refused_by_the_importer_and_the_suite_loader(tmp_path: Path):
    assert len(BOMB) < 400  # the file itself is small
    stderr = _fails(tmp_path, "pydantic-evals", "bomb.yaml", BOMB)
    assert "bomb.yaml:6: not valid YAML: YAML aliases expand" in stderr
    suite = tmp_path / "suite_bomb.yaml"
    suite.write_text(
        BOMB[: BOMB.index("cases:")]
        + "model: openai:gpt-4o-mini\ncases:\n- input: hi\n  metadata: {v: *f}\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteFileError, match=r"suite_bomb.yaml:6: invalid YAML: YAML aliases"):
        load_yaml_suite(suite)


def test_anchors_reused_many_times_still_load(tmp_path: Path):
    suite = tmp_path / "shared.yaml"
    script = ", ".join(f"{{text: step {i}}}" for i in range(200))
    cases = "".join(f"- {{input: q{i}, script: *script, checks: *common}}\n" for i in range(300))
    suite.write_text(
        "cases:\n"
        f"- {{input: first, script: &script [{script}], checks: &common [{{contains: a}}]}}\n"
        f"{cases}",
        encoding="utf-8",
    )
    assert len(load_yaml_suite(suite).cases) == 301


@pytest.mark.parametrize(
    ("content", "place"),
    [
        ("cases: []\nevaluators: 5\n", "d.yaml: evaluators: expected a list, got 5"),
        (
            "cases:\n- name: a\n  inputs: x\n  metadata: [1, 2]\n",
            "d.yaml: case 1 ('a'): metadata: expected a mapping, got [1, 2]",
        ),
        (
            "cases:\n- name: a\n  inputs: x\n  evaluators: {Equals: 1}\n",
            "d.yaml: case 1 ('a'): evaluators: expected a list",
        ),
        ("cases: []\nreport_evaluators: 7\n", "d.yaml: report_evaluators: expected a list"),
    ],
)
def test_pydantic_evals_shapes(tmp_path: Path, content: str, place: str):
    assert place in _fails(tmp_path, "pydantic-evals", "d.yaml", content)


def test_inspect_metadata_that_is_not_a_mapping(tmp_path: Path):
    line = json.dumps({"input": "q", "target": "a", "metadata": "abc"})
    stderr = _fails(tmp_path, "inspect", "data.jsonl", line + "\n")
    assert "data.jsonl:1: metadata: not a mapping or a JSON object" in stderr


def _span(**fields: object) -> dict[str, object]:
    span: dict[str, object] = {
        "traceId": "a" * 32,
        "spanId": "b" * 16,
        "name": "chat",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [],
    }
    span.update(fields)
    return span


def _otlp(*, scope_spans: object = None, span: dict[str, object] | None = None) -> str:
    if scope_spans is None:
        scope_spans = [{"spans": [span]}]
    return json.dumps({"resourceSpans": [{"scopeSpans": scope_spans}]})


@pytest.mark.parametrize(
    ("document", "place"),
    [
        (
            _otlp(span=_span(attributes=[{"key": "gen_ai.x", "value": {"doubleValue": "abc"}}])),
            "t.json: resourceSpans[0] scopeSpans[0] span 1: attribute 'gen_ai.x': "
            "doubleValue 'abc' is not a number",
        ),
        (
            _otlp(span=_span(startTimeUnixNano=1e400)).replace("Infinity", "1e400"),
            "t.json: resourceSpans[0] scopeSpans[0] span 1: startTimeUnixNano 1e400 is not "
            "a time in nanoseconds",
        ),
        (
            _otlp(scope_spans={"spans": []}),
            "t.json: resourceSpans[0]: scopeSpans: expected a list, got an object",
        ),
        (
            _otlp(scope_spans=[{"spans": {"a": 1}}]),
            "t.json: resourceSpans[0] scopeSpans[0]: spans: expected a list, got an object",
        ),
    ],
)
def test_otlp_shapes(tmp_path: Path, document: str, place: str):
    assert place in _fails(tmp_path, "otel", "t.json", document)
    # A suite recording the same file says the same, as a suite file error.
    (tmp_path / "s.yaml").write_text("recorded: t.json\ncases: [{input: hi}]\n", encoding="utf-8")
    detail = re.escape(place.split(": ", 1)[1])
    with pytest.raises(SuiteFileError, match=rf"s\.yaml: field 'recorded': \S*t\.json: {detail}"):
        load_yaml_suite(tmp_path / "s.yaml")

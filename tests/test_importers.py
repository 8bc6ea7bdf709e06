"""`tui-eval import pydantic-evals` and `tui-eval import inspect`: other tools' datasets as
suites that load and run; whatever has no tui-eval form is listed, never dropped."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import anyio
import pytest
import yaml

from tests.cli_in_process import cli
from tui_eval import evaluate
from tui_eval.suites.declarative import load_yaml_suite

DATASET = """\
# yaml-language-server: $schema=dataset_schema.json
name: capitals
cases:
- name: france
  inputs:
    country: France
  expected_output: Paris
  metadata:
    difficulty: easy
  evaluators:
  - EqualsExpected
  - Contains:
      value: paris
      case_sensitive: false
- name: japan
  inputs:
    country: Japan
  expected_output: Tokyo
  evaluators:
  - Equals: Tokyo
  - IsInstance: str
- name: peru
  inputs:
    country: Peru
  expected_output: Lima
  evaluators:
  - Python: {expression: "len(output) < 10"}
evaluators:
- MaxDuration: 2.5
- LLMJudge:
    rubric: Names the capital city only
    model: python:judge_models:judge
    include_expected_output: true
- IsInstance: str
"""

AGENT = """\
from tui_eval.checks import verdict_reply
from tui_eval.testing import ScriptedProvider, text

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima"}

async def capital(inputs):
    return CAPITALS[inputs["country"]]
"""

JUDGES = """\
from tui_eval.checks import verdict_reply
from tui_eval.testing import ScriptedProvider, text

judge = ScriptedProvider([text(verdict_reply(0.9, "only the city")) for _ in range(3)])
"""


def test_a_pydantic_evals_dataset_with_five_evaluator_kinds_imports_and_runs(tmp_path: Path):
    (tmp_path / "dataset.yaml").write_text(DATASET, encoding="utf-8")
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "capital_agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "suites" / "judge_models.py").write_text(JUDGES, encoding="utf-8")
    done = cli(
        "import",
        "pydantic-evals",
        "dataset.yaml",
        "-o",
        "suites/capitals.yaml",
        "--agent",
        "capital_agent:capital",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    # The unmapped evaluator and option are listed, on stderr and in the suite's header.
    assert "case 3 ('peru') evaluators[0]: Python" in done.stderr
    assert "LLMJudge options include_expected_output (ignored)" in done.stderr
    written = (tmp_path / "suites" / "capitals.yaml").read_text(encoding="utf-8")
    assert "#   - case 3 ('peru') evaluators[0]: Python" in written
    document = yaml.safe_load(written)
    assert document["checks"] == [
        {"max_latency": 2500.0},
        {
            "llm_judge": {
                "rubric": "Names the capital city only",
                "model": "python:judge_models:judge",
            }
        },
        {"is_instance": "str"},
    ]
    assert document["cases"][0] == {
        "input": {"country": "France"},
        "name": "france",
        "expected": "Paris",
        "metadata": {"difficulty": "easy"},
        "checks": [
            {"equals_expected": True},
            {"contains": {"value": "paris", "ignore_case": True}},
        ],
    }
    suite = load_yaml_suite(tmp_path / "suites" / "capitals.yaml")
    assert suite.name == "capitals"
    report = anyio.run(evaluate, suite.agent, suite.cases)
    assert report.passed, str(report)
    france = report.cases[0].samples[0]
    assert [c.name for c in france.checks] == [
        "max_latency",
        "llm_judge",
        "is_instance",
        "equals_expected",
        "contains",
    ]
    assert france.checks[1].reason == "only the city"


def test_an_inspect_jsonl_dataset_imports(tmp_path: Path):
    samples = [
        {"id": "q1", "input": "Capital of France?", "target": "Paris", "metadata": {"level": 1}},
        {
            "id": 2,
            "input": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "2 + 2?"}]},
            ],
            "target": ["4", "four"],
        },
        {"id": "q3", "input": "Pick one", "target": "A", "choices": ["yes", "no"]},
    ]
    (tmp_path / "data.jsonl").write_text(
        "\n".join(json.dumps(s) for s in samples) + "\n", encoding="utf-8"
    )
    done = cli(
        "import",
        "inspect",
        "data.jsonl",
        "-o",
        "suite.yaml",
        "--model",
        "openai:gpt-4o-mini",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "choices" not in done.stderr  # multiple choice is imported as such
    document = yaml.safe_load((tmp_path / "suite.yaml").read_text(encoding="utf-8"))
    first, second, third = document["cases"]
    assert first == {
        "input": "Capital of France?",
        "name": "q1",
        "metadata": {"level": 1},
        "expected": "Paris",
        "checks": [{"contains": {"value": "Paris", "ignore_case": True}}],
    }
    assert second["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2 + 2?"},
    ]
    assert second["checks"] == [
        {
            "any_of": [
                {"contains": {"value": "4", "ignore_case": True}},
                {"contains": {"value": "four", "ignore_case": True}},
            ]
        }
    ]
    assert third["metadata"] == {"choices": ["yes", "no"]}
    assert third["checks"] == [{"choice": {"answer": "A", "options": 2}}]
    assert "A) yes\nB) no" in third["input"]
    suite = load_yaml_suite(tmp_path / "suite.yaml")
    assert [c.label for c in suite.cases] == ["q1", "2", "q3"]
    assert [m.role for m in suite.cases[1].input] == ["system", "user"]


def test_import_errors_name_the_file_and_line(tmp_path: Path):
    (tmp_path / "data.jsonl").write_text('{"input": "a"}\n{"target": "b"}\n', encoding="utf-8")
    done = cli("import", "inspect", "data.jsonl", "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "data.jsonl:2: an Inspect sample needs an `input`" in done.stderr
    assert not (tmp_path / "suite.yaml").exists()
    (tmp_path / "d.yaml").write_text("cases: 3\n", encoding="utf-8")
    done = cli("import", "pydantic-evals", "d.yaml", "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "d.yaml: not a pydantic-evals dataset" in done.stderr


SCORING_DATASET = """\
cases:
- name: france
  inputs: {country: France}
  expected_output: Paris
  evaluators:
  - LLMJudge:
      rubric: Sounds like a travel guide
      assertion: false
      score: {include_reason: true}
- name: japan
  inputs: {country: Japan}
  expected_output: Tokyo
  evaluators:
  - LLMJudge:
      rubric: Answers in one word
      model: google-gla:gemini-2.0-flash
  - LLMJudge: {rubric: Never used, assertion: false}
evaluators:
- LLMJudge:
    rubric: Names a city
    model: openai:gpt-4o-mini
    score: {include_reason: true}
    assertion: {evaluation_name: names_city}
"""

LOW_JUDGE = """\
from tui_eval.checks import verdict_reply
from tui_eval.testing import ScriptedProvider, text

def judge():
    return ScriptedProvider([text(verdict_reply(0.2, "not much of a guide"))])
"""


def test_a_non_gating_judge_stays_a_score_and_unknown_judge_models_are_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "dataset.yaml").write_text(SCORING_DATASET, encoding="utf-8")
    (tmp_path / "capital_agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "low_judge.py").write_text(LOW_JUDGE, encoding="utf-8")
    done = cli(
        "import",
        "pydantic-evals",
        "dataset.yaml",
        "-o",
        "capitals.yaml",
        "--agent",
        "capital_agent:capital",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "capitals.yaml").read_text(encoding="utf-8")
    document = yaml.safe_load(written)
    # `assertion: false` with a score: a score that does not gate (threshold 0).
    assert document["cases"][0]["checks"] == [
        {"llm_judge": {"rubric": "Sounds like a travel guide", "threshold": 0.0}}
    ]
    # An assertion and a score: one gating judge (its score is kept on every result).
    assert document["checks"] == [
        {
            "llm_judge": {
                "rubric": "Names a city",
                "model": "openai:gpt-4o-mini",
                "name": "names_city",
            }
        }
    ]
    # A judge model tui-eval cannot call is not copied; the suite says what to set.
    assert document["cases"][1]["checks"] == [{"llm_judge": {"rubric": "Answers in one word"}}]
    assert "google-gla:gemini-2.0-flash" not in yaml.safe_dump(document)
    assert "'google-gla:gemini-2.0-flash'" in done.stderr
    assert "# Set `judge_model:" in written and "google-gla:gemini-2.0-flash" in written
    # Neither a score nor an assertion: nothing to check, and said so.
    assert "case 2 ('japan') evaluators[1]: LLMJudge with `score` and `assertion` both off" in (
        done.stderr
    )
    # The non-gating judge's low score does not fail its sample; it is recorded.
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = load_yaml_suite(tmp_path / "capitals.yaml")
    france = next(c for c in suite.cases if c.label == "france")
    own = france.checks[-1]  # after the suite's shared judge, which needs an API key
    own.model = "python:low_judge:judge"
    report = anyio.run(evaluate, suite.agent, [dataclasses.replace(france, checks=[own])])
    (sample,) = report.cases[0].samples
    judged = next(c for c in sample.checks if c.name == "llm_judge")
    assert judged.score == pytest.approx(0.2) and judged.passed
    assert sample.passed


def test_import_errors_read_as_messages_not_exceptions(tmp_path: Path):
    (tmp_path / "data.jsonl").write_text("{nope\n", encoding="utf-8")
    done = cli("import", "inspect", "data.jsonl", "-o", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("tui-eval import: data.jsonl:1: not valid JSON")
    assert "ImportError" not in done.stderr and "--debug" not in done.stderr
    assert done.stderr.count("\n") == 1

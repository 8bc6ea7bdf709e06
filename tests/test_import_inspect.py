"""`tui-eval import inspect`: Inspect's datasets and eval logs in the forms users pass them
(JSON lines, a JSON array, CSV, `.eval` and `.json` logs), multiple-choice samples kept as
multiple choice, and whatever has no tui-eval form listed."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from tests.cli_in_process import cli
from tui_eval import evaluate
from tui_eval.suites.declarative import load_yaml_suite

MC_SAMPLES: list[dict[str, Any]] = [
    {
        "id": "capital",
        "input": "Capital of France?",
        "choices": ["Paris", "Berlin", "Rome"],
        "target": "A",
    },
    {
        "id": "squares",
        "input": "Which are perfect squares?",
        "choices": ["3", "4", "9", "10"],
        "target": ["B", "C"],
    },
]

# What the agent answers, by the question its prompt holds.
AGENT = """\
ANSWERS = {answers!r}

async def answer(prompt):
    for question, reply in ANSWERS.items():
        if question in prompt:
            return reply
    raise LookupError(prompt)
"""


def _import(tmp_path: Path, name: str, *extra: str) -> tuple[dict[str, Any], str]:
    done = cli("import", "inspect", name, "-o", "suite.yaml", *extra, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load((tmp_path / "suite.yaml").read_text(encoding="utf-8")), done.stderr


def _verdicts(tmp_path: Path, module: str, answers: dict[str, str]) -> dict[str, bool]:
    (tmp_path / f"{module}.py").write_text(AGENT.format(answers=answers), encoding="utf-8")
    document = yaml.safe_load((tmp_path / "suite.yaml").read_text(encoding="utf-8"))
    document["agent"] = f"{module}:answer"
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    suite = load_yaml_suite(tmp_path / "suite.yaml")
    report = anyio.run(evaluate, suite.agent, suite.cases)
    return {case.name: case.passed for case in report.cases}


def test_a_multiple_choice_target_is_the_answer_letter_not_a_substring(tmp_path: Path):
    (tmp_path / "mc.jsonl").write_text(
        "\n".join(json.dumps(s) for s in MC_SAMPLES) + "\n", encoding="utf-8"
    )
    document, stderr = _import(tmp_path, "mc.jsonl")
    first, second = document["cases"]
    # The agent sees the lettered choices and how to answer, as Inspect's
    # multiple_choice() solver shows them.
    assert "Capital of France?" in first["input"]
    assert "A) Paris\nB) Berlin\nC) Rome" in first["input"]
    assert "ANSWER: $LETTER" in first["input"]
    assert "one or more of A,B,C,D" in second["input"]
    assert first["checks"] == [{"choice": {"answer": "A", "options": 3}}]
    assert second["checks"] == [{"choice": {"answer": ["B", "C"], "options": 4}}]
    assert first["expected"] == "A" and first["metadata"] == {
        "choices": ["Paris", "Berlin", "Rome"]
    }
    assert "choices" not in stderr  # imported, not dropped
    # "B) Paris, I am fairly sure." names choice B: it is wrong, whatever letters it holds.
    wrong = _verdicts(
        tmp_path,
        "wrong_answers",
        {"Capital of France?": "B) Paris, I am fairly sure.", "perfect squares": "ANSWER: B"},
    )
    assert wrong == {"capital": False, "squares": False}
    right = _verdicts(
        tmp_path,
        "right_answers",
        {"Capital of France?": "ANSWER: A", "perfect squares": "Thinking...\nANSWER: C, B"},
    )
    assert right == {"capital": True, "squares": True}


def test_input_parts_with_no_tui_eval_form_are_listed(tmp_path: Path):
    sample = {
        "id": "look",
        "input": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image", "image": "data:image/png;base64,iVBORw0KGgo="},
                ],
            },
            {
                "role": "assistant",
                "content": "Let me zoom in.",
                "tool_calls": [{"id": "call_1", "function": "zoom", "arguments": {"x": 2}}],
            },
            {"role": "tool", "content": "a cat", "tool_call_id": "call_1", "function": "zoom"},
            {"role": "user", "content": "And its colour?"},
        ],
        "target": "black",
    }
    (tmp_path / "chat.jsonl").write_text(json.dumps(sample) + "\n", encoding="utf-8")
    document, stderr = _import(tmp_path, "chat.jsonl")
    assert [m["role"] for m in document["cases"][0]["input"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
    ]
    assert "line 1: input message 2 (user): image content" in stderr
    assert "line 1: input message 3 (assistant): tool call zoom" in stderr
    assert "line 1: input message 4 (tool): tool_call_id 'call_1'" in stderr
    header = (tmp_path / "suite.yaml").read_text(encoding="utf-8")
    assert "#   - line 1: input message 2 (user): image content" in header


def _eval_sample(sample: dict[str, Any], epoch: int) -> dict[str, Any]:
    return {
        **sample,
        "epoch": epoch,
        "messages": [{"role": "user", "content": sample["input"]}],
        "output": {"model": "gpt-4o", "choices": []},
        "scores": {"choice": {"value": "C", "answer": "A"}},
        "metadata": {"subject": "geography"},
        "store": {},
        "events": [],
        "attachments": {},
    }


EVAL_HEADER: dict[str, Any] = {
    "version": 2,
    "status": "success",
    "eval": {
        "task": "inspect_evals/mc",
        "model": "openai/gpt-4o",
        "dataset": {"name": "mc", "samples": 2},
        "config": {"epochs": 2},
        "scorers": [{"name": "choice", "options": {}}],
    },
    "plan": {"name": "plan", "steps": [{"solver": "multiple_choice", "params": {"cot": False}}]},
    "results": {"total_samples": 4, "completed_samples": 4, "scores": []},
}


def _write_eval(path: Path) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2}))
        for epoch in (1, 2):
            for sample in MC_SAMPLES:
                archive.writestr(
                    f"samples/{sample['id']}_epoch_{epoch}.json",
                    json.dumps(_eval_sample(sample, epoch)),
                )
        archive.writestr("header.json", json.dumps(EVAL_HEADER))


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_inspect_eval_logs_import_their_samples(tmp_path: Path, suffix: str):
    log = tmp_path / f"2025-01-01T00-00-00_mc_abc{suffix}"
    if suffix == ".eval":
        _write_eval(log)
    else:
        samples = [_eval_sample(s, e) for e in (1, 2) for s in MC_SAMPLES]
        log.write_text(json.dumps({**EVAL_HEADER, "samples": samples}, indent=2), encoding="utf-8")
    document, stderr = _import(tmp_path, log.name)
    assert [c["name"] for c in document["cases"]] == ["capital", "squares"]  # one per sample id
    assert document["cases"][0]["checks"] == [{"choice": {"answer": "A", "options": 3}}]
    assert document["cases"][0]["metadata"] == {
        "subject": "geography",
        "choices": ["Paris", "Berlin", "Rome"],
    }
    # The log's results are not the suite's: said once, not per sample.
    assert "the log's outputs and scores: the suite runs its samples again" in stderr
    assert "epochs: 2" in stderr
    assert "openai/gpt-4o" in stderr
    lines = stderr.splitlines()
    assert len(lines) == 3 and all(
        line.startswith("tui-eval import: not imported: ") for line in lines
    )


def test_a_log_scorer_with_no_tui_eval_form_adds_no_check_and_says_so(tmp_path: Path):
    header = json.loads(json.dumps(EVAL_HEADER))
    header["eval"]["scorers"] = [{"name": "model_graded_fact", "options": {}}]
    header["plan"]["steps"] = [
        {"solver": "system_message", "params": {"template": "Be terse."}},
        {"solver": "generate", "params": {}},
    ]
    samples = [_eval_sample({"id": 1, "input": "2+2?", "target": "4"}, 1)]
    (tmp_path / "log.json").write_text(json.dumps({**header, "samples": samples}), encoding="utf-8")
    document, stderr = _import(tmp_path, "log.json")
    assert document["cases"] == [
        {"input": "2+2?", "name": "1", "metadata": {"subject": "geography"}, "expected": "4"}
    ]
    assert "scorer model_graded_fact" in stderr
    assert "solver system_message" in stderr


def test_json_array_and_csv_datasets_import(tmp_path: Path):
    rows = [
        {"id": "q1", "input": "Capital of France?", "target": "Paris"},
        {"id": "q2", "input": "Capital of Peru?", "target": "Lima", "metadata": {"level": 2}},
    ]
    (tmp_path / "pretty.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    (tmp_path / "flat.json").write_text(json.dumps(rows), encoding="utf-8")
    for name in ("pretty.json", "flat.json"):
        document, _ = _import(tmp_path, name, "--force")
        assert [c["name"] for c in document["cases"]] == ["q1", "q2"]
        assert document["cases"][1]["metadata"] == {"level": 2}
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["id", "input", "target", "choices", "metadata", "notes"])
    writer.writerow(["1", "Capital of Japan?", "A", "Tokyo, Kyoto", '{"level": 1}', "easy"])
    writer.writerow(["2", 'Say "hi",\nthen stop', "hi", "", "", ""])
    (tmp_path / "data.csv").write_text(buffer.getvalue(), encoding="utf-8")
    document, stderr = _import(tmp_path, "data.csv", "--force")
    first, second = document["cases"]
    assert first["name"] == "1" and first["checks"] == [{"choice": {"answer": "A", "options": 2}}]
    assert first["metadata"] == {"level": 1, "choices": ["Tokyo", "Kyoto"]}
    assert second["input"] == 'Say "hi",\nthen stop'
    assert second["checks"] == [{"contains": {"value": "hi", "ignore_case": True}}]
    assert "column notes" in stderr


def test_unreadable_formats_say_what_the_file_is_and_what_is_expected(tmp_path: Path):
    (tmp_path / "data.parquet").write_bytes(b"PAR1\x00\x01\x02")
    done = cli("import", "inspect", "data.parquet", "-o", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "data.parquet" in done.stderr and ".jsonl" in done.stderr and ".eval" in done.stderr
    (tmp_path / "rows.json").write_text(json.dumps([{"question": "q", "answer": "a"}]))
    done = cli("import", "inspect", "rows.json", "-o", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2
    needs = "rows.json: sample 1: an Inspect sample needs an `input` (its fields: question, answer)"
    assert needs in done.stderr
    (tmp_path / "ragged.csv").write_text("input,target\nq,a\nq2,a,extra\n", encoding="utf-8")
    done = cli("import", "inspect", "ragged.csv", "-o", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "ragged.csv:3: this row's fields do not match the header's 2 columns" in done.stderr
    (tmp_path / "broken.eval").write_bytes(b"not a zip at all")
    done = cli("import", "inspect", "broken.eval", "-o", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "broken.eval: not an Inspect `.eval` log" in done.stderr


def test_a_sample_holding_unicode_line_separators_is_one_line(tmp_path):
    """JSON Lines split at \\n only: U+2028 and U+0085 inside a string stay in it."""
    import json

    from tui_eval.importers.inspect_ai import suite_from_inspect

    source = tmp_path / "d.jsonl"
    samples = [{"input": "first\u2028second\u0085third", "target": "x"}, {"input": "b"}]
    lines = [json.dumps(sample, ensure_ascii=False) for sample in samples]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    imported = suite_from_inspect(source)
    assert [case["input"] for case in imported.cases] == ["first\u2028second\u0085third", "b"]

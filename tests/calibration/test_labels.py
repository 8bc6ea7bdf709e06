"""The labels file: where it lives, what a line holds, relabelling, undo, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui_eval import Case, Suite
from tui_eval.agents.messages import Message, RunResult
from tui_eval.calibration.labels import (
    LabelRecord,
    LabelsFileError,
    LabelStore,
    labels_path,
    new_label,
    read_labels,
)


def test_labels_live_beside_the_suite(tmp_path: Path):
    suite = Suite("support bot", cases=[], path=tmp_path / "suites" / "support.py")
    assert labels_path(suite) == tmp_path / "suites" / "__labels__" / "support bot.jsonl"
    odd = Suite("../evil/name", cases=[], path=tmp_path / "s.py")
    assert labels_path(odd).parent == tmp_path / "__labels__"


def test_a_line_holds_the_contract_keys_and_reads_back_equal(tmp_path: Path):
    path = tmp_path / "__labels__" / "s.jsonl"
    store = LabelStore.load(path)
    run = RunResult(output={"answer": 4}, messages=[Message("user", "2+2?")])
    store.put(
        new_label("sum", "llm_judge", {"answer": 4}, "pass", run=run, labeler="ana", note="ok")
    )
    store.put(new_label("tone", "llm_judge", "Sorry!", 0.4, labeler=None, labelled_at=12.5))
    lines = path.read_text().splitlines()
    first, second = (json.loads(line) for line in lines)
    assert first["schema_version"] == 1 and first["case"] == "sum"
    assert first["output"] == {"answer": 4} and first["label"] == "pass"
    assert first["labeler"] == "ana" and isinstance(first["labelled_at"], float)
    assert first["run"]["messages"][0]["content"] == "2+2?" and first["note"] == "ok"
    assert set(second) == {
        "schema_version",
        "case",
        "check",
        "output",
        "label",
        "labeler",
        "labelled_at",
    }
    assert second["label"] == 0.4 and second["labelled_at"] == 12.5
    assert read_labels(path) == list(store)


def test_readers_accept_lines_with_only_the_required_keys(tmp_path: Path):
    path = tmp_path / "l.jsonl"
    path.write_text(
        '{"schema_version": 1, "case": "c", "check": "llm_judge", "output": "hi", '
        '"label": "fail", "labeler": null, "labelled_at": null}\n\n'
    )
    (record,) = read_labels(path)
    assert record.label == "fail" and record.run is None and not record.passed()


def test_relabelling_replaces_in_place_and_undo_restores(tmp_path: Path):
    path = tmp_path / "l.jsonl"
    store = LabelStore.load(path)
    store.put(new_label("a", "j", "x", "pass"))
    store.put(new_label("b", "j", "y", "pass"))
    previous = store.put(new_label("a", "j", "x", "fail"))
    assert previous is not None and previous.label == "pass"
    assert [r.label for r in read_labels(path)] == ["fail", "pass"]  # a stays first
    store.restore(previous.key, previous)
    assert [r.label for r in read_labels(path)] == ["pass", "pass"]
    added = new_label("c", "j", "z", 1.0)
    store.restore(added.key, store.put(added))  # undo of a new label removes it
    assert len(read_labels(path)) == 2
    # Another output of the same case is another label.
    store.put(new_label("a", "j", "x2", "fail"))
    assert len(LabelStore.load(path)) == 3


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not valid JSON"),
        (
            '{"schema_version": 1, "case": "c", "check": "j", "output": 1, "label": "maybe"}',
            "label",
        ),
        ('{"schema_version": 1, "case": "c", "check": "j", "output": 1, "label": 1.5}', "label"),
        (
            '{"schema_version": 1, "case": "c", "check": "j", "label": "pass", "colour": 1}',
            "colour",
        ),
        ('{"schema_version": 9, "case": "c", "check": "j", "label": "pass"}', "schema_version"),
    ],
)
def test_a_bad_line_is_an_error_naming_file_and_line(tmp_path: Path, line: str, problem: str):
    path = tmp_path / "l.jsonl"
    good = '{"schema_version": 1, "case": "c", "check": "j", "output": 0, "label": "pass"}'
    path.write_text(good + "\n" + line + "\n")
    with pytest.raises(LabelsFileError) as caught:
        read_labels(path)
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)
    assert problem in str(caught.value)
    assert path.read_text().startswith(good)  # nothing lost


def test_score_labels_pass_at_the_checks_threshold():
    record = LabelRecord(case="c", check="j", output="o", label=0.8)
    assert record.passed(0.7) and not record.passed(0.9) and record.score == 0.8


def test_non_json_outputs_are_stored_in_their_json_form(tmp_path: Path):
    store = LabelStore.load(tmp_path / "l.jsonl")
    store.put(new_label("c", "j", b"\xff", "pass"))
    assert read_labels(tmp_path / "l.jsonl")[0].output == "b'\\xff'"
    assert store.get("c", "j", b"\xff") is not None


def test_a_suite_case_is_unused_by_the_store(tmp_path: Path):
    suite = Suite("s", cases=[Case("q")], path=tmp_path / "s.py")
    assert len(LabelStore.of(suite)) == 0 and not labels_path(suite).exists()


def test_two_label_sessions_on_one_suite_keep_each_others_labels(tmp_path: Path):
    path = tmp_path / "__labels__" / "s.jsonl"
    LabelStore.load(path).put(new_label("a", "j", "first", "pass"))
    ana, ben = LabelStore.load(path), LabelStore.load(path)  # both open the same file
    ana.put(new_label("b", "j", "ana's", "pass"))
    ben.put(new_label("c", "j", "ben's", "fail"))
    ana.put(new_label("a", "j", "first", "fail"))  # a relabel, after ben wrote
    on_disk = {(r.case, r.label) for r in read_labels(path)}
    assert on_disk == {("a", "fail"), ("b", "pass"), ("c", "fail")}
    assert len(ana) == 3  # the store holds what the file holds once it wrote
    # Undo in one session takes back its own label only.
    ben.restore(("c", "j", '"ben\'s"'), None)
    assert {(r.case, r.label) for r in read_labels(path)} == {("a", "fail"), ("b", "pass")}


def test_labelling_again_keeps_the_note(tmp_path: Path):
    path = tmp_path / "l.jsonl"
    store = LabelStore.load(path)
    store.put(new_label("a", "j", "x", "pass", note="cites the refund policy", labelled_at=5.0))
    store.put(new_label("a", "j", "x", "pass", labelled_at=9.0))  # the same label again
    (same,) = read_labels(path)
    assert same.note == "cites the refund policy" and same.labelled_at == 5.0
    previous = store.put(new_label("a", "j", "x", "fail", labelled_at=12.0))
    (changed,) = read_labels(path)
    assert changed.label == "fail" and changed.labelled_at == 12.0  # when this label was given
    assert changed.note == "cites the refund policy"
    store.put(new_label("a", "j", "x", "fail", note="wrong currency"))
    assert read_labels(path)[0].note == "wrong currency"  # a new note replaces it
    store.restore(changed.key, previous)  # undo brings back exactly what was there
    assert read_labels(path) == [same]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\r"])
def test_outputs_holding_line_separators_read_back(tmp_path: Path, separator: str):
    path = tmp_path / "l.jsonl"
    store = LabelStore.load(path)
    output = f"first{separator}second"
    store.put(new_label("c", "j", output, "pass", note=f"a{separator}b"))
    store.put(new_label("d", "j", "plain", "fail"))
    assert [r.output for r in read_labels(path)] == [output, "plain"]
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2  # any line reader agrees
    assert store.get("c", "j", output) is not None and len(LabelStore.load(path)) == 2


def test_a_file_written_with_raw_separators_still_reads(tmp_path: Path):
    path = tmp_path / "l.jsonl"
    raw = '{"schema_version": 1, "case": "c", "check": "j", "output": "a\u2028b\x85c", "label": "pass"}'
    path.write_text(raw + "\n", encoding="utf-8")
    (record,) = read_labels(path)
    assert record.output == "a\u2028b\x85c"

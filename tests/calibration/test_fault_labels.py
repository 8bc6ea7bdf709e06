"""Fault labels: a human names who failed a conversation (the user, the agent or the
environment). Their lines in the labels file, their validation, and their place in the
label queue."""

from __future__ import annotations

import json
from pathlib import Path

import pydantic
import pytest

from tui_eval.agents.messages import Conversation, RunResult, Turn
from tui_eval.calibration.label_queue import (
    FaultItem,
    LabelItem,
    fault_items,
    judged_items,
    label_progress,
    label_queue,
)
from tui_eval.calibration.labels import (
    LabelRecord,
    LabelsFileError,
    LabelStore,
    new_label,
    read_labels,
)
from tui_eval.checks.base import CheckResult
from tui_eval.checks.faults import FAULT_CHECK, Fault
from tui_eval.core.results import CaseResult, SampleResult

FAILED = CheckResult("contains", False, 0.0, "the output does not contain 'done'")


def conversation_run(*exchanges: tuple[str, str]) -> RunResult:
    turns = [Turn(i, user, reply) for i, (user, reply) in enumerate(exchanges, start=1)]
    return RunResult(output=turns[-1].reply, conversation=Conversation(turns=turns))


def conversation_sample(
    case: str, index: int, fault: Fault | None, *, status: str = "failed"
) -> SampleResult:
    run = conversation_run((f"{case} {index}: hello", "Hi."), ("Cancel it.", "Noted."))
    checks = [FAILED] if status == "failed" else [CheckResult("contains", True, 1.0)]
    return SampleResult(case, index, status, checks=checks, run=run, fault=fault)


def test_a_fault_label_is_a_line_with_the_fault_check_and_a_party(tmp_path: Path):
    path = tmp_path / "__labels__" / "shop.jsonl"
    store = LabelStore.load(path)
    run = conversation_run(("Cancel A-17.", "Which order?"), ("A-17.", "Noted."))
    store.put(new_label("conv", FAULT_CHECK, "Noted.", "agent", run=run, checks=[FAILED]))
    (line,) = (json.loads(text) for text in path.read_text().splitlines())
    assert line["check"] == "fault" and line["label"] == "agent" and line["output"] == "Noted."
    assert [t["user"] for t in line["run"]["conversation"]["turns"]] == ["Cancel A-17.", "A-17."]
    # What the reviewer reads beside the transcript: the checks that failed.
    assert line["checks"][0]["reason"] == "the output does not contain 'done'"
    (record,) = read_labels(path)
    assert record == next(iter(store))
    assert record.party == "agent" and record.score is None and not record.passed()
    assert record.run is not None and record.run.conversation == run.conversation


@pytest.mark.parametrize(
    ("check", "label", "problem"),
    [
        ("fault", "pass", "a fault label names who failed the conversation"),
        ("fault", 0.5, "a fault label names who failed the conversation"),
        ("llm_judge", "user", "only the 'fault' check takes it"),
        ("fault", "customer", "label"),
    ],
)
def test_party_names_are_labels_of_the_fault_check_only(
    tmp_path: Path, check: str, label: object, problem: str
):
    with pytest.raises(pydantic.ValidationError, match=problem):
        new_label("c", check, "o", label)  # type: ignore[arg-type]
    path = tmp_path / "l.jsonl"
    good = '{"schema_version": 1, "case": "c", "check": "fault", "output": 0, "label": "user"}'
    bad = {"schema_version": 1, "case": "c", "check": check, "output": 1, "label": label}
    path.write_text(good + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(LabelsFileError) as caught:
        read_labels(path)
    message = str(caught.value)
    assert str(path) in message and "line 2" in message and problem in message


def test_a_file_with_judge_and_fault_labels_reads_and_old_lines_keep_their_identity(
    tmp_path: Path,
):
    path = tmp_path / "l.jsonl"
    old = (
        '{"schema_version": 1, "case": "c", "check": "llm_judge", "output": "hi", '
        '"label": "fail", "labeler": null, "labelled_at": null}'
    )
    fault = '{"schema_version": 1, "case": "c", "check": "fault", "output": "hi", "label": "user"}'
    path.write_text(old + "\n" + fault + "\n")
    judged, blamed = read_labels(path)
    assert judged.label == "fail" and judged.party is None and not judged.passed()
    assert blamed.party == "user" and blamed.run is None
    store = LabelStore.load(path)
    assert store.get("c", "llm_judge", "hi") == judged
    assert store.get("c", FAULT_CHECK, "hi") == blamed
    store.put(new_label("c", "llm_judge", "hi", "pass"))  # relabelling keeps both lines
    assert [r.label for r in read_labels(path)] == ["pass", "user"]


def test_two_conversations_ending_alike_are_two_fault_labels(tmp_path: Path):
    store = LabelStore.load(tmp_path / "l.jsonl")
    first = conversation_run(("Cancel A-17.", "Noted."))
    second = conversation_run(("Cancel A-18.", "Noted."))
    store.put(new_label("conv", FAULT_CHECK, "Noted.", "agent", run=first))
    store.put(new_label("conv", FAULT_CHECK, "Noted.", "user", run=second))
    assert [r.label for r in read_labels(store.path)] == ["agent", "user"]
    # The same conversation again (as read back from a file) is the same label.
    store.put(new_label("conv", FAULT_CHECK, "Noted.", "environment", run=first))
    assert [r.label for r in read_labels(store.path)] == ["environment", "user"]
    assert len(LabelStore.load(store.path)) == 2


def test_the_queue_holds_the_failed_conversations_faults_after_the_judged_outputs(
    tmp_path: Path,
):
    judged = CheckResult("llm_judge", False, 0.4, "meh", threshold=0.5)
    reviewed = Fault("user", 1, "stopped early", "reviewer")
    ruled = Fault("environment", 2, "the tool failed", "rule")
    cases = [
        CaseResult("ruled", [conversation_sample("ruled", 0, ruled)]),
        CaseResult(
            "reviewed",
            [
                conversation_sample("reviewed", 0, reviewed),
                conversation_sample("reviewed", 1, None),
            ],
        ),
        CaseResult(
            "judged",
            [SampleResult("judged", 0, "failed", checks=[judged], run=RunResult(output="x"))],
        ),
        CaseResult("passed", [conversation_sample("passed", 0, None, status="passed")]),
        # An error is always the rules' (the agent, the user or a model raised): not queued.
        CaseResult(
            "errored",
            [conversation_sample("errored", 0, Fault("agent", 1, "raised"), status="error")],
        ),
    ]
    faults = fault_items(cases)
    assert [(i.case, i.sample_index) for i in faults] == [("ruled", 0), ("reviewed", 0)]
    store = LabelStore(tmp_path / "l.jsonl")
    queue = label_queue(cases, store)
    assert [(type(i), i.case) for i in queue] == [
        (LabelItem, "judged"),
        (FaultItem, "reviewed"),  # the reviewer's calls before the rules'
        (FaultItem, "ruled"),
    ]
    item = queue[1]
    assert isinstance(item, FaultItem) and item.fault is reviewed
    record = item.label("agent", note="it never asked")
    assert record.check == FAULT_CHECK and record.checks == [FAILED] and record.run is not None
    store.put(record)
    assert store.find(item.key) == record
    assert [i.case for i in label_queue(cases, store)] == ["judged", "ruled", "reviewed"]
    everything = [*judged_items(cases), *faults]
    assert str(label_progress(everything, store)) == (
        "0 of 1 judged sample labelled · 1 of 2 conversation faults labelled"
    )
    assert str(label_progress(faults, store)) == "1 of 2 conversation faults labelled"


def test_a_fault_record_without_a_run_still_has_an_identity():
    record = LabelRecord(case="c", check=FAULT_CHECK, output="o", label="environment")
    assert record.key == ("c", FAULT_CHECK, '"o"')

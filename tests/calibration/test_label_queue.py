"""The label queue's order: unlabelled first, flaky cases, then the judge's closest calls."""

from __future__ import annotations

from pathlib import Path

from tui_eval.agents.messages import RunResult
from tui_eval.calibration.label_queue import judged_items, label_progress, label_queue
from tui_eval.calibration.labels import LabelStore
from tui_eval.checks.base import CheckResult
from tui_eval.core.results import CaseResult, SampleResult


def sample(case: str, index: int, score: float, threshold: float = 0.7) -> SampleResult:
    passed = score >= threshold
    check = CheckResult("llm_judge", passed, score, "r", threshold=threshold)
    plain = CheckResult("contains", True, 1.0)
    return SampleResult(
        case,
        index,
        "passed" if passed else "failed",
        checks=[plain, check],
        run=RunResult(output=f"{case} output {index}"),
    )


def test_unlabelled_flaky_and_close_calls_come_first(tmp_path: Path):
    cases = [
        CaseResult("far", [sample("far", 0, 0.1)]),
        CaseResult("close", [sample("close", 0, 0.72)]),
        CaseResult("flaky", [sample("flaky", 0, 0.9), sample("flaky", 1, 0.2)]),
        CaseResult("done", [sample("done", 0, 0.7)]),
        CaseResult("errored", [SampleResult("errored", 0, "error")]),
    ]
    store = LabelStore(tmp_path / "l.jsonl")
    assert len(judged_items(cases)) == 5  # the plain check and the errored sample are not judged
    store.put(judged_items(cases)[-1].label("pass"))  # "done" is labelled
    order = [(i.case, i.sample_index) for i in label_queue(cases, store)]
    assert order == [("flaky", 0), ("flaky", 1), ("close", 0), ("far", 0), ("done", 0)]
    assert str(label_progress(judged_items(cases), store)) == "1 of 5 judged samples labelled"


def test_progress_counts_one_sample_as_one(tmp_path: Path):
    cases = [CaseResult("only", [sample("only", 0, 0.9)])]
    store = LabelStore(tmp_path / "l.jsonl")
    assert str(label_progress(judged_items(cases), store)) == "0 of 1 judged sample labelled"

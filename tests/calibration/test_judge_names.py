"""Unnamed judges of one case are told apart, by a name that depends on the judge alone, so
their results and their labels never collide."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui_eval import Case, evaluate, llm_judge
from tui_eval.calibration.label_queue import judged_items
from tui_eval.calibration.labels import LabelStore, read_labels
from tui_eval.testing import ScriptedProvider, verdict

pytestmark = pytest.mark.anyio


def judge(rubric: str, score: float = 0.9, **kwargs) -> llm_judge:
    return llm_judge(rubric, model=ScriptedProvider.factory([verdict(score, "ok")]), **kwargs)


def names(case: Case) -> list[str]:
    return [check.name for check in case.checks]


def test_two_unnamed_judges_of_one_case_get_names_of_their_own():
    polite, correct = judge("Polite, names the capital"), judge("Correct?")
    case = Case("q", checks=[polite, correct])
    assert names(case) == ["llm_judge[Polite, names the capital]", "llm_judge[Correct?]"]
    # Stable: the same in another order, and not tied to position.
    assert names(Case("q", checks=[correct, polite])) == names(case)[::-1]
    # Alone, a judge keeps its plain name, and the object shared with a case is not renamed.
    assert names(Case("q", checks=[polite])) == ["llm_judge"] and polite.name == "llm_judge"
    # A name the user gave is kept.
    tone = judge("Polite, names the capital", name="tone")
    assert names(Case("q", checks=[tone, correct])) == ["tone", "llm_judge"]


def test_judges_alike_in_rubric_are_told_apart_too():
    long = "Answers the question asked, in one short paragraph, without jargon, and "
    first, second = judge(long + "politely"), judge(long + "in French")
    a, b = names(Case("q", checks=[first, second]))
    assert a != b and a.startswith("llm_judge[Answers the question") and len(a) < 60
    same = names(Case("q", checks=[judge("Good?", threshold=0.5), judge("Good?", threshold=0.8)]))
    assert len(set(same)) == 2
    twins = names(Case("q", checks=[judge("Good?"), judge("Good?")]))
    assert len(set(twins)) == 2


async def test_their_results_and_labels_stay_apart(tmp_path: Path):
    case = Case("q", name="c", checks=[judge("Polite?", 0.9), judge("Correct?", 0.2)])
    report = await evaluate(lambda q: "Paris", [case])
    checks = report.cases[0].samples[0].checks
    assert [(c.name, c.passed) for c in checks] == [
        ("llm_judge[Polite?]", True),
        ("llm_judge[Correct?]", False),
    ]
    store = LabelStore(tmp_path / "labels.jsonl")
    for item, value in zip(judged_items(report.cases), ("pass", "fail"), strict=True):
        store.put(item.label(value))
    labels = read_labels(tmp_path / "labels.jsonl")
    assert [(r.check, r.label) for r in labels] == [
        ("llm_judge[Polite?]", "pass"),
        ("llm_judge[Correct?]", "fail"),
    ]

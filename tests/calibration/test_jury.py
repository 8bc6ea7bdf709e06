"""Juries: `llm_judge(rubric, model=[m1, m2, m3], aggregate=...)`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.calibration.judge_server import JudgeServer
from tui_eval import Case, Suite, calibrate, evaluate, llm_judge
from tui_eval.agents.providers.openai import OpenAIProvider
from tui_eval.agents.providers.scripted import ScriptedProvider, text
from tui_eval.calibration.labels import LabelStore, new_label
from tui_eval.checks.judge import verdict_reply
from tui_eval.report.report import render_summary

pytestmark = pytest.mark.anyio


def jury(server: JudgeServer, aggregate: str = "majority") -> llm_judge:
    models = [OpenAIProvider(name, base_url=server.url) for name in ("a", "b", "wrong-c")]
    return llm_judge("Is it good?", model=models, aggregate=aggregate, threshold=0.5)


async def test_a_jury_with_one_judge_always_wrong_passes_what_the_other_two_pass():
    with JudgeServer() as server:
        cases = [Case(f"q{i}", name=f"c{i}", checks=[jury(server)]) for i in range(6)]
        answers = {f"q{i}": ("GOOD" if i % 2 else "bad") for i in range(6)}
        report = await evaluate(lambda q: answers[q], cases)
    assert [c.passed for c in report.cases] == [i % 2 == 1 for i in range(6)]
    check = report.cases[1].samples[0].checks[0]
    assert [(v.judge, v.passed, v.score) for v in check.verdicts or []] == [
        ("openai:a", True, 0.9),
        ("openai:b", True, 0.9),
        ("openai:wrong-c", False, 0.1),
    ]
    assert check.reason.startswith("2 of 3 judges passed (majority): openai:a: pass 0.90")
    assert server.requests == {"a": 6, "b": 6, "wrong-c": 6}
    failing = render_summary(report)
    assert "openai:wrong-c: pass 0.80" in failing  # every verdict is shown, the dissent too


async def test_mean_and_min_aggregates():
    def judges(*scores: float) -> list[ScriptedProvider]:
        return [
            ScriptedProvider([text(verdict_reply(s, "r"))], name=f"j{i}")
            for i, s in enumerate(scores)
        ]

    mean = llm_judge("r", model=judges(0.9, 0.9, 0.3), aggregate="mean", threshold=0.6)
    low = llm_judge("r", model=judges(0.9, 0.9, 0.3), aggregate="min", threshold=0.6)
    report = await evaluate(
        lambda q: "x", [Case("q", name="mean", checks=[mean]), Case("q", name="min", checks=[low])]
    )
    by_name = {c.name: c.samples[0].checks[0] for c in report.cases}
    assert by_name["mean"].passed and by_name["mean"].score == pytest.approx(0.7)
    assert not by_name["min"].passed and by_name["min"].score_text == "score 0.30 < 0.60"
    assert "min (score 0.30 < 0.60)" not in render_summary(report)
    assert "llm_judge (score 0.30 < 0.60)" in render_summary(report)


async def test_a_judge_without_a_valid_verdict_counts_as_failing():
    broken = ScriptedProvider([text("not json")], name="broken")
    good = [ScriptedProvider([text(verdict_reply(0.9, "ok"))], name=f"g{i}") for i in range(1)]
    check = llm_judge("r", model=[*good, broken], aggregate="majority")
    report = await evaluate(lambda q: "x", [Case("q", checks=[check])])
    result = report.cases[0].samples[0].checks[0]
    assert not result.passed  # 1 of 2 is no majority
    assert result.verdicts is not None and result.verdicts[1].score is None


async def test_calibration_reports_the_jurys_alpha_and_each_judges_kappa(tmp_path: Path):
    with JudgeServer() as server:
        suite = Suite(
            "s", cases=[Case("q", name="c", checks=[jury(server)])], path=tmp_path / "s.py"
        )
        store = LabelStore.of(suite)
        for i in range(12):
            good = i % 3 != 0
            store.put(
                new_label(
                    "c", "llm_judge", f"{'GOOD' if good else 'bad'} {i}", "pass" if good else "fail"
                )
            )
        calibration = await calibrate(suite)
        assert server.requests == {"a": 12, "b": 12, "wrong-c": 12}  # one call per judge
    assert calibration.kappa == 1.0  # the majority is right every time
    assert set(calibration.judges) == {"openai:a", "openai:b", "openai:wrong-c"}
    assert calibration.judges["openai:a"].kappa == 1.0
    wrong = calibration.judges["openai:wrong-c"]
    assert wrong.agreement == 0.0 and wrong.kappa < 0
    assert calibration.judge_requests == 36
    assert calibration.judges_alpha is not None and calibration.judges_alpha < 0.2
    assert "Krippendorff's α" in calibration.summary()


async def test_juries_with_different_members_are_each_measured_on_what_they_judged(
    tmp_path: Path,
):
    with JudgeServer() as server:

        def panel(*names: str) -> llm_judge:
            models = [OpenAIProvider(name, base_url=server.url) for name in names]
            return llm_judge("Is it good?", model=models, threshold=0.5)

        suite = Suite(
            "s",
            cases=[
                Case("q", name="x", checks=[panel("a", "b", "wrong-c")]),
                Case("q", name="y", checks=[panel("b", "d")]),
            ],
            path=tmp_path / "s.py",
        )
        store = LabelStore.of(suite)
        for case, count in (("x", 6), ("y", 4)):
            for i in range(count):
                good = i % 2 == 0
                output = f"{'GOOD' if good else 'bad'} {case}{i}"
                store.put(new_label(case, "llm_judge", output, "pass" if good else "fail"))
        calibration = await calibrate(suite)
    assert set(calibration.judges) == {"openai:a", "openai:b", "openai:wrong-c", "openai:d"}
    assert calibration.judges["openai:b"].n == 10  # on both juries
    assert calibration.judges["openai:a"].n == calibration.judges["openai:wrong-c"].n == 6
    assert calibration.judges["openai:d"].n == 4 and calibration.judges["openai:d"].kappa == 1.0
    assert calibration.judges["openai:wrong-c"].agreement == 0.0
    assert calibration.judges_alpha is not None and "openai:d" in calibration.summary()

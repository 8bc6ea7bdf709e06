"""`calibrate()` for the fault reviewer: it is asked again on every labelled conversation
the rules do not decide (the agent never), and its κ over the three parties is
scikit-learn's; `tui-eval calibrate` reports it, writes it as JSON and gates on it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.calibration.conversation_suite import (
    HUMAN,
    REVIEWED,
    calls,
    load_suite,
    write_suite,
)
from tests.lazy import lazy
from tui_eval import ScriptedUser, Suite, calibrate, evaluate
from tui_eval.calibration.calibrate import CalibrationError
from tui_eval.calibration.label_queue import fault_items, judged_items
from tui_eval.calibration.labels import LabelStore, new_label
from tui_eval.checks.faults import FAULT_CHECK, PARTIES
from tui_eval.cli.commands import main
from tui_eval.core.cases import Case

pytestmark = pytest.mark.anyio

metrics = lazy("sklearn.metrics")

RULED = ["user", "agent"]
"""The human's labels of the two conversations the rules decide (`rule 0`, `rule 1`)."""

JUDGE_HUMAN = {"conv 0": "pass", "conv 1": "fail", "rule 0": "fail", "rule 1": "pass"}
"""Labels of the `llm_judge` (judged suites): it passes `conv *`, fails `rule *`."""


async def label_run(path: Path, *, judged: bool = False) -> None:
    """Run the suite and label every failed conversation's fault (and, when `judged`, some
    judged outputs), as a person in the label queue would."""
    suite = load_suite(path)
    report = await evaluate(suite.agent, suite.cases, settings=suite.settings)
    store = LabelStore.of(suite)
    human = dict(
        zip([f"conv {i}" for i in range(8)] + ["rule 0", "rule 1"], HUMAN + RULED, strict=True)
    )
    items = fault_items(report.cases)
    assert sorted(item.case for item in items) == sorted(human)
    for item in items:
        store.put(item.label(human[item.case]))  # type: ignore[arg-type]
    if judged:
        for judged_item in judged_items(report.cases):
            if judged_item.case in JUDGE_HUMAN:
                store.put(judged_item.label(JUDGE_HUMAN[judged_item.case]))  # type: ignore[arg-type]


async def test_the_reviewers_kappa_is_scikit_learns_over_the_three_parties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = write_suite(tmp_path, monkeypatch)
    await label_run(path)
    reviews, agent_calls = calls(tmp_path, "reviews.txt"), calls(tmp_path, "agent_calls.txt")
    calibration = await calibrate(path)
    # The reviewer is asked once per conversation the rules leave open; the agent never.
    assert calls(tmp_path, "reviews.txt") == reviews + 8
    assert calls(tmp_path, "agent_calls.txt") == agent_calls
    fault = calibration.by_check[FAULT_CHECK]
    assert calibration.kind == fault.kind == "fault"  # only fault labels: they are the figures
    assert calibration.kappa == fault.kappa and calibration.n == fault.n == 8
    assert fault.kappa == pytest.approx(metrics.cohen_kappa_score(HUMAN, REVIEWED), abs=1e-12)
    assert fault.agreement == pytest.approx(5 / 8)
    matrix = metrics.confusion_matrix(HUMAN, REVIEWED, labels=list(PARTIES))
    assert fault.party_confusion == {
        human: {reviewer: int(matrix[i][j]) for j, reviewer in enumerate(PARTIES)}
        for i, human in enumerate(PARTIES)
    }
    # The two conversations the rules blamed are not the reviewer's: left out, and said.
    assert [r.record.case for r in fault.rule_decided] == ["rule 0", "rule 1"]
    assert all(r.fault.by == "rule" for r in fault.rule_decided)
    assert "2 labelled conversations left out: the rules decided them" in calibration.summary()
    disagreements = [
        (d.record.case, d.record.label, d.fault.party) for d in fault.reviewer_disagreements
    ]
    assert disagreements == [
        ("conv 2", "agent", "user"),
        ("conv 5", "user", "agent"),
        ("conv 7", "agent", "environment"),
    ]
    assert calibration.judge_requests == 8 and not calibration.errors
    assert calibration.disagreements == []  # the judges' list: no judge was calibrated


async def test_judges_and_the_reviewer_are_calibrated_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = write_suite(tmp_path, monkeypatch, judged=True)
    await label_run(path, judged=True)
    calibration = await calibrate(path)
    assert calibration.kind == "judge" and calibration.n == len(JUDGE_HUMAN)
    human = [JUDGE_HUMAN[d.record.case] == "pass" for d in calibration.judged]
    judge = [d.judge.passed for d in calibration.judged]
    assert judge == [True, True, False, False]
    assert calibration.kappa == pytest.approx(metrics.cohen_kappa_score(human, judge))
    assert set(calibration.by_check) == {"llm_judge", FAULT_CHECK}
    fault = calibration.by_check[FAULT_CHECK]
    assert fault.kappa == pytest.approx(metrics.cohen_kappa_score(HUMAN, REVIEWED), abs=1e-12)
    summary = calibration.summary()
    assert "fault reviewer: 8 labelled conversations" in summary
    only = await calibrate(path, check=FAULT_CHECK)
    assert only.kind == "fault" and only.kappa == fault.kappa
    judges_only = await calibrate(path, check="llm_judge")
    assert judges_only.kind == "judge" and FAULT_CHECK not in judges_only.by_check


def test_the_cli_reports_the_reviewers_kappa_as_json_and_gates_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import anyio

    path = write_suite(tmp_path, monkeypatch, judged=True)
    anyio.run(lambda: label_run(path, judged=True))
    kappa = metrics.cohen_kappa_score(HUMAN, REVIEWED)  # 0.41
    judge_kappa = 0.0  # human pass, fail, fail, pass against judge pass, pass, fail, fail
    out = tmp_path / "fault.json"
    assert main(["calibrate", str(path), "--check", "fault", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    document = json.loads(out.read_text())
    assert document["kind"] == "fault" and document["n"] == 8
    assert document["kappa"] == pytest.approx(kappa, abs=1e-12)
    assert document["party_confusion"]["agent"] == {"user": 1, "agent": 2, "environment": 1}
    assert len(document["rule_decided"]) == 2 and document["rule_decided"][0]["by"] == "rule"
    assert [d["case"] for d in document["reviewer_disagreements"]] == ["conv 2", "conv 5", "conv 7"]
    assert document["by_check"]["fault"]["kappa"] == document["kappa"]
    assert f"κ {kappa:.2f}" in printed and "conv 5 · fault: human user, reviewer agent" in printed
    # κ over three parties has its interval too: it holds κ, and eight labels leave it wide.
    low, high = document["kappa_ci"]
    assert -1.0 <= low < kappa < high <= 1.0 and high - low > 0.5
    assert f"(95% CI {low:.2f} to {high:.2f})" in printed
    # --min-kappa gates the reviewer's κ.
    assert main(["calibrate", str(path), "--check", "fault", "--min-kappa", "0.4"]) == 0
    assert main(["calibrate", str(path), "--check", "fault", "--min-kappa", "0.5"]) == 1
    assert "failing: the fault reviewer's κ below --min-kappa 0.5" in capsys.readouterr().out
    # With the judges too: each κ is gated, the judge's and the reviewer's.
    everything = tmp_path / "all.json"
    assert main(["calibrate", str(path), "--json", str(everything)]) == 0
    document = json.loads(everything.read_text())
    assert document["kind"] == "judge"
    assert document["kappa"] == pytest.approx(judge_kappa, abs=1e-12)
    assert document["by_check"]["fault"]["kappa"] == pytest.approx(kappa, abs=1e-12)
    capsys.readouterr()
    assert main(["calibrate", str(path), "--min-kappa", "-0.1"]) == 0
    assert main(["calibrate", str(path), "--min-kappa", "0.2"]) == 1
    printed = capsys.readouterr().out
    assert "failing: κ below --min-kappa 0.2" in printed
    assert "fault reviewer's κ below" not in printed  # 0.41 reaches 0.2
    assert main(["calibrate", str(path), "--check", "llm_judge", "--min-kappa", "-0.1"]) == 0


async def test_another_reviewer_model_and_a_reviewer_without_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    path = write_suite(tmp_path, monkeypatch)
    await label_run(path)
    reviews = calls(tmp_path, "reviews.txt")
    always = await calibrate(path, judge="python:reviewers:always_agent")
    assert calls(tmp_path, "reviews.txt") == reviews  # the suite's reviewer was not asked
    assert {r.fault.party for r in always.reviewed} == {"agent"}
    assert math.isnan(always.kappa) and always.kappa_undefined == (
        "the reviewer named one party only"
    )
    assert always.failing_kappas(-1.0)  # an undefined κ fails a gate closed
    garbage = await calibrate(path, judge="python:reviewers:garbage")
    assert garbage.n == 0 and len(garbage.errors) == 8 and not garbage.passes()
    assert "not a valid verdict" in garbage.errors[0].error
    with pytest.raises(CalibrationError, match="one model"):
        await calibrate(path, judge=["python:reviewers:garbage", "python:reviewers:garbage"])
    code = await _cli(["calibrate", str(path), "--judge", "python:reviewers:garbage"])
    assert code == 1
    printed = capsys.readouterr().out
    assert "failing: the reviewer gave no verdict on 8 labelled conversations" in printed
    assert "reviewer error: conv 0 · fault: " in printed


async def _cli(args: list[str]) -> int:
    import anyio.to_thread

    return await anyio.to_thread.run_sync(main, args)


async def test_fault_labels_without_a_reviewer_or_a_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("TUI_EVAL_JUDGE_MODEL", raising=False)
    path = write_suite(tmp_path, monkeypatch)
    await label_run(path)
    suite = load_suite(path)
    records = list(LabelStore.of(suite))
    no_reviewer = Suite(
        "shop",
        cases=[Case(c.input, name=c.label, user=ScriptedUser(["Thanks."])) for c in suite.cases],
        path=path,
    )
    with pytest.raises(CalibrationError, match="no reviewer") as caught:
        await calibrate(no_reviewer, labels=records)
    assert "--judge" in str(caught.value) and "TUI_EVAL_JUDGE_MODEL" in str(caught.value)
    not_a_conversation = Suite("shop", cases=[Case("q", name="conv 0")], path=path)
    hand_written = new_label("conv 0", FAULT_CHECK, "o", "user")  # no stored conversation
    skipped = await calibrate(not_a_conversation, labels=[records[0], hand_written])
    assert skipped.n == 0 and len(skipped.skipped) == 2
    assert any("not a conversation" in s for s in skipped.skipped)
    assert any("no stored conversation" in s for s in skipped.skipped)

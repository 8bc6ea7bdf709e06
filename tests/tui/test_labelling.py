"""Labelling in the app: blind single-key labels, undo, the queue's order, and the
Calibration screen showing the CLI's κ."""

from __future__ import annotations

import json

import anyio
import anyio.to_thread
import pytest
from textual.widgets import DataTable, Static

from tui_eval.calibration.labels import read_labels
from tui_eval.cli.commands import main
from tui_eval.service.store import RunHistory
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.calibration import CalibrationScreen, VerdictsScreen
from tui_eval.tui.screens.labels import LabelScreen
from tui_eval.tui.screens.sample import SampleScreen

from .test_app import wait_until_done

pytestmark = pytest.mark.anyio

SUITE = """\
from tui_eval import Case, Suite, llm_judge
from tui_eval.agents.messages import Completion
from tui_eval.agents.providers.scripted import ScriptedProvider
from tui_eval.checks.judge import verdict_reply


def verdict(messages):
    answer = messages[-1].content.split("<answer>")[-1]
    score = 0.9 if "GOOD" in answer else (0.55 if "meh" in answer else 0.3)
    return Completion(content=verdict_reply(score, "judged by rule"))


def judge():
    return ScriptedProvider([verdict], name="rule-judge")


def agent(question):
    n = int(question.split()[-1])
    return ("GOOD" if n % 3 else "meh" if n % 2 else "bad") + f" answer {n}"


suite = Suite(
    "labelled",
    agent=agent,
    cases=[
        Case(f"question {i}", name=f"case {i:02d}", checks=[llm_judge("Good?", model=judge, threshold=0.5)])
        for i in range(12)
    ],
)
"""


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


@pytest.fixture
def suite_file(tmp_path):
    path = tmp_path / "suites" / "labelled.py"
    path.parent.mkdir()
    path.write_text(SUITE)
    return path


async def open_label_queue(pilot, app) -> LabelScreen:
    await pilot.press("enter")
    await wait_until_done(pilot, app.screen)
    await pilot.press("l")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, LabelScreen)
    return screen


async def test_label_ten_blind_undo_one_quit_and_reopen_keeps_nine(suite_file, tmp_path):
    labels = suite_file.parent / "__labels__" / "labelled.jsonl"
    app = make_app([str(suite_file)], history=RunHistory(tmp_path / "history"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_label_queue(pilot, app)
        assert "0 of 12 judged samples labelled" in text_of(screen, "#label-progress")
        # The closest calls come first: "meh" scores 0.55 against a bar of 0.50.
        assert "meh" in str(screen.item.output)
        for n in range(10):
            item = screen.item
            verdict = text_of(screen, "#label-verdict")
            assert "hidden until you label" in verdict  # blind
            assert "judged by rule" not in verdict and "score 0." not in verdict
            human_pass = "GOOD" in str(item.output) or (n == 0)  # one deliberate dissent
            await pilot.press("y" if human_pass else "x")
            assert len(read_labels(labels)) == n + 1  # written at once
            # The verdict shows once labelled, for the output just labelled.
            last = text_of(screen, "#label-last")
            assert item.case in last and "judge: " in last
        assert "10 of 12 judged samples labelled" in text_of(screen, "#label-progress")
        await pilot.press("u")
        assert "9 of 12 judged samples labelled" in text_of(screen, "#label-progress")
        await pilot.press("q", "q")
    assert len(read_labels(labels)) == 9
    reopened = make_app([str(suite_file)], history=RunHistory(tmp_path / "history2"))
    async with reopened.run_test(size=(120, 40)) as pilot:
        screen = await open_label_queue(pilot, reopened)
        assert "9 of 12 judged samples labelled" in text_of(screen, "#label-progress")
        assert screen.store.get(screen.item.case, "llm_judge", screen.item.output) is None
    assert len(read_labels(labels)) == 9


async def test_calibration_screen_shows_the_clis_kappa(suite_file, tmp_path):
    app = make_app([str(suite_file)], history=RunHistory(tmp_path / "history"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_label_queue(pilot, app)
        for n in range(8):
            judge_passed = screen.item.check.passed
            await pilot.press("y" if judge_passed != (n < 2) else "x")  # 2 dissents
        await pilot.press("c")
        calibration_screen = app.screen
        assert isinstance(calibration_screen, CalibrationScreen)
        with anyio.fail_after(20):
            while calibration_screen.calibration is None:
                await pilot.pause(0.05)
        await pilot.pause()
        calibration = calibration_screen.calibration
        out = tmp_path / "calibration.json"
        code = await anyio.to_thread.run_sync(
            main, ["calibrate", str(suite_file), "--json", str(out)]
        )
        assert code == 0
        document = json.loads(out.read_text())
        assert calibration.kappa == pytest.approx(document["kappa"], abs=1e-12)
        assert calibration.n == document["n"] == 8
        summary = text_of(calibration_screen, "#calibration-summary")
        assert f"κ {document['kappa']:.2f}" in summary
        assert len(calibration.disagreements) == len(document["disagreements"]) >= 1
        table = calibration_screen.query_one("#disagreements", DataTable)
        assert table.row_count == len(calibration.disagreements)
        await pilot.press("enter")
        verdicts = app.screen
        assert isinstance(verdicts, VerdictsScreen)
        shown = str(verdicts.query_one(".tab-body", Static).render())
        assert "Human:" in shown and "judge: pass" in shown and "judged by rule" in shown


async def test_the_sample_screen_labels_its_own_judged_check(suite_file, tmp_path):
    labels = suite_file.parent / "__labels__" / "labelled.jsonl"
    app = make_app([str(suite_file)], history=RunHistory(tmp_path / "history"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("enter")  # the Case screen
        await pilot.pause()
        await pilot.press("enter")  # its sample
        await pilot.pause()
        assert isinstance(app.screen, SampleScreen)
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, LabelScreen) and len(app.screen.items) == 1
        await pilot.press("4")  # a score label: 0.8
        await pilot.pause()
    (record,) = read_labels(labels)
    assert record.label == 0.8 and record.run is not None and record.labeler


async def test_b_shows_the_judge_on_the_output_on_screen_only(suite_file, tmp_path):
    app = make_app([str(suite_file)], history=RunHistory(tmp_path / "history"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_label_queue(pilot, app)
        await pilot.press("b")
        assert "judge: " in text_of(screen, "#label-verdict")
        await pilot.press("b")  # and hides it again
        assert "hidden until you label" in text_of(screen, "#label-verdict")
        await pilot.press("b", "y")
        for _ in range(3):  # every later output is blind again
            assert "hidden until you label" in text_of(screen, "#label-verdict")
            assert "judged by rule" not in text_of(screen, "#label-verdict")
            await pilot.press("x")


async def test_the_score_keys_read_as_one_range(suite_file, tmp_path):
    from tui_eval.tui.screens.help import screen_keys
    from tui_eval.tui.widgets.footer import KeyFooter

    app = make_app([str(suite_file)], history=RunHistory(tmp_path / "history"))
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await open_label_queue(pilot, app)
        await pilot.pause()
        shown = {(key.display, key.description) for key in screen.query_one(KeyFooter).shown}
        assert ("0–5", "Score") in shown
        assert not any(description.startswith("Score ") for _, description in shown)
        keys = {
            keys: what for keys, what, _ in screen_keys(screen)
        }  # what `?` lists: each key with what it gives
        assert keys["0"] == "Score 0" and keys["1"] == "Score 0.2" and keys["5"] == "Score 1"

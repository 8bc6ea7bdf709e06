"""Fault labels in the app: the label queue shows a failed conversation's transcript, hides
the reviewer's verdict until labelled (blind), takes `h`/`a`/`e` for the user, the agent and
the environment, writes the labels file at once, and the Calibration screen reports the
reviewer's κ."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from textual.widgets import DataTable, Static

from tests.calibration.conversation_suite import HUMAN, REVIEWED, write_suite
from tests.lazy import lazy
from tui_eval.calibration.label_queue import FaultItem
from tui_eval.calibration.labels import read_labels
from tui_eval.service.store import RunHistory
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.calibration import CalibrationScreen
from tui_eval.tui.screens.labels import LabelScreen
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.widgets.footer import KeyFooter

from .test_app import wait_until_done

pytestmark = pytest.mark.anyio

metrics = lazy("sklearn.metrics")

KEYS = {"user": "h", "agent": "g", "environment": "e"}


def text_of(screen: LabelScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def footer_keys(screen: LabelScreen) -> set[str]:
    return {key.display for key in screen.query_one(KeyFooter).shown}


async def open_label_queue(pilot, app) -> LabelScreen:
    await pilot.press("enter")
    await wait_until_done(pilot, app.screen)
    await pilot.press("l")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, LabelScreen)
    return screen


async def test_label_faults_blind_then_the_calibration_screen_shows_the_reviewers_kappa(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = write_suite(tmp_path, monkeypatch)
    labels = path.parent / "__labels__" / "shop.jsonl"
    app = make_app([str(path)], history=RunHistory(tmp_path / "history"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_label_queue(pilot, app)
        assert "0 of 10 conversation faults labelled" in text_of(screen, "#label-progress")
        item = screen.item
        assert isinstance(item, FaultItem) and item.case == "conv 0"
        shown = text_of(screen, "#label-output")
        assert "[turn 1] user: order 0 (blame=user)" in shown  # the transcript
        assert "[turn 2] agent: Noted: Thanks." in shown
        verdict = text_of(screen, "#label-verdict")
        assert "hidden until you label" in verdict and "the transcript says" not in verdict
        await pilot.pause()
        keys = footer_keys(screen)
        assert {"h", "g", "e"} <= keys and not {"y", "x", "0–5"} & keys
        await pilot.press("b")  # show the reviewer's verdict on this conversation
        verdict = text_of(screen, "#label-verdict")
        assert "reviewer: user at turn 1 (by reviewer)" in verdict
        assert "the transcript says user" in verdict
        await pilot.press("b")
        for n, party in enumerate(HUMAN):
            assert screen.item.case == f"conv {n}"
            assert "hidden until you label" in text_of(screen, "#label-verdict")
            await pilot.press(KEYS[party])
            records = read_labels(labels)
            assert len(records) == n + 1  # written at once
            assert (records[-1].check, records[-1].label) == ("fault", party)
            last = text_of(screen, "#label-last")
            assert f"conv {n}" in last and f"reviewer: {REVIEWED[n]}" in last
            assert ("DISAGREE" in last) == (party != REVIEWED[n])
        # The two conversations the rules decided come last.
        assert screen.item.case == "rule 0" and screen.item.fault.by == "rule"
        assert "8 of 10 conversation faults labelled" in text_of(screen, "#label-progress")
        await pilot.press("u")  # undo takes back the last fault label
        assert len(read_labels(labels)) == 7 and screen.item.case == "conv 7"
        await pilot.press("g")
        await pilot.press("c")
        calibration_screen = app.screen
        assert isinstance(calibration_screen, CalibrationScreen)
        with anyio.fail_after(20):
            while calibration_screen.calibration is None:
                await pilot.pause(0.05)
        await pilot.pause()
        kappa = metrics.cohen_kappa_score(HUMAN, REVIEWED)
        assert calibration_screen.calibration.kappa == pytest.approx(kappa, abs=1e-12)
        summary = str(calibration_screen.query_one("#calibration-summary", Static).render())
        assert f"κ {kappa:.2f}" in summary and "human \\ reviewer" in summary
        # The reviewer's disagreements are listed beside the judges' (none here).
        assert "3 disagreements" in summary, summary
        table = calibration_screen.query_one(DataTable)
        shown = [
            [str(table.get_cell_at((row, col))) for col in range(4)]
            for row in range(table.row_count)
        ]
        assert shown == [
            ["conv 2", "fault", "agent", "user at turn 1"],
            ["conv 5", "fault", "user", "agent at turn 1"],
            ["conv 7", "fault", "agent", "environment at turn 1"],
        ], shown
        table.focus()
        table.move_cursor(row=1)
        await pilot.press("enter")
        await pilot.pause()
        both = app.screen
        assert both is not calibration_screen
        text = " ".join(str(w.render()) for w in both.query(Static))
        assert "Human: user" in text and "Reviewer: agent at turn 1 (by reviewer)" in text
        assert "[turn 1] user: order 5" in text  # the transcript the reviewer read
        await pilot.press("q")
        assert app.screen is calibration_screen
    lines = [json.loads(line) for line in labels.read_text().splitlines()]
    assert [line["label"] for line in lines] == HUMAN
    assert all(line["check"] == "fault" and line["run"]["conversation"] for line in lines)


async def test_the_sample_screen_labels_its_conversations_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = write_suite(tmp_path, monkeypatch)
    labels = path.parent / "__labels__" / "shop.jsonl"
    app = make_app([str(path)], history=RunHistory(tmp_path / "history"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        # The Case screen of `conv 3`, the agent's fault by the reviewer (a case whose only
        # sample is left out as the user's fault is the Case screen's own matter).
        await pilot.press("down", "down", "down", "enter")
        await pilot.pause()
        await pilot.press("enter")  # its sample
        await pilot.pause()
        assert isinstance(app.screen, SampleScreen)
        await pilot.press("l")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabelScreen) and len(screen.items) == 1
        await pilot.press("e")
        await pilot.pause()
    (record,) = read_labels(labels)
    assert (record.case, record.check, record.label) == ("conv 3", "fault", "environment")

"""The app's words: counts agree with their nouns, and prompts say what they do."""

from __future__ import annotations

import re

import anyio
import pytest

from tui_eval import Case, Suite, contains
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.prompt import Prompt
from tui_eval.util.text import counted

from .test_app import screen_text
from .test_app_flow import wait_until_done

pytestmark = pytest.mark.anyio


def test_counted_agrees_with_its_number():
    assert [counted(n, "sample") for n in (0, 1, 2, 1200)] == [
        "0 samples",
        "1 sample",
        "2 samples",
        "1,200 samples",
    ]


async def test_no_count_of_one_takes_a_plural_noun():
    async def agent(question: str) -> str:
        if question == "raises":
            raise ValueError("no")
        if question == "slow":
            await anyio.sleep(30)
        return "ok"

    suite = Suite(
        "words",
        agent=agent,
        cases=[
            Case("raises", checks=[contains("ok")]),
            Case("slow", checks=[contains("ok")], timeout=0.05),
        ],
    )
    app = make_app(suites=[suite])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        shown = screen_text(app)
        assert "1 error" in shown and "1 timeout" in shown
        assert not re.search(r"\b1 (samples|errors|timeouts|cases)\b", shown), shown


async def test_a_long_question_wraps_in_the_number_prompt():
    from textual.app import App

    question = "How many more samples? " + "They are added under the case's own. " * 3

    class Asking(App[None]):
        def on_mount(self) -> None:
            self.push_screen(Prompt(question, default=10))

    async with Asking().run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = " ".join(" ".join(screen_text(pilot.app).split("│")).split())
        assert "under the case's own. They are added under the case's own." in shown

"""The app as a debugging loop: reopen, rerun, reload, watch, merge, review, compare samples."""

from __future__ import annotations

import anyio
import pytest

from tui_eval import Case, Suite, contains
from tui_eval.store import RunHistory
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.suites import SuitesScreen

from .test_app import wait_until_done

pytestmark = pytest.mark.anyio


def gated_suite(gate: anyio.Event, name: str = "gated", cases: int = 8) -> Suite:
    """Cases q0-q3 answer at once; the rest wait for `gate` (a run that stays live)."""

    async def agent(question: str) -> str:
        if int(question[1:]) >= 4:
            await gate.wait()
        return "ok " + question

    return Suite(
        name,
        agent=agent,
        concurrency=2,
        cases=[Case(f"q{i}", checks=[contains("ok")]) for i in range(cases)],
    )


async def test_back_to_suites_mid_run_and_enter_reopens_the_live_run(tmp_path):
    gate = anyio.Event()
    suite = gated_suite(gate)
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        first = app.screen
        assert isinstance(first, RunScreen)
        with anyio.fail_after(10):
            while first.session.state.samples_done < 2:
                await pilot.pause(0.02)
        await pilot.press("q")
        assert isinstance(app.screen, SuitesScreen)
        await pilot.press("enter")
        await pilot.pause(0.3)  # a few frames while samples stream
        again = app.screen
        assert isinstance(again, RunScreen) and again.session is first.session
        assert again.session.state.running and again.session.state.samples_done == 4
        gate.set()
        await wait_until_done(pilot, again)
        assert again.session.report is not None and not again.session.report.cancelled
        # Finished: enter still opens that run (it does not start another)...
        await pilot.press("q", "enter")
        assert app.screen.session is first.session
        # ...and `r` starts a new one.
        await pilot.press("q", "r")
        assert isinstance(app.screen, RunScreen) and app.screen.session is not first.session
        await wait_until_done(pilot, app.screen)

"""The full-output view of a huge text: keys typed fast reach the search box in order."""

from __future__ import annotations

import anyio
import pytest
from textual import events
from textual.widgets import Input

from tui_eval.report.report import Report
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.full_text import FullTextScreen
from tui_eval.tui.widgets.long_text import LongText

pytestmark = pytest.mark.anyio

HUGE = "\n".join(f"line {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(70_000))
NEEDLE_AT = len(HUGE) // 2
HUGE = HUGE[:NEEDLE_AT] + "HAYSTACK" + HUGE[NEEDLE_AT:]  # 6.5 MB, one match


def type_at_once(app, keys: list[str]) -> None:
    """Send `keys` the way a terminal does when typed faster than the app handles them:
    all queued before the first is handled."""
    for key in keys:
        char = key if len(key) == 1 else None
        if key == "slash":
            char = "/"
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)


async def settle(pilot, condition, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await pilot.pause(0.02)


async def test_keys_typed_fast_reach_the_search_box_in_order_and_find_the_match():
    app = make_app(report=Report("r", []))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = FullTextScreen(HUGE, title="huge")
        await app.push_screen(screen)
        await pilot.pause()
        box = screen.query_one("#search", Input)
        view = screen.query_one(LongText)
        type_at_once(app, ["slash", *"HAYSTACK", "enter"])
        await settle(pilot, lambda: view.match is not None)
        assert box.value == "HAYSTACK"
        assert view.match == (NEEDLE_AT, NEEDLE_AT + 8)


async def test_a_slash_typed_into_the_search_is_text():
    app = make_app(report=Report("r", []))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = FullTextScreen("a/b and a/b", title="short")
        await app.push_screen(screen)
        await pilot.pause()
        type_at_once(app, ["slash", "a", "slash", "b", "enter"])
        view = screen.query_one(LongText)
        await settle(pilot, lambda: view.match is not None)
        assert screen.query_one("#search", Input).value == "a/b"
        assert view.match == (0, 3)


async def test_a_filter_typed_fast_on_the_run_screen_keeps_every_key(tmp_path):
    from tui_eval import Case, Suite, contains
    from tui_eval.tui.screens.run import RunScreen
    from tui_eval.tui.widgets.case_table import CaseTable

    from .test_app import table_rows
    from .test_app_flow import wait_until_done

    async def agent(question: str) -> str:
        return question

    names = ["alpha/1", "alpha/2", "beta/1"]
    suite = Suite("fast", agent=agent, cases=[Case(n, checks=[contains("a")]) for n in names])
    app = make_app(suites=[suite])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until_done(pilot, screen)
        type_at_once(app, ["slash", *"alpha", "slash", "2", "enter"])
        table = screen.query_one(CaseTable)
        await settle(pilot, lambda: table.name_filter == "alpha/2" and table.has_focus)
        assert screen.query_one("#filter", Input).value == "alpha/2"
        assert list(table_rows(screen)) == ["alpha/2"]
